"""Which kernel and configuration `gemmlab.matmul` runs for a shape, and why.

Like cuBLAS (cuBLASLt's `cublasLtMatmulAlgoGetHeuristic`) and CUTLASS's ranked kernels, the choice
comes from the shape's features, through a model of a launch's time fitted to measurements
(time_model.py): every fitted configuration that can run the shape on this GPU is priced, with each
split it offers, and the fastest is the plan. Alignment decides which kernels may run at all (16-byte
rows, aligned pointers) and which copy path their tiles take; operand bytes against L2 and the ridge
decide which side of the roofline the shape is on.

A plan may also reshape a call (`_reshaped`): copy B first into 16-byte rows, peel the few rows and columns past
a multiple of 128 into thin products of their own, each part with its own plan, run a C of a few columns as a wider
one (B's columns and C's padded to whole narrow tiles), or one of a few rows as a taller one (A's rows and C's
padded to whole tiles); it does where the parts together, the copies priced at the copy bandwidth, are faster.

The frozen model needs no GPU and no compile, so the same call always gives the same plan.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from .. import arch as archs
from .. import registry, results
from ..compile import compile_kernel
from ..launch import Launch, counted, launch_with, per_slot, share
from ..launch import ridge as ridge_of
from ..spec import INT_MAX, IllegalConfig, KernelSpec, Problem, UnsupportedShape, split_time
from .time_model import (STREAMING_REACH, Model, NotFitted, as_priced, blocks_per_sm, config_key, features, model,
                         scalar_stores, split_variants, unsplit, waves)

# No configuration is predicted faster than this much over the best rate (FLOP/s) it reached in the
# record: per-candidate fits of two costs extrapolate badly from small shapes to large ones. 1: never
# faster than it ran (with 1.03 the plan took, at 4096³, a configuration predicted at 53.3 TFLOP/s that
# ran at 50.4, 0.979 of cuBLAS, over one that ran at 1.020: docs/dispatch.md).
CEILING_SLACK = 1.0
# How many other kernels' best options a plan names.
RUNNERS_UP = 3
# Peeling: where M (or N) lies at most PEEL_MAX past a multiple of PEEL_TILE, the plan may run that multiple
# (the core, whole tiles of up to 128, in fewer waves) and the few rows (columns) left as a strip of their own,
# a thin product the memory-bound kernels take; it does where the model says the parts together are faster.
PEEL_TILE = 128
PEEL_MAX = 32
# Padded columns: a C narrower than PAD_BELOW columns may be run as one of N rounded up to a whole number of
# PAD_TILES-column tiles (B copied into rows that wide; C computed in a buffer that
# wide, its first N columns copied back): tiles wider than C are refused (chapter 13's `tile-fits`), and at 17
# to 63 columns its narrow tiles on the padded C beat what can run C as it is (docs/dispatch-history.md).
# Padded rows likewise: a C of fewer than PAD_BELOW rows may be run as one of M rounded up to whole tiles of
# PAD_TILES rows (A copied into that many rows, C computed in a buffer that tall, its first M rows copied
# back): chapter 13's 32-row tiles, which C of 9 to 31 rows refuses, against the streaming kernel; and a C of 33
# to 47 rows also as one of 48, for its 48-row tiles (taller C run them as they are, the last tile moved back).
PAD_BELOW = 128
PAD_TILES = (32, 64)
PAD_SHORT_ROWS = 48
# The most rows of C one launch takes: CUDA's 65,535 block rows of the smallest tile any kernel has (8
# rows). gemmlab.matmul runs a taller product in launches of this many rows.
ROWS_PER_LAUNCH = 65535 * 8


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

    @property
    def rank(self) -> tuple[float, str]:
        """Its place: its time, then (a tie) its configuration's name as priced (time_model.as_priced)."""
        spec = self.launch.spec
        priced = spec.changes_label(as_priced(spec, self.launch.params))
        return self.predicted_us, f"{spec.name} ({priced or 'defaults'})"


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
    stage_us: float = 0.0          # what the model says that copy takes (with padded rows or columns, all the copies)
    pad_n: int = 0                 # C is computed this many columns wide, B and C padded (0: as it is)
    pad_m: int = 0                 # C is computed this many rows tall, A and C padded (0: as it is)

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
        if self.pad_n:
            out.append(f"run {self.pad_n} columns wide (B and C padded)")
        elif self.pad_m:
            out.append(f"run {self.pad_m} rows tall (A and C padded)")
        elif self.stage_ldb:
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
        waves = (f"waves: {counted(ch.tiles, 'tile')} of {rows} x {cols}{each} on {ch.slots:,} block slots "
                 f"({ch.sm_count} SMs x {ch.blocks_per_sm}), {per_slot(ch.waves)} blocks per slot: "
                 f"{share(ch.slot_use)} of the slots' time busy")
        if ch.split_tiles:
            waves += (f"; the last {ch.split_tiles:,} tiles are split in {ch.pieces} along K "
                      f"({ch.tiles / ch.slots / whole:.0%} busy without the split)")
        k_tile = ch.spec.k_tile(ch.params)
        k_block = (f"K per block: {counted(ch.k_steps, 'step')} of {k_tile}" +
                   (f", about {-(-ch.k_steps // ch.pieces):,} for each piece of a split tile" if ch.split_tiles else
                    f", {ch.piece_steps:,} for each of a tile's {ch.k_split} pieces" if ch.k_split > 1 else ""))
        fewer = ch.spec.k_split_why(ch.params, ch.problem)
        if fewer:
            k_block += f" ({fewer})"
        aligned = p.lda % 4 == 0 and p.ldb % 4 == 0 and p.ldc % 4 == 0
        alignment = ("alignment: every row starts 16-byte aligned" if aligned else
                     f"alignment: rows of {p.lda:,}, {p.ldb:,} and {p.ldc:,} floats (A, B, C) are not all 16-byte multiples")
        if ch.fast_tiles is not None:
            alignment += (f"; its one tile {'copies' if ch.fast_tiles else 'does not copy'} B 16 bytes at a time"
                          if ch.tiles == 1 else f"; {ch.fast_tiles:,} of {ch.tiles:,} tiles copy B 16 bytes at a time")
        if swapped := {k: v for k, v in registry.model(ch.spec).checked_build.items() if ch.params.get(k) == v}:
            alignment += (f"; {' '.join(f'{k}={v}' for k, v in swapped.items())}: the kernel's build for tiles off that "
                          f"path, priced as the configuration without it")
        fits = "within" if ch.operand_bytes <= ch.l2_bytes else "over"
        side = "memory-bound" if ch.intensity < ch.ridge else "compute-bound"
        size = (f"bytes: operands {ch.operand_bytes / 2**20:,.1f} MiB, {fits} the {ch.l2_bytes / 2**20:.0f} MiB L2; "
                f"{ch.intensity:.3g} FLOPs per byte against a ridge of {ch.ridge:.0f}: {side} by the roofline")
        if not math.isnan(self.choice.predicted_us):
            # the roofline's side and the launch's larger time can disagree (a launch that keeps few SMs busy
            # computes for longer than its bytes take): say which of the two the prediction is
            mem, comp = self.choice.memory_us, self.choice.compute_us
            size += (f" (memory floor {mem:,.1f} us, its blocks' rounds {comp:,.1f} us: the prediction is the "
                     f"{'rounds' if comp >= mem else 'memory floor'})")
        if self.pad_n:
            alignment += (f"; C's {p.N:,} columns are run as {self.pad_n:,}: B is copied into rows of {self.pad_n:,} floats "
                          f"and C computed in a buffer {self.pad_n:,} wide, its first "
                          f"{p.N:,} columns copied back (predicted {self.stage_us:,.1f} us)")
        elif self.pad_m:
            alignment += (f"; C's {p.M:,} rows are run as {self.pad_m:,}: A is copied into {self.pad_m:,} rows and C "
                          f"computed in a buffer {self.pad_m:,} rows tall, its first {p.M:,} rows copied back "
                          f"(predicted {self.stage_us:,.1f} us)")
        elif self.stage_ldb:
            alignment += (f"; B is copied first into rows of {self.stage_ldb:,} floats, so that its 16-byte copies can "
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
        # the whole call's FLOPs over every launch's time (a call of several launches is priced one launch at a time)
        rate = "" if math.isnan(total) else f" ({p.flops / (total * self.launches * 1e-6) / 1e12:.1f} TFLOP/s)"
        each = f" for each of {self.launches:,} launches" if self.launches > 1 else ""
        predicted = "no prediction" if math.isnan(total) else f"predicted {total:,.1f} us{each}{rate}"
        lines = [f"{p.M} x {p.N} x {p.K}: {self.label}, {predicted}",
                 f"  {self.basis}",
                 f"  grid {c.launch.grid}, {c.launch.block[0]} threads a block",
                 *(f"  - {r}" for r in self.reasons())]
        if self.others:
            same = (" for the same rows and columns, against the choice's launch alone" if self.core else
                    f" for the same {self.pad_n} columns, against the choice's launch alone" if self.pad_n else
                    f" for the same {self.pad_m} rows, against the choice's launch alone" if self.pad_m else "")
            lines.append(f"  next best{same}: " + "; ".join(
                f"{_as_run(o)} {o.predicted_us:,.1f} us (+{o.predicted_us / c.predicted_us - 1:.0%})" for o in self.others))
        # a call of several launches is planned one launch at a time: a kernel is refused a launch's rows
        what = f"a launch of {ROWS_PER_LAUNCH:,} of its rows" if self.launches > 1 else "it"
        lines += [f"  cannot run {what}: {r}" for r in self.refused]
        return "\n".join(lines)


def _as_run(option: Option) -> str:
    """An option's label, saying how many pieces its launch cuts where that is fewer than its SPLIT (the SPLIT values
    that run alike are priced alike, and the label that sorts first is shown)."""
    ch = option.launch
    if not ch.spec.k_split_why(ch.params, ch.problem):
        return option.label
    return f"{option.label[:-1]}, run as {counted(ch.k_split, 'piece')})"


def _part_size(part: Part) -> str:
    """'the row', 'the 3 columns': what a peeled part holds past the core (rows where it starts below it)."""
    n, noun = (part.plan.problem.M, "row") if part.row0 else (part.plan.problem.N, "column")
    return f"the {noun}" if n == 1 else f"the {n:,} {noun}s"


def device_facts() -> tuple[dict, str]:
    here = results.here()
    dev = here.attributes()          # a library call measures nothing beside its own work
    where = "this GPU" if isinstance(here, results.Live) else "the record's GPU (no GPU here)"
    return dev, f"{dev['name']}, {where}"


def _dram_us(m: Model, dev: dict, nbytes: int) -> float:
    """A launch that moves `nbytes` through DRAM: the launch, and the bytes at the GPU's attribute bandwidth
    times the share of it a copy reached on the fitted GPU (the same whether the plan is made on that GPU
    or from its record)."""
    bandwidth = dev["dram_gbs"] * m.device.get("measured_copy_gbs", m.device["dram_gbs"]) / m.device["dram_gbs"]
    return m.launch_us + nbytes / (bandwidth * 1e3)


def options(m: Model, problem: Problem, dev: dict, gpu: str, aligned: bool,
            only: str | None = None) -> tuple[list[Option], list[str]]:
    """Every candidate configuration (with each split it offers) that can run the problem on the GPU
    `dev` describes, with the model's times; and, for each kernel none of whose candidates can, why.
    `only`: the candidate of this configuration key alone (config_key of its unsplit parameters)."""
    # per-SM speed against the fitted GPU's, where this one is another (clock x FP32 lanes per SM)
    scale = (m.device["clock_mhz"] * m.device["fp32_lanes_per_sm"]) / (dev["clock_mhz"] * dev["fp32_lanes_per_sm"])
    memory_us = _dram_us(m, dev, problem.operand_bytes)
    found, refused = [], {}
    ridge = ridge_of(dev)
    for cand in m.candidates:
        spec = cand.spec
        if only is not None and config_key(spec.name, cand.params) != only:
            continue
        try:
            if registry.model(spec).streams and problem.intensity > STREAMING_REACH * ridge:
                raise UnsupportedShape(spec.name, "memory-bound-shapes",
                                       f"it streams an operand, for shapes under {STREAMING_REACH:g} x the ridge "
                                       f"({STREAMING_REACH * ridge:.0f} FLOPs per byte); this one has "
                                       f"{problem.intensity:.0f}")
            spec.check_shape(cand.params, problem)
            spec.check_arch(cand.params, archs.get(dev["arch"]))
            if not aligned and spec.pointer_alignment(cand.params) > 4:
                raise UnsupportedShape(spec.name, "pointer-alignment",
                                       "it loads 16 bytes at a time, and an operand does not start 16-byte aligned")
        except (UnsupportedShape, IllegalConfig) as exc:
            refused.setdefault(spec.name, str(exc))
            continue
        own_per_sm = blocks_per_sm(spec, cand.params, cand.registers, cand.static_smem, dev["arch"])
        swapped = registry.model(spec).checked_build     # the build a launch with tiles off the fast path runs
        # a tile's cost beyond its K steps, with what storing C 4 bytes at a time adds (the same for every split)
        store = m.store_by_kernel.get(spec.name, 0.0) if cand.store is None else cand.store
        per_tile = cand.per_tile_us * (1 + store * scalar_stores(spec, problem, aligned))
        for params in split_variants(spec, cand.params):
            try:
                # each split's own build: its registers may differ from the unsplit one's, and with them the blocks
                # an SM holds
                per_sm = blocks_per_sm(spec, params, *cand.build(params), dev["arch"])
                # a last-wave split that splits no tile of this launch is the unsplit kernel with the split's
                # code besides, which costs it 2% on the H100 (docs/dispatch.md): the unsplit build is offered
                if spec.split(params) > 1 and spec.is_legal(unsplit(spec, params)) \
                        and not spec.split_count(params, problem, dev["sm_count"] * per_sm):
                    continue
                launch = launch_with(spec, params, problem, dev, per_sm, gpu)
                if swapped and (not aligned or launch.fast_tiles is not None and launch.fast_tiles < launch.tiles):
                    launch = dataclasses.replace(launch, params={**params, **swapped})   # its slow path faster, same price
            except UnsupportedShape as exc:
                refused.setdefault(spec.name, str(exc))
                continue
            w, steps, lone, chained, checked, rest = features(spec, params, problem, dev["sm_count"], per_sm)
            # the costs are a round's of the candidate's own build: a round of a split's build that holds other
            # blocks an SM does their share of an SM's work (fit.CandidateRows.occupancy)
            tile_us = (per_tile + cand.per_step_us * steps) * scale * per_sm / own_per_sm * \
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
    """The plan for a problem on the GPU `dev` describes (its facts, as results.here().device() gives
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
    found.sort(key=lambda o: o.rank)
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
    found += _padded(p, dev, gpu, aligned, m)
    return [f for f in found if not math.isnan(f.predicted_us)]


def pad_sizes(n: int) -> tuple[int, ...]:
    """The sizes past n a side of C of n rows or columns may be run at: n rounded up to whole PAD_TILES tiles,
    for a side shorter than PAD_BELOW (none for a longer one)."""
    return () if n >= PAD_BELOW else tuple(sorted({-(-n // w) * w for w in PAD_TILES} - {n}))


def row_pad_sizes(n: int) -> tuple[int, ...]:
    """The heights a C of n rows may be run at: pad_sizes, and PAD_SHORT_ROWS for 33 to 47 rows."""
    short = {PAD_SHORT_ROWS} if PAD_TILES[0] < n < PAD_SHORT_ROWS else set()
    return tuple(sorted(set(pad_sizes(n)) | short))


def _padded(p: Problem, dev: dict, gpu: str, aligned: bool, m: Model) -> list[Plan]:
    """A C of fewer than PAD_BELOW columns (rows) run as a wider (taller) one, PAD_TILES: the bigger product's
    own plan, with the copies priced at the copy bandwidth: B (A) read and written into the bigger buffer, C's
    buffer read and C written (and, where beta is not 0, C read into the buffer first). What the buffer holds
    past B's N columns (A's M rows) is left as it was: it makes only columns (rows) of the bigger C past C's,
    which are never copied back."""
    c_us = _dram_us(m, dev, 4 * p.M * p.N * (4 if p.beta else 2))
    found = []
    for width in pad_sizes(p.N):
        core = plan_for(Problem(p.M, width, p.K, p.lda, width, width, p.alpha, p.beta), dev, gpu, aligned,
                        reshape=False)
        stage_us = _dram_us(m, dev, 4 * p.K * p.N * 2) + c_us
        found.append(dataclasses.replace(core, problem=p, stage_ldb=width, stage_us=stage_us, pad_n=width))
    for height in row_pad_sizes(p.M):
        core = plan_for(Problem(height, p.N, p.K, p.K, p.ldb, p.N, p.alpha, p.beta), dev, gpu, aligned,
                        reshape=False)
        stage_us = _dram_us(m, dev, 4 * p.M * p.K * 2) + c_us
        found.append(dataclasses.replace(core, problem=p, stage_us=stage_us, pad_m=height))
    return found


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
