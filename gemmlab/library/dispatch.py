"""Which kernel and configuration `gemmlab.matmul` runs for a shape, and why.

Like cuBLAS (cuBLASLt's `cublasLtMatmulAlgoGetHeuristic`) and CUTLASS's ranked kernels, the choice
comes from the shape's features, through a model of a launch's time fitted to measurements. For a
configuration c of a kernel:

    compute time = launch + chain x pieces
                   + rounds x (per_tile_c + per_step_c x K steps) x (1 + ragged_kernel x checked)
    memory time  = launch + operand bytes / DRAM bandwidth        (the roofline's other side)
    time         = the larger of the two, and of FLOPs over 1.03 x the best rate c reached in the record

* `rounds` is the busiest SM's blocks in rounds of the blocks an SM holds; a last partial round takes
  between `alone_c` (one block alone on an SM) and a whole round, on the line between them (see
  `waves`). Chapter 11's split of a last wave is counted by the launcher's own estimate
  (spec.split_time); a tile cut along K by chapter 13's SPLIT is that many blocks, each with its
  share of the K steps.
* A configuration stands for every value of its split tunables (11's and 13's `SPLIT`): its constants are
  fitted to the timings of all its splits, and a plan prices each split.
* `K steps` is K per block, in the kernel's K tiles; `per_tile` is what a block costs beyond them
  (filling the pipeline, the epilogue).
* `chain` is what each piece of a split tile adds, fitted per kernel: chapter 11's pieces add into C one
  after another, and chapter 13's last piece of a tile reads every piece's partial tile, one load after
  another (`pieces` is 0 where nothing is split); `checked` is the share of tiles on a kernel's slow copy path
  (launch.Launch.fast_tiles), but no less than one of the busiest SM's blocks where any tile takes it
  (in a launch of one round, one slow tile sets the time), and `ragged_kernel` how much longer such a
  tile takes, fitted per copy path (kernels that share one share it).
* Alignment decides which kernels may run at all (16-byte rows, aligned pointers) and which copy
  path their tiles take; operand bytes against L2 and the ridge decide which side of the roofline
  the shape is on.

A plan may also reshape a call (`_reshaped`): copy B first into 16-byte rows, or peel the few rows and
columns past a multiple of 128 into thin products of their own, each part with its own plan; it does
where the parts together, the copy priced at the copy bandwidth, are predicted faster.

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

from .. import arch as archs
from .. import files, identity, records, registry, source
from ..compile import Resources, compile_kernel, occupancy, precompile
from ..launch import Launch, launch_with
from ..launch import ridge as ridge_of
from ..spec import INT_MAX, IllegalConfig, KernelSpec, Params, Problem, UnsupportedShape, split_time

FITTED_DIR = Path(__file__).resolve().parents[1] / "fitted"
# A kernel that streams an operand (spec.streams: chapter 12's) is meant for the memory-bound side of the
# roofline: it is fitted, and offered, only where the shape's intensity (FLOPs per operand byte) is at
# most this many times the ridge's. Past that, a shape has reuse for tiles to exploit.
STREAMING_REACH = 2.0
# No configuration is predicted faster than this much over the best rate (FLOP/s) it reached in the
# record: per-candidate fits of two costs extrapolate badly from small shapes to large ones.
CEILING_SLACK = 1.03
# How many other kernels' best options a plan names.
RUNNERS_UP = 3
# Peeling: where M (or N) lies at most PEEL_MAX past a multiple of PEEL_TILE, the plan may run that multiple
# (the core, whole tiles of up to 128, in fewer waves) and the few rows (columns) left as a strip of their own,
# a thin product the memory-bound kernels take; it does where the model says the parts together are faster.
PEEL_TILE = 128
PEEL_MAX = 32
# The most rows of C one launch takes: CUDA's 65,535 block rows of the smallest tile any kernel has (8
# rows). gemmlab.matmul runs a taller product in launches of this many rows.
ROWS_PER_LAUNCH = 65535 * 8


class NotFitted(LookupError):
    """No usable fitted model (none shipped, damaged, or every kernel in it changed since)."""


# --- the fit ---------------------------------------------------------------------------------------

# A problem every split fits: K long enough for any count of pieces, few enough tiles for any workspace
SPLIT_PROBE = Problem(256, 256, 1 << 16)


def pieces_of(spec: KernelSpec, params: Params) -> tuple[int, int]:
    """The pieces a configuration cuts tiles into: a last wave's (spec.split), every tile's (spec.k_split)."""
    return spec.split(params), spec.k_split(params, SPLIT_PROBE)


def split_tunables(spec: KernelSpec) -> list[str]:
    """The tunables that set how many pieces a tile is cut into (none for most kernels): one candidate
    configuration stands for all of their values, and the plan prices each."""
    d = spec.defaults
    return [p.name for p in spec.params
            if any(pieces_of(spec, {**d, p.name: v}) != pieces_of(spec, d) for v in p.values)]


def unsplit(spec: KernelSpec, params: Params) -> dict:
    """The configuration with its split tunables at the value that never splits."""
    out = dict(params)
    for name in split_tunables(spec):
        out[name] = next(v for v in spec.tunable(name).values if pieces_of(spec, {**out, name: v}) == (1, 1))
    return out


def split_variants(spec: KernelSpec, params: Params) -> list[dict]:
    """The configuration with every legal value of its split tunables (itself alone for most kernels)."""
    variants = [dict(params)]
    for name in split_tunables(spec):
        variants = [{**v, name: value} for v in variants for value in spec.tunable(name).values]
    return [v for v in variants if spec.is_legal(v)]


def config_key(kernel: str, params: Params) -> str:
    return kernel + " " + json.dumps(dict(params), sort_keys=True)


def copy_path(spec: KernelSpec) -> str | None:
    """Which slow copy path a kernel's checked tiles take, named by the rule that says which tiles take
    it (spec.fast_tiles): kernels with one rule share one path's code. None: a kernel with one path."""
    rule = spec.fast_tiles
    return None if rule is None else f"{rule.__module__}.{rule.__qualname__}"


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
    lone says every block has an SM to itself. A kernel that streams an operand (spec.streams) is paced
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
    checked = 1 - spec.fast_tiles(params, problem) / spec.tiles(params, problem) if spec.fast_tiles else 0.0
    if checked:
        # the busiest SM decides: where some tiles are checked, it runs at least one of them among its
        # blocks (one of them, in a launch of one round, decides the launch's time)
        checked = max(checked, min(1.0, slots / blocks))
    if spec.streams:
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


def waves(w, lone, rest, alone, per_sm: int):
    """The model's whole-round times of a launch, from features' w, lone and rest (numbers or arrays):
    w rounds, times `alone` where every block has an SM to itself, plus a last round filled `rest` of
    the way (rest x per_sm blocks on the busiest SM). A block alone takes `alone` of a full round's
    time, per_sm of them a whole one, and the counts between lie on the line between the two: an SM
    shared by fewer blocks hides less latency, so it does not run them in their share of a round."""
    alone = np.maximum(alone, 1.0 / per_sm)          # no block runs faster than a whole SM lets it
    last = np.asarray(rest) * per_sm
    between = alone + (1.0 - alone) * (last - 1.0) / max(per_sm - 1, 1)
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
    for name in ("alone", "best_tflops", "chain_us"):
        if c.get(name) is not None and not number(c[name]):
            raise refuse(f"has {name}={c[name]!r}, not a number of at least 0")
    return Candidate(spec, params, c["registers"], c["static_smem"], c["per_tile_us"], c["per_step_us"],
                     c.get("alone"), c.get("best_tflops"), c.get("chain_us"))


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
                     {k: float(v) for k, v in data.get("chain_by_kernel", {}).items()})
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


# --- a plan ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Option:
    """One configuration's launch for the problem, and what the model says it takes."""
    launch: Launch
    compute_us: float
    memory_us: float

    @property
    def predicted_us(self) -> float:
        return max(self.compute_us, self.memory_us)

    @property
    def label(self) -> str:
        changes = self.launch.spec.changes_label(self.launch.params)
        return f"{self.launch.spec.name} ({changes or 'defaults'})"


@dataclass(frozen=True)
class Part:
    """A block of C, from row `row0` and column `col0`, that a plan of its own computes: its problem's M and N
    are the block's rows and columns (the operands' rows as the whole call's)."""
    row0: int
    col0: int
    plan: "Plan"


@dataclass(frozen=True)
class Plan:
    problem: Problem
    basis: str                     # which model, and for which GPU
    choice: Option
    others: tuple[Option, ...]     # the best option of each other kernel, fastest first
    refused: tuple[str, ...]       # kernels that cannot run this problem here, each with its rule
    launches: int = 1              # launches along M, each of at most ROWS_PER_LAUNCH rows
    core: tuple[int, int] | None = None   # the rows and columns `choice` runs (None: all of C)
    parts: tuple["Part", ...] = ()  # the rest of C, each block by a plan of its own
    stage_ldb: int = 0             # B is first copied into rows this many floats apart (0: read as it lies)
    stage_us: float = 0.0          # what the model says that copy takes

    @property
    def predicted_us(self) -> float:
        """The model's time of the whole call: the choice's launch, the parts' and the copy of B."""
        return self.choice.predicted_us + self.stage_us + sum(p.plan.predicted_us for p in self.parts)

    @property
    def reshaping(self) -> str:
        """How the call is reshaped around the choice ('' where it runs as it is): peeled, B copied, or both."""
        out = []
        if self.core:
            out.append(f"peeled: {self.core[0]:,} x {self.core[1]:,} of whole tiles, " + ", ".join(
                f"{_part_size(part)} past them by {part.plan.choice.label}" for part in self.parts))
        if self.stage_ldb:
            out.append(f"B copied into rows of {self.stage_ldb:,} floats")
        return "; ".join(out)

    @property
    def label(self) -> str:
        """The choice, and how the call is reshaped around it where it is."""
        return self.choice.label + (f"; {self.reshaping}" if self.reshaping else "")

    @property
    def launched(self) -> tuple[Launch, ...]:
        """Every launch the call makes, the choice's and each part's, with the problem each kernel is given."""
        return (self.choice.launch, *(part.plan.choice.launch for part in self.parts))

    @property
    def spec(self) -> KernelSpec:
        return self.choice.launch.spec

    @property
    def params(self) -> dict:
        return dict(self.choice.launch.params)

    @functools.cached_property
    def key(self) -> str:
        """The chosen kernel and configuration, as one string (what a cache of loaded kernels keys on);
        made once a plan: a small matmul call spent an eighth of its host time making it anew."""
        return config_key(self.spec.name, self.params)

    def reasons(self) -> list[str]:
        """Why this option, feature by feature: waves, K per block, alignment, bytes against L2."""
        ch, p = self.choice.launch, self.problem
        rows, cols = ch.spec.tile(ch.params)
        whole = split_time(ch.tiles, ch.k_steps, ch.slots, ch.pieces, 0)
        each = f", each split in {ch.k_split} along K, a block a piece" if ch.k_split > 1 else ""
        waves = (f"waves: {ch.tiles:,} tiles of {rows} x {cols}{each} on {ch.slots} block slots ({ch.sm_count} SMs x "
                 f"{ch.blocks_per_sm}), {ch.tiles * ch.k_split / ch.slots:.2f} blocks per slot: {ch.slot_use:.0%} of "
                 f"the slots' time busy")
        if ch.split_tiles:
            waves += (f"; the last {ch.split_tiles:,} tiles are split in {ch.pieces} along K "
                      f"({ch.tiles / ch.slots / whole:.0%} busy without the split)")
        k_tile = ch.spec.k_tile(ch.params)
        k_block = (f"K per block: {ch.k_steps} steps of {k_tile}" +
                   (f", about {-(-ch.k_steps // ch.pieces)} for each piece of a split tile" if ch.split_tiles else
                    f", {ch.piece_steps} for each of a tile's {ch.k_split} pieces" if ch.k_split > 1 else ""))
        aligned = p.lda % 4 == 0 and p.ldb % 4 == 0 and p.ldc % 4 == 0
        alignment = ("alignment: every row starts 16-byte aligned" if aligned else
                     f"alignment: rows of {p.lda}, {p.ldb} and {p.ldc} floats (A, B, C) are not all 16-byte multiples")
        if ch.fast_tiles is not None:
            alignment += f"; {ch.fast_tiles:,} of {ch.tiles:,} tiles take the 16-byte copy path"
        fits = "within" if ch.operand_bytes <= ch.l2_bytes else "over"
        side = "memory-bound" if ch.intensity < ch.ridge else "compute-bound"
        size = (f"bytes: operands {ch.operand_bytes / 1e6:,.1f} MB, {fits} the {ch.l2_bytes / 2**20:.0f} MiB L2; "
                f"{ch.intensity:.3g} FLOPs per byte against a ridge of {ch.ridge:.0f}: {side}")
        if not math.isnan(self.choice.predicted_us):
            size += f" (memory floor {self.choice.memory_us:,.1f} us, compute {self.choice.compute_us:,.1f} us)"
        if self.stage_ldb:
            alignment += (f"; B is copied first into rows of {self.stage_ldb} floats, so that its 16-byte copies can "
                          f"run (predicted {self.stage_us:,.1f} us)")
        out = [waves, k_block, alignment, size]
        if self.core:
            rows, cols = self.core
            out.append(f"peeled: the kernel above runs the first {rows:,} rows and {cols:,} columns (multiples of "
                       f"{PEEL_TILE}, no tile wasted on a few rows), " + "; ".join(
                           f"{_part_size(part)} past them by {part.plan.choice.label}, predicted "
                           f"{part.plan.predicted_us:,.1f} us" for part in self.parts))
        if self.launches > 1:
            out.append(f"launches: {p.M:,} rows of C in {self.launches} launches of at most {ROWS_PER_LAUNCH:,} "
                       f"(CUDA's 65,535 block rows); the figures above are one launch's")
        return out

    def __str__(self) -> str:
        p, c, total = self.problem, self.choice, self.predicted_us
        predicted = ("no prediction" if math.isnan(total) else
                     f"predicted {total:,.1f} us ({p.flops / (total * 1e-6) / 1e12:.1f} TFLOP/s)")
        each = f" for each of {self.launches} launches" if self.launches > 1 else ""
        lines = [f"{p.M} x {p.N} x {p.K}: {c.label}, {predicted}{each}",
                 f"  {self.basis}",
                 f"  grid {c.launch.grid}, {c.launch.block[0]} threads a block",
                 *(f"  - {r}" for r in self.reasons())]
        if self.others:
            lines.append(f"  next best{' for the same rows and columns' if self.core else ''}: " + "; ".join(
                f"{o.label} {o.predicted_us:,.1f} us (+{o.predicted_us / c.predicted_us - 1:.0%})" for o in self.others))
        lines += [f"  cannot run it: {r}" for r in self.refused]
        return "\n".join(lines)


def _part_size(part: Part) -> str:
    """'the row', 'the 3 columns': what a peeled part holds past the core (rows where it starts below it)."""
    n, noun = (part.plan.problem.M, "row") if part.row0 else (part.plan.problem.N, "column")
    return f"the {noun}" if n == 1 else f"the {n:,} {noun}s"


def device_facts() -> tuple[dict, str]:
    here = source.here()
    dev = here.attributes()          # a library call measures nothing beside its own work
    where = "this GPU" if isinstance(here, source.Live) else "the record's GPU (no GPU here)"
    return dev, f"{dev['name']}, {where}"


def _dram_us(m: Model, dev: dict, nbytes: int) -> float:
    """A launch that moves `nbytes` through DRAM: the launch, and the bytes at the GPU's attribute bandwidth
    times the share of it a copy reached on the fitted GPU (the same whether the plan is made on that GPU
    or from its record)."""
    bandwidth = dev["dram_gbs"] * m.device.get("measured_copy_gbs", m.device["dram_gbs"]) / m.device["dram_gbs"]
    return m.launch_us + nbytes / (bandwidth * 1e3)


def options(m: Model, problem: Problem, dev: dict, gpu: str, aligned: bool) -> tuple[list[Option], list[str]]:
    """Every candidate configuration (with each split it offers) that can run the problem on the GPU
    `dev` describes, with the model's times; and, for each kernel none of whose candidates can, why."""
    # per-SM speed against the fitted GPU's, where this one is another (clock x FP32 lanes per SM)
    scale = (m.device["clock_mhz"] * m.device["fp32_lanes_per_sm"]) / (dev["clock_mhz"] * dev["fp32_lanes_per_sm"])
    memory_us = _dram_us(m, dev, problem.operand_bytes)
    found, refused = [], {}
    ridge = ridge_of(dev)
    for cand in m.candidates:
        spec = cand.spec
        try:
            if spec.streams and problem.intensity > STREAMING_REACH * ridge:
                raise UnsupportedShape(spec.name, "memory-bound-shapes",
                                       f"it streams an operand, for shapes under {STREAMING_REACH:g} x the ridge "
                                       f"({STREAMING_REACH * ridge:.0f} FLOPs per byte); this one has "
                                       f"{problem.intensity:.0f}")
            spec.check_shape(cand.params, problem)
            spec.check_arch(cand.params, archs.get(dev["arch"]))
            if not aligned and spec.pointer_alignment(cand.params) > 4:
                raise UnsupportedShape(spec.name, "pointer-alignment",
                                       "it loads 16 bytes at a time, and an operand does not start 16-byte aligned")
            per_sm = blocks_per_sm(spec, cand.params, cand.registers, cand.static_smem, dev["arch"])
        except (UnsupportedShape, IllegalConfig) as exc:
            refused.setdefault(spec.name, str(exc))
            continue
        for params in split_variants(spec, cand.params):
            try:
                launch = launch_with(spec, params, problem, dev, per_sm, gpu)
            except UnsupportedShape as exc:
                refused.setdefault(spec.name, str(exc))
                continue
            w, steps, lone, chained, checked, rest = features(spec, params, problem, dev["sm_count"], per_sm)
            tile_us = (cand.per_tile_us + cand.per_step_us * steps) * scale * \
                (1 + m.ragged_by_kernel.get(spec.name, m.ragged) * checked)
            fixed = m.launch_us + (m.chain_us if cand.chain_us is None else cand.chain_us) * chained
            alone = m.alone if cand.alone is None else cand.alone
            compute_us = fixed + float(waves(w, lone, rest, alone, per_sm)) * tile_us
            if cand.best_tflops:                 # never faster than it ever ran (scaled to this GPU)
                compute_us = max(compute_us, problem.flops / (cand.best_tflops * CEILING_SLACK / scale * 1e6))
            found.append(Option(launch, compute_us, memory_us))
    runnable = {o.launch.spec.name for o in found}
    return found, [why for name, why in refused.items() if name not in runnable]


@functools.lru_cache(maxsize=4096, typed=True)   # typed: plan(True, 2, 3) is refused, not plan(1, 2, 3)'s answer
def plan(M: int, N: int, K: int, lda: int = 0, ldb: int = 0, ldc: int = 0, aligned: bool = True) -> Plan:
    """The kernel, configuration, grid and split gemmlab.matmul runs for C[M,N] = A[M,K] @ B[K,N]
    (row-major, rows lda, ldb, ldc floats apart; 0: packed) on this GPU (with none, the record's),
    and why. `aligned`: every operand starts 16-byte aligned. Raises spec.BadProblem for sizes no
    SGEMM has; refuses nothing cuBLAS accepts."""
    dev, gpu = device_facts()
    return plan_for(Problem(M, N, K, lda, ldb, ldc), dev, gpu, aligned)


def plan_for(problem: Problem, dev: dict, gpu: str, aligned: bool = True, reshape: bool = True) -> Plan:
    """The plan for a problem on the GPU `dev` describes (its facts, as source.here().device() gives
    them), named `gpu` in the plan's words. `reshape`: the call may also be run in parts, or on a copy of B
    (see `_reshaped`), where the model says that is faster."""
    if problem.M > ROWS_PER_LAUNCH:              # one launch's rows planned, run as often as needed
        p = problem
        first = plan_for(Problem(ROWS_PER_LAUNCH, p.N, p.K, p.lda, p.ldb, p.ldc, p.alpha, p.beta), dev, gpu, aligned,
                         reshape=False)
        return dataclasses.replace(first, problem=problem, launches=-(-p.M // ROWS_PER_LAUNCH))
    try:
        m = model(dev["name"])
        found, refused = options(m, problem, dev, gpu, aligned)
    except (NotFitted, archs.UnknownArch) as exc:
        return _fallback(problem, dev, gpu, str(exc))
    if not found:
        return _fallback(problem, dev, gpu, "no fitted configuration can run it: " + "; ".join(refused))
    found.sort(key=lambda o: (o.predicted_us, o.label))
    choice = found[0]
    seen, others = {choice.launch.spec.name}, []
    for o in found[1:]:
        if o.launch.spec.name not in seen and len(others) < RUNNERS_UP:
            seen.add(o.launch.spec.name)
            others.append(o)
    basis = f"model {m.label}, for {gpu}"
    if m.device["name"] != dev["name"]:
        basis += " (per-SM speed scaled by clock x FP32 lanes)"
    direct = Plan(problem, basis, choice, tuple(others), tuple(refused))
    if not reshape:
        return direct
    return min([direct, *_reshaped(problem, dev, gpu, aligned, m)], key=lambda p: p.predicted_us)


def _reshaped(p: Problem, dev: dict, gpu: str, aligned: bool, m: Model) -> list[Plan]:
    """The same call run another way, each as the model prices it:
    * B copied first into rows of a 16-byte multiple (where its rows are not): every kernel's copies of B
      then take their 16-byte path, for the price of one copy of B at the copy bandwidth;
    * peeled: where M or N lies at most PEEL_MAX past a multiple of PEEL_TILE, that multiple runs as one
      product of whole tiles (2049 rows would otherwise cost a whole row of tiles and a wave for one row),
      and the rows and columns past it as thin products of their own;
    * both."""
    rows = p.M % PEEL_TILE if p.M > PEEL_TILE and p.M % PEEL_TILE <= PEEL_MAX else 0
    cols = p.N % PEEL_TILE if p.N > PEEL_TILE and p.N % PEEL_TILE <= PEEL_MAX else 0
    found = []
    # (B's rows padded to a 16-byte multiple only where that stride is still a 32-bit size)
    for ldb in ((0, -(-p.N // 4) * 4) if p.ldb % 4 and -(-p.N // 4) * 4 <= INT_MAX else (0,)):
        q = dataclasses.replace(p, ldb=ldb or p.ldb)
        stage_us = _dram_us(m, dev, 2 * 4 * p.K * p.N) if ldb else 0.0      # B read once and written once
        for r, c in dict.fromkeys(((0, 0), (rows, cols))):     # as it is, and peeled where it can be
            if not (ldb or r or c):
                continue
            core = plan_for(dataclasses.replace(q, M=p.M - r, N=p.N - c), dev, gpu, aligned, reshape=False)
            parts = []
            if r:                              # the last rows, all of C's columns
                parts.append(Part(p.M - r, 0, plan_for(dataclasses.replace(q, M=r), dev, gpu, aligned, reshape=False)))
            if c:                              # the last columns of the rows above them
                parts.append(Part(0, p.N - c, plan_for(dataclasses.replace(q, M=p.M - r, N=c), dev, gpu, aligned,
                                                       reshape=False)))
            found.append(dataclasses.replace(core, problem=p, core=(p.M - r, p.N - c) if r or c else None,
                                             parts=tuple(parts), stage_ldb=ldb, stage_us=stage_us))
    return [f for f in found if not math.isnan(f.predicted_us)]


def _fallback(problem: Problem, dev: dict, gpu: str, why: str) -> Plan:
    """Without a usable model: the latest chapter's kernel that runs this problem on this GPU at its
    defaults."""
    arch = archs.get(dev["arch"])
    for spec in reversed(list(registry.KERNELS.values())):
        if spec.runs_on(spec.defaults, arch):
            try:
                spec.check_shape(spec.defaults, problem)
                per_sm = compile_kernel(spec, spec.defaults, dev["arch"]).occupancy.blocks_per_sm
                launch = launch_with(spec, spec.defaults, problem, dev, per_sm, gpu)
            except UnsupportedShape:
                continue
            return Plan(problem, f"no model ({why}): {spec.name} at its defaults, for {gpu}",
                        Option(launch, math.nan, math.nan), (), ())
    raise NotFitted(f"{why}; and no kernel runs {problem.M} x {problem.N} x {problem.K} at its defaults on {gpu}")
