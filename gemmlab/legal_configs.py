"""The legal configurations of a kernel's tunables: found by assigning the tunables in order and
dropping a branch as soon as a rule whose tunables are all assigned fails; and the extremes (for
each tunable, a legal configuration at its smallest and at its largest value) that the compile and
correctness tests sweep. Both are worked out once per spec and process (spec.KernelSpec asks here:
a tunable is a spec.Param, a rule a spec.Rule)."""
from __future__ import annotations

import numpy as np

# Legal and extreme configurations, worked out once per spec and process.
_LEGAL: dict[tuple, tuple[dict[str, int], ...]] = {}
_EXTREME: dict[tuple, tuple[dict[str, int], ...]] = {}


class _Unassigned(LookupError):
    pass


class _Partial(dict):
    """Tunables assigned so far: a rule that reads one not yet assigned cannot be decided."""

    def __missing__(self, key):
        raise _Unassigned(key)

    def get(self, key, default=None):
        return self[key]


def _enumerate(params: tuple, rules: tuple):
    """Depth-first over the tunables in order; each rule is checked once its tunables are set."""
    def walk(i: int, partial: _Partial, pending: tuple):
        still = []
        for rule in pending:
            try:
                if not rule.holds(partial):
                    return
            except _Unassigned:
                still.append(rule)
        if i == len(params):
            yield dict(partial)
            return
        for value in params[i].values:
            partial[params[i].name] = value
            yield from walk(i + 1, partial, tuple(still))
        del partial[params[i].name]

    yield from walk(0, _Partial(), rules)


def enumerate_legal(key: tuple, params: tuple, rules: tuple) -> tuple[dict[str, int], ...]:
    """Every configuration of `params` (the tunables, in order) that no rule refuses, computed once per
    `key` (a spec's name and tunables: the rules come with the name) and shared (do not modify)."""
    if key not in _LEGAL:
        _LEGAL[key] = tuple(_enumerate(params, rules))
    return _LEGAL[key]


def pick_extremes(key: tuple, legal: tuple[dict[str, int], ...],
                  defaults: dict[str, int]) -> tuple[dict[str, int], ...]:
    """The defaults plus, for each tunable, the legal configuration at its smallest and at its largest
    value that differs from the defaults in the most tunables (the first of those), computed once per
    `key` and shared (do not modify)."""
    if key not in _EXTREME:
        names = list(defaults)
        table = np.array([[c[n] for n in names] for c in legal])
        # how far each legal configuration is from the defaults, in tunables that differ
        distance = (table != np.array([defaults[n] for n in names])).sum(axis=1)
        picked = [defaults]
        for column in range(len(names)):
            for value in (table[:, column].min(), table[:, column].max()):
                rows = np.flatnonzero(table[:, column] == value)
                choice = legal[rows[np.argmax(distance[rows])]]   # the first of the furthest
                if choice not in picked:
                    picked.append(choice)
        _EXTREME[key] = tuple(picked)
    return _EXTREME[key]
