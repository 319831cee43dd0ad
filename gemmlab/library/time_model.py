"""The model of a launch's time that gemmlab.matmul's plan (dispatch.py) prices its options with: a
launch's features, and the constants fitted to the record, frozen in gemmlab/fitted/. For a
configuration c of a kernel:

    compute time = launch + chain x pieces
                   + rounds x (per_tile_c x (1 + store_c x scalar) + per_step_c x K steps)
                            x (1 + ragged_kernel x checked)
    memory time  = launch + operand bytes / DRAM bandwidth        (the roofline's other side)
    time         = the larger of the two, and of FLOPs over the best rate c reached in the record

* `rounds` is the busiest SM's blocks in rounds of the blocks an SM holds; a last partial round takes
  between `alone_c` (one block alone on an SM) and a whole round, on the line between them (see
  `waves`). Chapter 11's split of a last wave is counted by the launcher's own estimate
  (spec.split_time); a tile cut along K by chapter 13's SPLIT is that many blocks, each with its
  share of the K steps.
* A configuration stands for every value of its split tunables (11's and 13's `SPLIT`): its constants are
  fitted to the timings of all its splits, and a plan prices each split. Each split is a build of its own, whose
  registers may differ (Candidate.split_builds): its rounds are counted in its own blocks per SM, and its per-tile
  and per-step costs, a round's of the configuration's own build, scaled by its blocks per SM over that build's.
* `K steps` is K per block, in the kernel's K tiles; `per_tile` is what a block costs beyond them
  (filling the pipeline, the epilogue).
* `chain` is what each piece of a split tile adds, fitted per kernel: chapter 11's pieces add into C one
  after another, and chapter 13's last piece of a tile reads every piece's partial tile, one load after
  another (`pieces` is 0 where nothing is split); `checked` is the share of tiles on a kernel's slow copy path
  (launch.Launch.fast_tiles), but no less than one of the busiest SM's blocks where any tile takes it
  (in a launch of one round, one slow tile sets the time), weighted by what the slow path costs the
  configuration's tile against its kernel's defaults' (its model's slow_weight), and `ragged_kernel` how much
  longer such a tile takes, fitted per copy path (kernels that share one share it); `scalar` is 1 where a kernel
  with a 16-byte store path stores C 4 bytes at a time (C's rows not 16-byte multiples: `scalar_stores`), and
  `store_c` what that adds to a tile's per-tile cost (its epilogue): fitted per configuration where enough of its
  rows store so, else its kernel's.

`launch`, `alone`, `chain`, `ragged`, `per_tile` and `per_step` are fitted, by least squares on
relative error, to the record's autotuner data: every configuration the chapters' sliders offer,
validated and timed at three sizes, the final chapter's per-shape search, the ladder, and the plan's
own training shapes (`record --matmul-training`, round after round). The fit is frozen into gemmlab/fitted/
(`python -m gemmlab fit` remakes it from the record, and a test holds the two in step), so a plan
needs no GPU and no compile, and the same call always gives the same plan. docs/dispatch.md says
how well the fit predicts shapes it was not fitted on, and what the record does not cover.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import identity, records, registry
from ..compile import Resources, occupancy
from ..spec import IllegalConfig, KernelSpec, Params, Problem, split_time

FITTED_DIR = Path(__file__).resolve().parents[1] / "fitted"
# A kernel that streams an operand (its model's streams: chapter 12's) is meant for the memory-bound side of the
# roofline: it is fitted, and offered, only where the shape's intensity (FLOPs per operand byte) is at
# most this many times the ridge's. Past that, a shape has reuse for tiles to exploit.
STREAMING_REACH = 2.0


class NotFitted(LookupError):
    """No usable fitted model (none shipped, damaged, or every kernel in it changed since)."""


# --- a launch's features --------------------------------------------------------------------------

# A problem every split fits: K long enough for any count of pieces, few enough tiles for any workspace
SPLIT_PROBE = Problem(256, 256, 1 << 16)


def pieces_of(spec: KernelSpec, params: Params) -> tuple[int, int]:
    """The pieces a configuration cuts tiles into: a last wave's (spec.split), every tile's (spec.k_split)."""
    return spec.split(params), spec.k_split(params, SPLIT_PROBE)


# split_tunables and split_variants by the spec's identity (a spec is not hashable): a plan asks them of every
# candidate, and each answer costs hundreds of rule checks
_SPLITS: dict[int, tuple[KernelSpec, list[str]]] = {}
_VARIANTS: dict[tuple, tuple[KernelSpec, list[dict]]] = {}


def split_tunables(spec: KernelSpec) -> list[str]:
    """The tunables that set how many pieces a tile is cut into (none for most kernels): one candidate
    configuration stands for all of their values, and the plan prices each."""
    known = _SPLITS.get(id(spec))
    if known is None or known[0] is not spec:
        d = spec.defaults
        known = _SPLITS[id(spec)] = (spec, [p.name for p in spec.params
                                            if any(pieces_of(spec, {**d, p.name: v}) != pieces_of(spec, d)
                                                   for v in p.values)])
    return list(known[1])


def unsplit(spec: KernelSpec, params: Params) -> dict:
    """The configuration with its split tunables at the value that never splits."""
    out = dict(params)
    for name in split_tunables(spec):
        out[name] = next(v for v in spec.tunable(name).values if pieces_of(spec, {**out, name: v}) == (1, 1))
    return out


def as_priced(spec: KernelSpec, params: Params) -> dict:
    """The configuration the model priced for a launch that runs its kernel's checked build (its model's
    checked_build tunables back at their defaults): what the fit's rows and candidates are keyed by."""
    swapped = registry.model(spec).checked_build
    return {**params, **{name: spec.tunable(name).default for name in swapped if name in params}}


def split_variants(spec: KernelSpec, params: Params) -> list[dict]:
    """The configuration with every legal value of its split tunables (itself alone for most kernels)."""
    key = (id(spec), tuple(sorted(params.items())))
    known = _VARIANTS.get(key)
    if known is None or known[0] is not spec:
        variants = [dict(params)]
        for name in split_tunables(spec):
            variants = [{**v, name: value} for v in variants for value in spec.tunable(name).values]
        known = _VARIANTS[key] = (spec, [v for v in variants if spec.is_legal(v)])
    return [dict(v) for v in known[1]]


def config_key(kernel: str, params: Params) -> str:
    return kernel + " " + json.dumps(dict(params), sort_keys=True)


def copy_path(spec: KernelSpec) -> str | None:
    """Which slow copy path a kernel's checked tiles take, named by the rule that says which tiles take
    it (its model's fast_tiles): kernels with one rule share one path's code. None: a kernel with one path."""
    rule = registry.model(spec).fast_tiles
    return None if rule is None else f"{rule.__module__}.{rule.__qualname__}"


def scalar_stores(spec: KernelSpec, problem: Problem, aligned: bool = True) -> float:
    """1 where the kernel stores C 4 bytes at a time though it has a 16-byte path (C's rows not 16-byte multiples,
    or C not 16-byte aligned: `aligned` false), else 0. Its tiles' epilogues then take longer, which at a small K
    is most of a tile's time: the model's `store` charges it to the per-tile cost alone."""
    return 1.0 if registry.model(spec).vector_stores and (problem.ldc % 4 or not aligned) else 0.0


def blocks_per_sm(spec: KernelSpec, params: Params, registers: int, static_smem: int, arch: str) -> int:
    res = Resources(registers, static_smem, 0, 0, 0)
    return occupancy(res, spec.threads(params), arch, spec.dynamic_smem(params)).blocks_per_sm


def features(spec: KernelSpec, params: Params, problem: Problem, sm_count: int,
              blocks_per_sm: int) -> tuple[float, float, bool, int, float, float]:
    """(w, k, lone, the pieces in a split tile's chain: 0 where none is split, the share of the busiest SM's
    blocks on the checked copy path: 0 for kernels with one path, rest) for one launch, whose time the model takes as
    fixed + waves(w, lone, rest, alone, blocks_per_sm) (a + b k): see `waves`.

    For a kernel of tiles, w is the busiest SM's whole rounds of blocks (blocks_per_sm at a time) and
    rest what its last round fills of a whole one (0: none); k is a block's K steps: a is what a block
    costs beyond its steps, b a step. A round with few blocks takes less time than a full one, as
    an SM is shared by fewer, but no less than `alone` of it. Where chapter 11's kernel splits a last
    wave, w is the launcher's own count of whole-tile times over the block slots (spec.split_time) and
    lone says every block has an SM to itself. A kernel that streams an operand (its model's streams) is paced
    by DRAM as well as by its waves: w is the megabytes of its operands, and w k its waves times a
    tile's K steps, so that a is the time per megabyte and b per step of a wave."""
    slots = sm_count * blocks_per_sm
    # a kernel that cuts every tile along K (spec.k_split) runs its pieces as tiles of their own
    tiles = spec.tiles(params, problem) * spec.k_split(params, problem)
    steps = spec.piece_steps(params, problem)
    pieces = spec.split(params)
    split = spec.split_count(params, problem, slots) if pieces > 1 else 0
    blocks = tiles + split * (pieces - 1)
    lone = blocks_per_sm > 1 and blocks <= sm_count
    code = registry.model(spec)      # the model of the kernel's code: its fast copy path, whether it streams
    checked = 1 - code.fast_tiles(params, problem) / spec.tiles(params, problem) if code.fast_tiles else 0.0
    if checked:
        # the busiest SM decides: where some tiles are checked, it runs at least one of them among its
        # blocks (one of them, in a launch of one round, decides the launch's time)
        checked = max(checked, min(1.0, slots / blocks)) * code.slow_weight(params)
    if code.streams:
        waves = split_time(tiles, steps, slots, pieces, split)
        megabytes = problem.operand_bytes / 1e6
        return megabytes, waves * steps / megabytes, lone, 0, checked, 0.0
    if split:
        return split_time(tiles, steps, slots, pieces, split), steps, lone, pieces, checked, 0.0
    rounds, last = divmod(-(-blocks // sm_count), blocks_per_sm)     # the busiest SM's blocks, in rounds
    # where every tile is cut along K, the last piece of a tile to arrive reads every piece's partial
    # tile, one load after another: a chain of k_split pieces that ends the launch
    gathered = spec.k_split(params, problem)
    return float(rounds), steps, False, gathered if gathered > 1 else 0, checked, last / blocks_per_sm


def waves(w, lone, rest, alone, per_sm):
    """The model's whole-round times of a launch, from features' w, lone and rest (numbers or arrays, and so
    may per_sm be):
    w rounds, times `alone` where every block has an SM to itself, plus a last round filled `rest` of
    the way (rest x per_sm blocks on the busiest SM). A block alone takes `alone` of a full round's
    time, per_sm of them a whole one, and the counts between lie on the line between the two: an SM
    shared by fewer blocks hides less latency, so it does not run them in their share of a round."""
    alone = np.maximum(alone, 1.0 / per_sm)          # no block runs faster than a whole SM lets it
    last = np.asarray(rest) * per_sm
    between = alone + (1.0 - alone) * (last - 1.0) / np.maximum(np.asarray(per_sm) - 1, 1)
    return w * np.where(lone, alone, 1.0) + np.where(last > 0, between, 0.0)


def fitted_path(device_name: str) -> Path:
    return FITTED_DIR / f"{records.slug(device_name)}.json"


# --- the frozen model ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    spec: KernelSpec
    params: dict
    registers: int
    static_smem: int
    per_tile_us: float
    per_step_us: float
    alone: float | None = None     # its own share of a round's time a lone block takes (None: the model's)
    best_tflops: float | None = None   # the best rate it reached in the record (None: no ceiling)
    chain_us: float | None = None  # its own cost per piece of a split tile (None: the model's)
    store: float | None = None     # its own per-tile cost added by 4-byte stores of C (None: its kernel's)
    # (the values of its split tunables, registers, static shared memory) of each split's own build: a split
    # compiles other code (the pieces' partial tiles), so its registers, and the blocks an SM holds, may differ
    split_builds: tuple = ()

    def build(self, params: Params) -> tuple[int, int]:
        """(registers, static shared memory) of the build that runs `params`, one of its split variants."""
        if not self.split_builds:
            return self.registers, self.static_smem
        values = tuple(params[name] for name in split_tunables(self.spec))
        return next(((regs, smem) for v, regs, smem in self.split_builds if v == values),
                    (self.registers, self.static_smem))


@dataclass(frozen=True)
class Model:
    path: Path
    device: dict
    date: str
    launch_us: float
    alone: float
    chain_us: float                # per piece of a split tile, the pieces adding into C in turn
    ragged: float                  # a tile on the checked copy path takes 1 + ragged times as long
    candidates: tuple[Candidate, ...]
    dropped: tuple[str, ...]       # kernels left out: their code changed since the fit
    ragged_by_kernel: dict = dataclasses.field(default_factory=dict)   # a kernel's own `ragged`, where fitted
    chain_by_kernel: dict = dataclasses.field(default_factory=dict)    # a kernel's own `chain`, where it has one
    store_by_kernel: dict = dataclasses.field(default_factory=dict)    # per-tile cost added by 4-byte stores of C

    @property
    def label(self) -> str:
        return f"fitted to the record of {self.device['name']} ({self.date})"


def _candidate(path: Path, i: int, c) -> Candidate:
    """Candidate number `i` of the fitted model in `path`, checked: NotFitted naming it where its kernel, a
    tunable or a figure is not one this gemmlab can use (a damaged or hand-edited file), not an error later."""
    def refuse(why: str) -> NotFitted:
        label = f"{c.get('kernel')} {json.dumps(c.get('params'))}" if isinstance(c, dict) else repr(c)
        return NotFitted(f"the fitted model {path}: candidate {i} ({label}) {why}; restore the file, or remake it "
                         f"from the record with `python -m gemmlab fit`")
    if not isinstance(c, dict):
        raise refuse("is not a JSON object")
    spec = registry.KERNELS.get(c.get("kernel"))
    if spec is None:
        raise refuse("names no kernel gemmlab has")
    params = c.get("params")
    if not isinstance(params, dict):
        raise refuse("has no tunables (params)")
    try:
        full = spec.resolve(params)
    except IllegalConfig as exc:
        raise refuse(f"is not a configuration of {spec.name}: {str(exc).split(': ', 1)[-1]}") from None
    if full != params:
        raise refuse(f"leaves out {', '.join(sorted(set(full) - set(params)))}")

    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf
    for name in ("registers", "static_smem"):
        if not (isinstance(c.get(name), int) and not isinstance(c.get(name), bool) and c[name] >= 0):
            raise refuse(f"has {name}={c.get(name)!r}, not a whole number")
    for name in ("per_tile_us", "per_step_us"):
        if not number(c.get(name)):
            raise refuse(f"has {name}={c.get(name)!r}, not a number of at least 0")
    for name in ("alone", "best_tflops", "chain_us", "store"):
        if c.get(name) is not None and not number(c[name]):
            raise refuse(f"has {name}={c[name]!r}, not a number of at least 0")
    return Candidate(spec, params, c["registers"], c["static_smem"], c["per_tile_us"], c["per_step_us"],
                     c.get("alone"), c.get("best_tflops"), c.get("chain_us"), c.get("store"),
                     _split_builds(spec, params, c.get("split_builds", []), refuse))


def _split_builds(spec: KernelSpec, params: dict, builds, refuse) -> tuple:
    """A candidate's `split_builds`, checked: each a split of it (every split tunable's value, a legal one), with
    whole numbers of registers and static shared memory."""
    names = split_tunables(spec)
    if not isinstance(builds, list):
        raise refuse(f"has split_builds={builds!r}, not a list")
    if builds:        # (the legal splits are what a plan prices, and split_variants keeps them for it)
        legal = {tuple(v[n] for n in names) for v in split_variants(spec, params)}
    out = []
    for b in builds:
        split = b.get("split") if isinstance(b, dict) else None
        if not isinstance(split, dict) or sorted(split) != sorted(names) \
                or tuple(split[n] for n in names) not in legal:
            raise refuse(f"has a split build {b!r} that is not one of its splits ({', '.join(names) or 'it has none'})")
        if not all(isinstance(b.get(k), int) and not isinstance(b.get(k), bool) and b[k] >= 0
                   for k in ("registers", "static_smem")):
            raise refuse(f"has a split build {b!r} without whole numbers of registers and static_smem")
        out.append((tuple(split[n] for n in names), b["registers"], b["static_smem"]))
    return tuple(out)


def load(path: Path) -> Model:
    try:
        data = json.loads(path.read_text())
        changed = sorted(k for k, h in data["sources"].items()
                         if k not in registry.KERNELS or identity.code_hash(registry.KERNELS[k].path) != h)
        cands = tuple(_candidate(path, i, c) for i, c in enumerate(data["candidates"])
                      if not (isinstance(c, dict) and c.get("kernel") in changed))
        return Model(path, data["device"], data["record"]["date"], float(data["launch_us"]), float(data["alone"]),
                     float(data["chain_us"]), float(data["ragged"]), cands, tuple(changed),
                     {k: float(v) for k, v in data.get("ragged_by_kernel", {}).items()},
                     {k: float(v) for k, v in data.get("chain_by_kernel", {}).items()},
                     {k: float(v) for k, v in data.get("store_by_kernel", {}).items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise NotFitted(f"the fitted model {path} cannot be read ({exc}); restore it, or remake it from the "
                        f"record with `python -m gemmlab fit`") from None


@functools.lru_cache(maxsize=None)
def model(device_name: str | None = None) -> Model:
    """The fitted model for this GPU (by name) where there is one, else the newest shipped."""
    paths = sorted(FITTED_DIR.glob("*.json"))
    if not paths:
        raise NotFitted(f"no fitted model in {FITTED_DIR}; make one from the record with `python -m gemmlab fit`")
    own = [p for p in paths if device_name and p == fitted_path(device_name)]
    models = [load(p) for p in (own or paths)]
    found = max(models, key=lambda m: m.date)
    if not found.candidates:
        raise NotFitted(f"every kernel in {found.path.name} changed since it was fitted "
                        f"({', '.join(found.dropped)}); remake it with `python -m gemmlab fit` after `record`")
    return found

