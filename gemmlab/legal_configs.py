"""The legal configurations of a kernel's tunables: found by assigning the tunables in order and
dropping a branch as soon as a rule whose tunables are all assigned fails; and the extremes (for
each tunable, a legal configuration at its smallest and at its largest value) that the compile and
correctness tests sweep. Both are worked out once per spec and process (spec.KernelSpec asks here:
a tunable is a spec.Param, a rule a spec.Rule)."""
from __future__ import annotations

import itertools

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


def _enumerate(params: tuple, rules: tuple) -> list[dict[str, int]]:
    """Depth-first over the tunables in order; each rule is checked once its tunables are set. The configurations
    are appended to one list (a generator passing each one up every level took a third of the time)."""
    found: list[dict[str, int]] = []

    def walk(i: int, partial: _Partial, pending: tuple):
        still = []
        for rule in pending:
            try:
                if not rule.holds(partial):
                    return
            except _Unassigned:
                still.append(rule)
        if i == len(params):
            found.append(dict(partial))
            return
        still = tuple(still)
        for value in params[i].values:
            partial[params[i].name] = value
            walk(i + 1, partial, still)
        del partial[params[i].name]

    walk(0, _Partial(), rules)
    return found


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
        # every legal configuration assigns the tunables in one order (enumerate_legal's): their values in that
        # order fill the table in one pass (a list a row took two seconds at chapter 13's 588,672)
        order = list(legal[0]) if legal else names
        table = np.fromiter(itertools.chain.from_iterable(c.values() for c in legal), dtype=np.int64,
                            count=len(legal) * len(order)).reshape(len(legal), len(order))
        table = table[:, [order.index(n) for n in names]]
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
