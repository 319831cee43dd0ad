"""The numbers the pictures draw, worked out from a kernel's spec and resolved parameters (no GPU,
no plotting): which thread owns what, the 32-byte sectors of a warp's global accesses, the phases
and banks of its shared loads, the order of its FFMAs, a schematic load/compute timeline, and the
waves of tiles over the GPU's block slots. The lessons draw them with pictures.py; the tests check
them on known cases. Each model says what it assumes."""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .. import registry
from ..spec import PIECE_COST, KernelSpec, Params, Problem

WARP = 32
SECTOR = 32          # bytes: the unit global memory moves
BANKS = 32           # shared memory: 32 banks of 4-byte words
FLOAT = 4


def owner_grid(spec: KernelSpec, params: Params) -> np.ndarray:
    """The thread (the model's owner) of every element of the block's C tile, rows x columns."""
    rows, cols = spec.tile(params)
    owner = registry.model(spec).owner
    return np.array([[owner(params, r, c) for c in range(cols)] for r in range(rows)])


def owned(grid: np.ndarray, thread: int) -> list[tuple[int, int]]:
    """The elements of the block's C tile a thread owns, in row-major order."""
    return [(int(r), int(c)) for r, c in zip(*np.nonzero(grid == thread))]


# --- global memory: a warp's addresses and their 32-byte sectors ----------------------------------

@dataclass(frozen=True)
class Request:
    """One warp-wide load or store instruction: each lane's element (row, column) of the matrix
    and byte address, and the 32-byte sectors they fall in."""
    operand: str                          # "A", "B" or "C"
    index: int                            # the thread's index-th load (store) of this operand
    elements: tuple[tuple[int, int], ...]  # per lane
    addresses: tuple[int, ...]            # per lane, bytes from the matrix's (128-byte aligned) start

    @property
    def sectors(self) -> list[int]:
        return sorted({a // SECTOR for a in self.addresses})


def sectors_supported(spec: KernelSpec) -> str | None:
    """None, or why the sector picture cannot be drawn for this kernel."""
    if registry.model(spec).owner is None:
        return f"{spec.name} has no model of its thread mapping (owner)"
    if spec.thread_tile is not None:
        return (f"{spec.name}'s threads own TM x TN patches and stage their tiles with a mapping of their own "
                f"(float4 loads): the owner model of C says nothing about their global loads")
    return None


def warp_requests(spec: KernelSpec, params: Params, problem: Problem, warp: int = 0) -> list[Request]:
    """Warp `warp`'s global loads of A and B in one step of its loop over K (a k, or a tile of K where it stages
    tiles), and its stores of C, in block (0, 0).

    Model: a thread's j-th access of each matrix touches its j-th element of the C tile in row-major
    order (the model's owner). For kernels that stage square tiles (02-04), the copies of the A and B tiles
    use C's thread mapping: element (r, c) of the A tile is A[r][k0 + c], of the B tile B[k0 + r][c].
    For a kernel that stages none (01), a thread reads A[r][k] and B[k][c] for its own (r, c).
    Row-major matrices, leading dimensions from the problem."""
    why = sectors_supported(spec)
    if why:
        raise ValueError(why)
    grid = owner_grid(spec, params)
    lanes = [owned(grid, warp * WARP + lane) for lane in range(WARP)]
    count = min(len(e) for e in lanes)
    ld = {"A": problem.lda, "B": problem.ldb, "C": problem.ldc}
    out = []
    for operand in ("A", "B", "C"):
        for j in range(count if spec.stages_tiles or operand == "C" else 1):
            elements = []
            for lane in range(WARP):
                r, c = lanes[lane][j]
                if spec.stages_tiles or operand == "C":
                    elements.append((r, c))
                else:
                    elements.append((r, 0) if operand == "A" else (0, c))
            out.append(Request(operand, j, tuple(elements),
                               tuple((r * ld[operand] + c) * FLOAT for r, c in elements)))
    return out


def sectors_per_request(requests: list[Request], operand: str) -> float:
    picked = [len(r.sectors) for r in requests if r.operand == operand]
    return sum(picked) / len(picked)


# --- shared memory: a warp's vector loads, their phases and banks ---------------------------------

@dataclass(frozen=True)
class SharedLoad:
    """One warp-wide shared load of an operand: `width` words (4: LDS.128) per lane, from word
    `words[lane]` on; served in phases of 32 / width lanes (a quarter-warp for 128-bit loads)."""
    operand: str
    index: int
    width: int
    words: tuple[int, ...]                 # per lane: the first word of its vector
    elements: tuple[tuple[int, ...], ...]  # per lane: the (k, i) of each word, i = row (A) or column (B)

    @property
    def phase_lanes(self) -> int:
        return WARP // self.width

    def phases(self) -> list[range]:
        return [range(p, p + self.phase_lanes) for p in range(0, WARP, self.phase_lanes)]

    def wavefronts(self, phase: range) -> int:
        """Passes the phase takes: the most distinct vectors that meet in one bank (lanes reading
        the same vector share it: a broadcast)."""
        per_bank: dict[int, set] = {}
        for lane in phase:
            for w in range(self.words[lane], self.words[lane] + self.width):
                per_bank.setdefault(w % BANKS, set()).add(self.words[lane])
        return max(len(v) for v in per_bank.values())


def shared_supported(spec: KernelSpec) -> str | None:
    model = registry.model(spec)
    if model.smem_word is None or model.owner is None or spec.k_tile is None:
        return (f"{spec.name} has no model of where its inner loop reads shared memory (smem_word): "
                f"the picture is drawn for the outer-product kernels")
    return None


def shared_loads(spec: KernelSpec, params: Params, operand: str, warp: int = 0) -> list[SharedLoad]:
    """Warp `warp`'s loads of operand "A" or "B" from shared memory over one tile, in address order.

    Model: a lane reads, at every k of the tile, its own rows of the A tile (its columns of the B
    tile) as the model's owner gives them; the words (its smem_word) fall in aligned runs of 4, 2 or 1,
    and each run is one vector load (LDS.128, LDS.64, LDS). Its q-th vector is the warp's q-th load."""
    why = shared_supported(spec)
    if why:
        raise ValueError(why)
    if operand not in ("A", "B"):
        raise ValueError(f"operand must be 'A' or 'B', not {operand!r}")
    grid = owner_grid(spec, params)
    smem_word = registry.model(spec).smem_word
    per_lane = []
    for lane in range(WARP):
        cells = owned(grid, warp * WARP + lane)
        index = sorted({r for r, _ in cells} if operand == "A" else {c for _, c in cells})
        per_lane.append({smem_word(params, operand, k, i): (k, i)
                         for k in range(spec.k_tile(params)) for i in index})
    # the widest vector whose aligned runs make up every lane's words exactly
    width = next(w for w in (4, 2, 1)
                 if all(w0 - w0 % w + d in words for words in per_lane for w0 in words for d in range(w)))
    starts = [sorted(b for b in words if b % width == 0) for words in per_lane]
    if len({len(s) for s in starts}) != 1:
        raise ValueError(f"{spec.name}: the lanes of warp {warp} read different numbers of vectors")
    return [SharedLoad(operand, q, width, tuple(s[q] for s in starts),
                       tuple(tuple(per_lane[lane][starts[lane][q] + d] for d in range(width)) for lane in range(WARP)))
            for q in range(len(starts[0]))]


# --- the order of a thread's FFMAs in one k step -------------------------------------------------

def ffma_order(rows: int, cols: int, snake: bool) -> list[tuple[int, int]]:
    """acc[i][j] += a[i] * b[j] for every (i, j) of a thread's patch: row by row, or with odd rows
    backwards (the kernels' SNAKE)."""
    return [(i, cols - 1 - jj if snake and i % 2 else jj) for i in range(rows) for jj in range(cols)]


def reused_operands(order: list[tuple[int, int]]) -> list[str]:
    """For each FFMA after the first: the operand it shares with the one before ('a' or 'b'), or ''."""
    return ["a" if p[0] == q[0] else "b" if p[1] == q[1] else "" for p, q in zip(order, order[1:])]


# --- a schematic timeline of one warp: loads, shared stores, barriers, math -----------------------

@dataclass(frozen=True)
class Costs:
    """Model durations in cycles for one warp with no other warp to hide behind (not measured)."""
    latency: int      # a global load, issue to data
    store: int        # the thread's shared stores of one tile
    barrier: int
    compute: int      # shared loads and FFMAs of one tile

    def per_tile(self, prefetch: bool) -> int:
        """Cycles a tile takes once the timeline is in step: without prefetching the load waits in
        full, with it the next tile's load overlaps the math, and the longer of the two sets the pace."""
        if prefetch:
            return max(self.latency, self.compute) + self.store + self.barrier
        return self.latency + self.store + 2 * self.barrier + self.compute

    def prefetch_pace(self) -> str:
        """In words, which of the next tile's load and this tile's math sets a prefetching tile's pace,
        and how much of the load the math hides."""
        if self.latency > self.compute:
            return (f"the next tile's load, {self.latency} cycles, outlasts the math, {self.compute}, and sets the pace: "
                    f"the math covers {self.compute} of its cycles, and the warp still waits {self.latency - self.compute}")
        return (f"the math, {self.compute} cycles, outlasts the next tile's load, {self.latency}, and sets the pace: "
                f"the load hides behind it in full")


def tile_costs(spec: KernelSpec, params: Params, latency: int = 600, barrier: int = 20) -> Costs:
    """Compute: one FFMA per multiply-add of the thread's patch at every k, plus one shared load
    per 4 operands; stores: one per float4 the thread stages (4 for a transposed A column)."""
    rows, cols = spec.tile(params)
    tm, tn = spec.thread_tile(params)
    bk, threads = spec.k_tile(params), spec.threads(params)
    float4s = (rows * bk + bk * cols) / 4 / threads
    return Costs(latency, int(round(4 * float4s * 2)), barrier, bk * (tm * tn + -(-(tm + tn) // 4)))


def timeline(costs: Costs, tiles: int, prefetch: bool) -> list[tuple[str, float, float, int]]:
    """(activity, start, duration, tile) for the first `tiles` tiles. Without prefetching each tile
    is loaded, stored, synchronised, computed, synchronised; with it, tile t+1's loads are in
    flight while tile t is computed, then stored into the other buffer, one barrier per tile."""
    bars, now = [], 0.0

    def add(what, dur, tile):
        nonlocal now
        bars.append((what, now, dur, tile))
        now += dur
    if not prefetch:
        for t in range(tiles):
            add("global loads in flight", costs.latency, t)
            add("shared stores", costs.store, t)
            add("barrier", costs.barrier, t)
            add("compute (FFMAs)", costs.compute, t)
            add("barrier", costs.barrier, t)
        return bars
    add("global loads in flight", costs.latency, 0)
    add("shared stores", costs.store, 0)
    add("barrier", costs.barrier, 0)
    for t in range(tiles):
        start = now
        if t + 1 < tiles:
            bars.append(("global loads in flight", start, costs.latency, t + 1))
        add("compute (FFMAs)", costs.compute, t)
        if t + 1 < tiles:
            now = max(now, start + costs.latency)
            add("shared stores", costs.store, t + 1)
        add("barrier", costs.barrier, t)
    return bars


# --- waves of tiles over the block slots, and splitting the last one along K -----------------------

@dataclass(frozen=True)
class Wave:
    tiles: int
    tiles_k: int
    slots: int
    pieces: int
    split: int                             # tiles cut into `pieces` along K (spec.split_tiles)
    blocks: int                            # the launch's grid (spec.launch)
    runs: tuple[tuple[int, float, float, str, int], ...]   # (slot, start, duration, kind, tile)

    @property
    def makespan(self) -> float:
        return max(start + dur for _, start, dur, _, _ in self.runs)

    @property
    def last_wave(self) -> int:
        """Tiles in the last partial wave (0: the waves are full)."""
        return self.tiles % self.slots


def waves(spec: KernelSpec, params: Params, problem: Problem, slots: int) -> Wave:
    """Blocks in grid order (spec.launch: the whole tiles, then the pieces of the split tiles)
    taken by the first free slot. Time in tiles: a whole tile takes 1, a piece 1/pieces of it plus
    PIECE_COST K tiles of its own (the estimate split_tiles decides by)."""
    tiles, tiles_k, pieces = spec.tiles(params, problem), spec.k_steps(params, problem), spec.split(params)
    split = spec.split_count(params, problem, slots)          # the launch's plan (spec.split_tiles)
    blocks = tiles + split * (pieces - 1)
    piece = 1 / pieces + PIECE_COST / tiles_k
    free = [(0.0, s) for s in range(slots)]
    runs = []
    whole = tiles - split
    for b in range(blocks):
        start, slot = heapq.heappop(free)
        if b < whole:
            kind, tile, dur = ("last wave" if b >= tiles - tiles % slots and not split else "whole"), b, 1.0
        else:
            kind, tile, dur = f"piece {(b - whole) // split}", whole + (b - whole) % split, piece
        runs.append((slot, start, dur, kind, tile))
        heapq.heappush(free, (start + dur, slot))
    return Wave(tiles, tiles_k, slots, pieces, split, blocks, tuple(runs))
