"""One shape's launch, in numbers: how a kernel's tiles cover C, how they fall into waves over the
GPU's block slots, how long each block's K loop is, which copy path its blocks take, and where the
product sits on the roofline. Arithmetic from the kernel's spec, its build (blocks per SM) and the
GPU's facts (this GPU's, else the record's), no timing: the features a choice per shape works from,
and the reasons a shape runs slower than a large square.

    python -m gemmlab plan M N K [--kernel K] [-D NAME=VALUE ...]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import registry, results
from .compile import compile_kernel
from .roofline import ridge_point
from .spec import KernelSpec, Params, Problem, split_time

# Below this share of the block slots kept busy, or of the blocks on the fast copy path, or of the
# tiles' area inside C, a finding is reported: a few percent is noise next to the rest.
WORTH_SAYING = 0.95
# A block's K loop this short spends a large part of its time on what lies outside it: its first copies (a
# pipeline's filling), the last steps' wait, the stores of C.
SHORT_K_STEPS = 16


def final_kernel() -> KernelSpec:
    """The course's last kernel: the one with a per-shape search (the final chapter's table)."""
    return registry.with_shape_search()[-1]


def counted(n: int, noun: str) -> str:
    """'1 tile', '1,128 tiles'."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def per_slot(x: float) -> str:
    """Blocks per slot to two decimals, and to one significant digit where that would read 0.00."""
    return f"{x:.2f}" if x >= 0.005 or x == 0 else f"{x:.1g}"


def share(x: float) -> str:
    """A share in whole percent; 'under 1%' where it is some but rounds to none (a 1 x 1 x 1 launch's)."""
    return "under 1%" if 0 < x < 0.005 else f"{x:.0%}"


@dataclass(frozen=True)
class Launch:
    spec: KernelSpec
    params: Params
    problem: Problem
    gpu: str                    # which GPU's facts: this one's, or the record's
    sm_count: int
    blocks_per_sm: int
    l2_bytes: int
    ridge: float                # FLOPs per DRAM byte where the roofline bends (peak FP32 / bandwidth)
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    tiles: int
    split_tiles: int            # of them cut into `pieces` along K (0: none)
    pieces: int
    k_steps: int                # BK steps of a whole tile's K loop
    fast_tiles: int | None      # tiles whose block copies 16 bytes at a time, unchecked (None: not modelled)
    k_split: int = 1            # pieces along K of every tile, each a block of its own (chapter 13's SPLIT)

    @property
    def slots(self) -> int:
        """Blocks the GPU runs at once."""
        return self.sm_count * self.blocks_per_sm

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def wave_time(self) -> float:
        """Time in units of one whole tile's time on one slot (the launcher's own estimate)."""
        return split_time(self.tiles * self.k_split, self.k_steps, self.slots, self.pieces, self.split_tiles)

    @property
    def waves(self) -> float:
        """Blocks per block slot: the launch's blocks (tiles times pieces) over its slots."""
        return self.tiles * self.k_split / self.slots

    @property
    def slot_use(self) -> float:
        """Share of the block slots' time spent on tiles: 1 when the last wave is full."""
        return self.waves / self.wave_time

    @property
    def piece_steps(self) -> int:
        """K steps of one block's loop: a tile's, or a piece's where every tile is split along K."""
        return -(-self.k_steps // self.k_split)

    @property
    def covered(self) -> float:
        """Share of the tiles' area that lies inside C (the rest is computed and thrown away)."""
        rows, cols = self.spec.tile(self.params)
        return self.problem.M * self.problem.N / (self.tiles * rows * cols)

    @property
    def operand_bytes(self) -> int:
        return self.problem.operand_bytes

    @property
    def intensity(self) -> float:
        """FLOPs per byte if every operand crossed DRAM once."""
        return self.problem.intensity

    def findings(self) -> list[str]:
        """What costs this shape speed against a large square, one sentence each, most first."""
        p, (rows, cols) = self.problem, self.spec.tile(self.params)
        out = []
        if self.intensity < self.ridge:
            out.append(f"memory-bound: {self.intensity:.2g} FLOPs per DRAM byte at best, under the ridge of "
                       f"{self.ridge:.0f}: DRAM bandwidth, not FFMA, sets the speed limit here")
        if self.slot_use < WORTH_SAYING:
            split = (f", {self.split_tiles} of them split in {self.pieces} along K" if self.split_tiles else
                     f", each split in {self.k_split} along K" if self.k_split > 1 else "")
            out.append(f"{counted(self.tiles, 'tile')} of {rows} x {cols}{split} for {self.slots:,} block slots "
                       f"({self.sm_count} SMs x {self.blocks_per_sm}): {share(self.slot_use)} of the slots' time busy")
        if self.fast_tiles is not None and self.fast_tiles < WORTH_SAYING * self.tiles:
            why = []
            if p.ldb % 4:
                why.append(f"B's rows ({p.ldb} floats) are not 16-byte multiples")
            if p.K % self.params["BK"]:
                why.append(f"K = {p.K} is not a multiple of BK = {self.params['BK']}")
            if p.M % rows or p.N % cols:
                why.append("the edge tiles reach past M or N")
            out.append(f"{self.tiles - self.fast_tiles} of {self.tiles} tiles take the checked 4-byte copy path: "
                       + "; ".join(why))
        if self.covered < WORTH_SAYING:
            out.append(f"the tiles cover {self.tiles * rows * cols:,} elements for C's {p.M * p.N:,}: "
                       f"{1 - self.covered:.0%} of the work lies outside C")
        # (a kernel that streams an operand, chapter 12's, has no tile loop: its K is split over the threads, or held whole)
        if self.spec.k_tile and not registry.model(self.spec).streams and self.piece_steps < SHORT_K_STEPS:
            out.append(f"each block runs {counted(self.piece_steps, 'step')} of {self.spec.k_tile(self.params)} along K: "
                       f"what a block does outside its K loop (its first copies, its stores of C) is a large part "
                       f"of so short a loop")
        return out

    def __str__(self) -> str:
        p = self.problem
        rows, cols = self.spec.tile(self.params)
        changes = self.spec.changes_label(self.params)
        lines = [
            f"{p.M} x {p.N} x {p.K} with {self.spec.name}" + (f" ({changes})" if changes else " (defaults)")
            + f"; {self.gpu}",
            f"  grid {self.grid}, {self.block[0]} threads a block, {self.blocks_per_sm} block(s) per SM: "
            f"{counted(self.blocks, 'block')} for {self.slots:,} slots, {counted(self.tiles, 'tile')} of {rows} x {cols}"
            + (f", the last {self.split_tiles} split in {self.pieces} along K" if self.split_tiles else "")
            + (f", each split in {self.k_split} along K ({self.piece_steps} K steps a piece)" if self.k_split > 1 else ""),
            f"  waves: {per_slot(self.waves)} blocks per slot, {share(self.slot_use)} of the slots' "
            f"time busy; {counted(self.k_steps, 'K step')} a tile; {self.covered:.0%} of the tiles' area inside C",
            f"  operands {self.operand_bytes / 2**20:,.1f} MiB ({'within' if self.operand_bytes <= self.l2_bytes else 'over'} "
            f"the {self.l2_bytes / 2**20:.0f} MiB L2); {self.intensity:.3g} FLOPs per byte against a ridge of "
            f"{self.ridge:.0f}",
        ]
        if self.fast_tiles is not None:
            lines.append(f"  {self.fast_tiles:,} of {self.tiles:,} tiles on the 16-byte copy path")
        found = self.findings()
        lines += [f"  - {f}" for f in found] or ["  - nothing here costs speed against a large square"]
        return "\n".join(lines)


def launch(M: int, N: int, K: int, kernel: str | KernelSpec | None = None, params: Params | None = None) -> Launch:
    """The launch of `kernel` (the final kernel by default, at its defaults) for an M x N x K product
    with packed rows, on this GPU or, with none, the recorded one. Raises IllegalConfig or
    UnsupportedShape (naming the rule) where the kernel refuses the configuration or the shape."""
    spec = final_kernel() if kernel is None else kernel if isinstance(kernel, KernelSpec) else registry.get(kernel)
    full = spec.resolve(params)
    problem = Problem(M, N, K)
    spec.check_shape(full, problem)
    here = results.here()
    dev = here.device()
    gpu = (f"{dev['name']}, this GPU" if isinstance(here, results.Live) else
           f"{dev['name']}, the record's GPU (no GPU here)")
    build = compile_kernel(spec, full, dev["arch"])
    return launch_with(spec, full, problem, dev, build.occupancy.blocks_per_sm, gpu)


def ridge(dev: dict) -> float:
    """FLOPs per DRAM byte where a GPU's roofline bends (peak FP32 over the attribute bandwidth); `dev` as
    results.here().device() gives it."""
    return ridge_point(dev["peak_fp32_tflops"] * 1e3, dev["dram_gbs"])


def launch_with(spec: KernelSpec, params: Params, problem: Problem, dev: dict, blocks_per_sm: int, gpu: str) -> Launch:
    """The same Launch where the blocks per SM are known already (no compile): `dev` is a device's
    facts as results.here().device() gives them. UnsupportedShape where the grid cannot be launched."""
    slots = dev["sm_count"] * blocks_per_sm
    grid, block = spec.launch(params, problem, slots)
    fast = registry.model(spec).fast_tiles        # the kernel's model of its fast copy path, if it has one
    return Launch(spec, params, problem, gpu, dev["sm_count"], blocks_per_sm, dev["l2_bytes"],
                  ridge(dev), grid, block, spec.tiles(params, problem),
                  spec.split_count(params, problem, slots), spec.split(params), spec.k_steps(params, problem),
                  fast(params, problem) if fast else None, spec.k_split(params, problem))
