"""The registry: the one place where gemmlab's kernels and their tunables are described.

Sliders, the compile cache, tests, the CLI, the record sweep and the plots all read
`KERNELS`; nothing else lists kernel names or legal values.

Every kernel shares one launch contract: a 1-D thread block, blockIdx.x walking the tiles
of C along N and blockIdx.y along M, one `extern "C" sgemm` entry with the signature in
`SIGNATURE`. A spec only says how many threads a block has and how large a tile of C it owns.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"

SIGNATURE = ("sgemm(int M, int N, int K, float alpha, const float* A, int lda, "
             "const float* B, int ldb, float beta, float* C, int ldc)")

# The matrix sizes the chapter explorers offer (and so the sizes `record` measures).
EXPLORER_SIZES = (1024, 2048, 4096)
STUDY_SIZE = 4096                  # where a chapter's steps (KernelSpec.studies) are measured
# The shapes chapter 09's ladder measures every kernel at (M, N, K).
LADDER_SHAPES = ((256, 256, 256), (512, 512, 512),
                 (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                 (4096, 4096, 1024), (8192, 1024, 4096))
# The shapes chapter 10 puts the final kernel against cuBLAS at (M, N, K), with FINAL_REPS timed
# runs of each, interleaved.
FINAL_SHAPES = ((4096, 4096, 4096), (2048, 2048, 2048), (6144, 6144, 6144), (8192, 8192, 8192),
                (4096, 4096, 1024), (8192, 1024, 4096))
FINAL_REPS = 30
# What chapter 10's table tries at each of FINAL_SHAPES before timing the fastest there FINAL_REPS
# times: a configuration per shape, as a tuned library picks one. Overrides on 10's defaults: 128 x 256
# tiles, one block per SM, with SPLIT off and on; and 128 x 128 tiles of 4 warps, two blocks per SM
# (search 8 in docs/final-kernel-search.md); 3 or 4 stages each, copies spread 2 or 4 at a time.
FINAL_CANDIDATES = tuple(
    {**tiles, "STAGES": stages, "SPREAD": spread, "KUNROLL": 16, "GROUP": 1, "SPLIT": split}
    for tiles, splits in (({"BM": 128, "BN": 256, "WM": 64, "WN": 64, "MINB": 1}, (1, 4, 5, 9)),
                          ({"BM": 128, "BN": 128, "WM": 32, "WN": 64, "MINB": 2}, (1,)))
    for stages in (3, 4) for spread in (2, 4) for split in splits)
# The sizes chapter 00 sweeps cuBLAS over.
CUBLAS_SIZES = (256, 512, 1024, 2048, 4096, 6144, 8192)

Params = Mapping[str, int]


class IllegalConfig(ValueError):
    """A tunable combination that breaks a rule; raised before anything is compiled."""

    def __init__(self, kernel: str, rule: str, message: str):
        self.kernel, self.rule = kernel, rule
        super().__init__(f"{kernel}: rule '{rule}' violated: {message}")


class UnsupportedShape(ValueError):
    """A problem shape (or leading dimension) a kernel declares it cannot compute."""

    def __init__(self, kernel: str, rule: str, message: str):
        self.kernel, self.rule = kernel, rule
        super().__init__(f"{kernel}: cannot run this shape, rule '{rule}': {message}")


@dataclass(frozen=True)
class Param:
    name: str
    values: tuple[int, ...]        # every legal value: what `tune` searches
    default: int
    doc: str
    slider: tuple[int, ...] = ()   # the values the notebook sliders offer (and records cover); () = all

    @property
    def offered(self) -> tuple[int, ...]:
        return self.slider or self.values


@dataclass(frozen=True)
class Rule:
    """A constraint on tunables. `holds(p)` is checked before compiling; `message(p)` says
    what is wrong and what to do, in words a reader understands."""
    name: str
    holds: Callable[[Params], bool]
    message: Callable[[Params], str]


@dataclass(frozen=True)
class Problem:
    """One SGEMM call, row-major like NumPy: C[M,N] = alpha * A[M,K] @ B[K,N] + beta * C."""
    M: int
    N: int
    K: int
    lda: int = 0  # 0 means "the row length" (K, N and N)
    ldb: int = 0
    ldc: int = 0
    alpha: float = 1.0
    beta: float = 0.0

    def __post_init__(self):
        for name in ("M", "N", "K"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        object.__setattr__(self, "lda", self.lda or self.K)
        object.__setattr__(self, "ldb", self.ldb or self.N)
        object.__setattr__(self, "ldc", self.ldc or self.N)
        for ld, row, what in ((self.lda, self.K, "lda"), (self.ldb, self.N, "ldb"), (self.ldc, self.N, "ldc")):
            if ld < row:
                raise ValueError(f"{what}={ld} is shorter than a row ({row})")

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K


@dataclass(frozen=True)
class ShapeRule:
    name: str
    holds: Callable[[Params, Problem], bool]
    message: Callable[[Params, Problem], str]


@dataclass(frozen=True)
class KernelSpec:
    name: str                      # e.g. "02_smem_tiling": the file stem, the key everywhere
    chapter: int
    title: str                     # what a plot legend says
    technique: str                 # one line: what this kernel adds
    params: tuple[Param, ...]
    threads: Callable[[Params], int]              # threads per (1-D) block
    tile: Callable[[Params], tuple[int, int]]     # (rows, cols) of C one block owns
    rules: tuple[Rule, ...] = ()
    shape_rules: tuple[ShapeRule, ...] = ()
    dynamic_smem: Callable[[Params], int] = field(default=lambda p: 0)
    stages_tiles: bool = True      # False: threads read A and B straight from global memory
    # Which thread of the block computes element (r, c) of the block's C tile: a model of the
    # kernel's index arithmetic, drawn by plots.thread_map (a test checks it is a fair partition).
    owner: Callable[[Params, int, int], int] | None = None
    # Bytes every matrix pointer must be aligned to (16 for kernels that move float4s).
    pointer_alignment: Callable[[Params], int] = field(default=lambda p: 4)
    # Static shared memory the tiles need: checked by a rule before compiling, and against the cubin.
    static_smem: Callable[[Params], int] = field(default=lambda p: 0)
    # For the bank-conflict picture: the shared-memory word each lane of warp 0 reads at step k.
    bank_words: Callable[[Params, int], list[int]] | None = None
    # The chapter's steps: configurations (over the defaults) that switch its additions on one
    # at a time, in order, each with a caption. `record` measures them at 4096 and profiles
    # their stalls; lessons.steps shows them.
    studies: tuple[tuple[str, dict], ...] = ()
    # Pieces along K that the tiles of a last partial wave may be split into (the SPLIT tunable of
    # 10); 1: one block per tile, always.
    split: Callable[[Params], int] = field(default=lambda p: 1)

    @property
    def path(self) -> Path:
        return KERNEL_DIR / f"{self.name}.cu"

    @property
    def defaults(self) -> dict[str, int]:
        return {p.name: p.default for p in self.params}

    def resolve(self, overrides: Params | None = None) -> dict[str, int]:
        """Defaults merged with overrides, every value checked against its legal list and
        every rule checked. Raises IllegalConfig naming the rule."""
        params = self.defaults
        for key, value in (overrides or {}).items():
            known = {p.name: p for p in self.params}
            if key not in known:
                raise IllegalConfig(self.name, "known-parameter",
                                    f"{key} is not a tunable of this kernel; it has {', '.join(known) or 'none'}")
            if int(value) not in known[key].values:
                raise IllegalConfig(self.name, f"{key}-legal-values",
                                    f"{key}={value} is not offered; legal values are {list(known[key].values)}")
            params[key] = int(value)
        for rule in (*self.rules, _smem_rule(self.static_smem)):
            if not rule.holds(params):
                raise IllegalConfig(self.name, rule.name, rule.message(params))
        return params

    def is_legal(self, overrides: Params) -> bool:
        try:
            self.resolve(overrides)
            return True
        except IllegalConfig:
            return False

    def legal_configs(self) -> list[dict[str, int]]:
        key = (self.name, self.params)         # the rules come with the name
        if key not in _LEGAL:
            names = [p.name for p in self.params]
            combos = (dict(zip(names, values)) for values in itertools.product(*(p.values for p in self.params)))
            _LEGAL[key] = tuple(c for c in combos if self.is_legal(c))
        return [dict(c) for c in _LEGAL[key]]

    def explorer_configs(self) -> list[dict[str, int]]:
        """The legal configurations the sliders offer: what `record` measures and `sweep` walks."""
        return [c for c in self.legal_configs() if all(c[p.name] in p.offered for p in self.params)]

    def extreme_configs(self) -> list[dict[str, int]]:
        """The defaults plus, for each tunable, a legal configuration at its smallest and at its
        largest legal value: what the compile and correctness tests sweep."""
        legal = self.legal_configs()
        picked = [self.defaults]
        for p in self.params:
            used = sorted({c[p.name] for c in legal})
            for value in (used[0], used[-1]):
                candidates = [c for c in legal if c[p.name] == value]
                # among them, the one furthest from the defaults in the other tunables
                choice = max(candidates, key=lambda c: sum(c[k] != v for k, v in self.defaults.items()))
                if choice not in picked:
                    picked.append(choice)
        return picked

    def check_shape(self, params: Params, problem: Problem) -> None:
        for rule in self.shape_rules:
            if not rule.holds(params, problem):
                raise UnsupportedShape(self.name, rule.name, rule.message(params, problem))

    def launch(self, params: Params, problem: Problem,
               slots: int | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) for a problem: one block per tile of C. For a kernel that splits tiles
        (SPLIT > 1), given `slots` (blocks the GPU runs at once: SMs x blocks per SM): a 1-D grid,
        the whole tiles first, then SPLIT pieces of each of the last `split_tiles` tiles."""
        rows, cols = self.tile(params)
        tiles_n, tiles_m = -(-problem.N // cols), -(-problem.M // rows)
        block = (self.threads(params), 1, 1)
        pieces = self.split(params)
        if pieces > 1:
            tiles = tiles_n * tiles_m
            split = split_tiles(tiles, -(-problem.K // params["BK"]), slots, pieces) if slots else 0
            blocks = tiles + split * (pieces - 1)
            if blocks > 2**31 - 1:
                raise UnsupportedShape(self.name, "grid-x-limit",
                                       f"{problem.M} x {problem.N} needs {blocks} blocks, CUDA allows 2^31 - 1")
            return (blocks, 1, 1), block
        if tiles_m > 65535:
            raise UnsupportedShape(self.name, "grid-y-limit",
                                   f"M={problem.M} needs {tiles_m} block rows, CUDA allows 65535")
        return (tiles_n, tiles_m, 1), block

    def config_label(self, params: Params) -> str:
        return " ".join(f"{k}={v}" for k, v in params.items())

    def changes_label(self, params: Params) -> str:
        """The tunables that differ from the defaults ('' for the defaults themselves)."""
        return " ".join(f"{k}={v}" for k, v in params.items() if v != self.defaults[k])


# Legal configurations, worked out once per spec (10 has over 100,000 combinations to check).
_LEGAL: dict[tuple, tuple[dict[str, int], ...]] = {}

SPLIT_FLAGS = 4096   # kernels/10_final.cu: the most tiles one launch may split (one flag each)
# What a piece of a split tile costs beyond its share of K, in K tiles: measured on the H100, where 9
# pieces of 28 K tiles each made 4096^3 1.2% slower instead of 2.8% faster (docs/final-kernel-search.md).
PIECE_COST = 5


def split_tiles(tiles: int, tiles_k: int, slots: int, pieces: int) -> int:
    """How many of the last tiles to split into `pieces` runs along K (0: none), so that the
    last wave keeps every one of `slots` block slots busy.

    Tiles run in waves of `slots`. The candidates are the tiles of the last partial wave, and those
    plus one full wave. A piece costs 1/pieces of a tile's time plus PIECE_COST K tiles (filling
    the pipeline, and adding into C); the choice is the one with the shortest estimate, and
    splitting must save at least 1% of a tile's time."""
    if pieces < 2 or tiles_k < pieces or slots < 1:
        return 0
    best, best_time = 0, float(-(-tiles // slots))
    for split in (tiles % slots, tiles % slots + slots):
        if not 0 < split <= min(tiles, SPLIT_FLAGS):
            continue
        time = (tiles - split) / slots + -(-split * pieces // slots) * (1 / pieces + PIECE_COST / tiles_k)
        if time < best_time - 0.01:
            best, best_time = split, time
    return best


# --- rules shared by several kernels -------------------------------------------------------

def _block_size_rule(threads: Callable[[Params], int]) -> Rule:
    return Rule(
        "block-size",
        lambda p: 32 <= threads(p) <= 1024,
        lambda p: (f"this configuration makes a block of {threads(p)} threads; CUDA allows at most 1024 "
                   f"and we ask for at least one full warp (32)"),
    )


def _smem_rule(bytes_: Callable[[Params], int], limit: int = 48 * 1024) -> Rule:
    return Rule(
        "static-shared-memory",
        lambda p: bytes_(p) <= limit,
        lambda p: (f"the tiles need {bytes_(p)} bytes of shared memory; a block may declare at most "
                   f"{limit} bytes statically"),
    )


def _divides(name: str, what: str, num: Callable[[Params], int], den: Callable[[Params], int]) -> Rule:
    return Rule(name, lambda p: den(p) > 0 and num(p) % den(p) == 0,
                lambda p: f"{what}: {num(p)} is not a multiple of {den(p)}")


def _vector_rows(kernel_vectorizes: Callable[[Params], bool] = lambda p: True) -> ShapeRule:
    return ShapeRule(
        "16-byte-rows",
        lambda p, pr: not kernel_vectorizes(p) or all(ld % 4 == 0 for ld in (pr.lda, pr.ldb, pr.ldc)),
        lambda p, pr: (f"this kernel moves 4 floats (16 bytes) per access, so every row must start 16-byte "
                       f"aligned: lda, ldb and ldc must be multiples of 4 (got {pr.lda}, {pr.ldb}, {pr.ldc}); "
                       f"pad the rows or use a scalar kernel"),
    )


def _warp_grid_rules(threads: Callable[[Params], int]) -> tuple[Rule, ...]:
    """08 and 10: warp tiles must tile the block tile, and the block must be a legal size."""
    return (
        _divides("warps-tile-block-rows", "the block tile's rows must split into warp tiles (BM / WM)",
                 lambda p: p["BM"], lambda p: p["WM"]),
        _divides("warps-tile-block-cols", "the block tile's columns must split into warp tiles (BN / WN)",
                 lambda p: p["BN"], lambda p: p["WN"]),
        _block_size_rule(threads),
    )


def _accumulator_rule() -> Rule:
    """08 and 10: a thread holds WM*WN/32 accumulators in registers."""
    acc = lambda p: (p["WM"] * p["WN"]) // 32
    return Rule("accumulators-fit-registers", lambda p: acc(p) <= 128,
                lambda p: (f"each thread would hold {acc(p)} accumulators; more than 128 "
                           f"leaves too few of the 255 registers for operands and addresses"))


def _outer_owner(p: Params, r: int, c: int) -> int:
    """05-07: thread (tr, tc) owns the TM x TN patch at (tr * TM, tc * TN)."""
    return (r // p["TM"]) * (p["BN"] // p["TN"]) + c // p["TN"]


def _warp_geometry(p: Params) -> dict[str, int]:
    wmiter = (p["WM"] * p["WN"]) // (32 * p["TM"] * p["TN"] * p["WNITER"]) or 1
    return {"WMITER": wmiter, "WSUBM": p["WM"] // wmiter, "WSUBN": p["WN"] // p["WNITER"]}


def _warp_owner(p: Params, r: int, c: int) -> int:
    g = _warp_geometry(p)
    warp = (r // p["WM"]) * (p["BN"] // p["WN"]) + c // p["WN"]
    lane = (r % p["WM"] % g["WSUBM"]) // p["TM"] * (g["WSUBN"] // p["TN"]) + (c % p["WN"] % g["WSUBN"]) // p["TN"]
    return warp * 32 + lane


def _tile_smem(stages: Callable[[Params], int]) -> Callable[[Params], int]:
    """Bytes of the (transposed, padded) A tile and the B tile, times the number of stages."""
    return lambda p: stages(p) * 4 * p["BK"] * (p["BM"] + 4 + p["BN"])


def _tile_load_rules(threads: Callable[[Params], int], per_load: int) -> tuple[Rule, ...]:
    return (
        _divides("a-tile-loads", f"the A tile (BM*BK floats) must split evenly into {per_load}-float loads per thread",
                 lambda p: p["BM"] * p["BK"], lambda p: per_load * threads(p)),
        _divides("b-tile-loads", f"the B tile (BK*BN floats) must split evenly into {per_load}-float loads per thread",
                 lambda p: p["BK"] * p["BN"], lambda p: per_load * threads(p)),
    )


def _outer_threads(p: Params) -> int:
    """05-07: one thread per TM x TN patch of the block tile."""
    return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])


def _outer_rules(vector: bool) -> tuple[Rule, ...]:
    return (
        _divides("tm-divides-bm", "BM must split into rows of TM", lambda p: p["BM"], lambda p: p["TM"]),
        _divides("tn-divides-bn", "BN must split into columns of TN", lambda p: p["BN"], lambda p: p["TN"]),
        _block_size_rule(_outer_threads),
        *_tile_load_rules(_outer_threads, 4 if vector else 1),
    )


# --- the kernels ------------------------------------------------------------------------------

def _naive() -> KernelSpec:
    threads = lambda p: p["BLOCK_M"] * p["BLOCK_N"]
    return KernelSpec(
        name="01_naive", chapter=1, title="01 naive",
        technique="one thread per element of C, straight from global memory",
        params=(
            Param("BLOCK_M", (32, 64, 128, 256), 32, "rows of C per block; consecutive threads take consecutive rows"),
            Param("BLOCK_N", (1, 2, 4, 8, 16, 32), 4, "columns of C per block"),
        ),
        threads=threads,
        tile=lambda p: (p["BLOCK_M"], p["BLOCK_N"]),
        rules=(_block_size_rule(threads),),
        stages_tiles=False,
        owner=lambda p, r, c: r + c * p["BLOCK_M"],          # row fastest
    )


def _tiled(name: str, chapter: int, title: str, technique: str, lanes_along_rows: bool) -> KernelSpec:
    threads = lambda p: p["TILE"] * p["TILE"] // p["OUTPUTS"]
    rows_of_threads = lambda p: p["TILE"] // p["OUTPUTS"]
    if lanes_along_rows:   # 02: fast index f = row, slow index s = column % (TILE / OUTPUTS)
        owner = lambda p, r, c: r + (c % rows_of_threads(p)) * p["TILE"]
    else:                  # 03: fast index f = column, slow index s = row % (TILE / OUTPUTS)
        owner = lambda p, r, c: c + (r % rows_of_threads(p)) * p["TILE"]
    return KernelSpec(
        name=name, chapter=chapter, title=title, technique=technique,
        params=(
            Param("TILE", (8, 16, 32, 64), 32, "edge of the square tile of C a block owns, and the K step"),
            Param("OUTPUTS", (1, 2, 4, 8), 4, "elements of C each thread computes (the block has TILE*TILE/OUTPUTS threads)"),
        ),
        threads=threads,
        tile=lambda p: (p["TILE"], p["TILE"]),
        rules=(
            Rule("outputs-divide-tile", lambda p: p["TILE"] % p["OUTPUTS"] == 0,
                 lambda p: f"OUTPUTS={p['OUTPUTS']} must divide TILE={p['TILE']} so every thread gets whole rows"),
            _block_size_rule(threads),
        ),
        owner=owner,
        static_smem=lambda p: 2 * p["TILE"] * p["TILE"] * 4,
    )


def _bank_conflicts() -> KernelSpec:
    base = _tiled("04_bank_conflicts", 4, "04 bank conflicts",
                  "03 with the B tile stored transposed; LAYOUT: 0 conflicting, 1 padded, 2 XOR-swizzled",
                  lanes_along_rows=False)
    stride = lambda p: p["TILE"] + 1 if p["LAYOUT"] == 1 else p["TILE"]

    def bt_word(p: Params, n: int, k: int) -> int:  # kernels/04_bank_conflicts.cu, bt()
        return n * stride(p) + ((k ^ (n % p["TILE"])) if p["LAYOUT"] == 2 else k)
    return KernelSpec(
        **{**base.__dict__,
           "params": (Param("TILE", (16, 32, 64), 32, "edge of the square tile of C a block owns, and the K step"),
                      Param("OUTPUTS", (4, 8), 4, "elements of C each thread computes"),
                      Param("LAYOUT", (0, 1, 2), 0, "0: B tile transposed as is (conflicts), 1: padded rows, 2: XOR swizzle")),
           "rules": base.rules,
           "static_smem": lambda p: 4 * p["TILE"] * (p["TILE"] + stride(p)),
           # the word each lane of warp 0 reads in the inner loop, at step k
           "bank_words": lambda p, k: [bt_word(p, lane % p["TILE"], k) for lane in range(32)]},
    )


def _register_tiling() -> KernelSpec:
    return KernelSpec(
        name="05_register_tiling", chapter=5, title="05 register tiling",
        technique="each thread accumulates a TM x TN tile of C in registers with outer products",
        params=(
            Param("BM", (64, 128), 128, "rows of the block's C tile"),
            Param("BN", (128,), 128, "columns of the block's C tile"),
            Param("BK", (8, 16), 8, "K step: depth of the A and B tiles"),
            Param("TM", (4, 8), 8, "rows of C per thread"),
            Param("TN", (1, 4, 8), 8, "columns of C per thread (TN=1: the 1D version, a column of TM)"),
        ),
        threads=_outer_threads, tile=lambda p: (p["BM"], p["BN"]),
        rules=_outer_rules(vector=False),
        owner=_outer_owner,
        static_smem=lambda p: 4 * p["BK"] * (p["BM"] + p["BN"]),
    )


def _vectorize() -> KernelSpec:
    return KernelSpec(
        name="06_vectorize", chapter=6, title="06 unrolled + vectorized",
        technique="float4 global loads and stores, transposed A tile for 128-bit shared loads, #pragma unroll",
        params=(
            Param("BM", (128,), 128, "rows of the block's C tile"),
            Param("BN", (128,), 128, "columns of the block's C tile"),
            Param("BK", (8, 16), 8, "K step"),
            Param("TM", (8,), 8, "rows of C per thread"),
            Param("TN", (4, 8), 8, "columns of C per thread (a multiple of 4: float4 stores)"),
            Param("VECTORIZE", (0, 1), 1, "1: 128-bit global loads and stores; 0: 32-bit"),
            Param("UNROLL", (1, 4, 8, 16), 8, "#pragma unroll factor of the k loop over the tile"),
        ),
        threads=_outer_threads, tile=lambda p: (p["BM"], p["BN"]),
        rules=_outer_rules(vector=True) + (
            Rule("unroll-within-tile", lambda p: p["UNROLL"] <= p["BK"],
                 lambda p: f"UNROLL={p['UNROLL']} is more than the {p['BK']} steps of the loop (BK)"),),
        shape_rules=(_vector_rows(lambda p: p["VECTORIZE"] == 1),),
        owner=_outer_owner,
        static_smem=_tile_smem(lambda p: 1),
        pointer_alignment=lambda p: 16 if p["VECTORIZE"] else 4,
    )


def _prefetch() -> KernelSpec:
    stages = lambda p: 2 if p["PREFETCH"] else 1
    return KernelSpec(
        name="07_prefetch", chapter=7, title="07 prefetching",
        technique="double-buffered shared tiles: the next tile's loads are in flight during the math",
        params=(
            Param("BM", (64, 128), 128, "rows of the block's C tile"),
            Param("BN", (128,), 128, "columns of the block's C tile"),
            Param("BK", (8, 16), 8, "K step"),
            Param("TM", (8,), 8, "rows of C per thread"),
            Param("TN", (4, 8), 8, "columns of C per thread"),
            Param("PREFETCH", (0, 1), 1, "1: two shared stages, loads of tile t+1 during the math of tile t"),
        ),
        threads=_outer_threads, tile=lambda p: (p["BM"], p["BN"]),
        rules=_outer_rules(vector=True),
        shape_rules=(_vector_rows(),),
        owner=_outer_owner,
        static_smem=_tile_smem(stages),
        pointer_alignment=lambda p: 16,
    )


def _warp_tiling() -> KernelSpec:
    threads = lambda p: (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32
    g = _warp_geometry
    return KernelSpec(
        name="08_warp_tiling", chapter=8, title="08 warp tiling",
        technique="block tile -> warp tile -> WMITER x WNITER thread patches of TM x TN (double-buffered as 07)",
        params=(
            Param("BM", (128,), 128, "rows of the block's C tile"),
            Param("BN", (128,), 128, "columns of the block's C tile"),
            Param("BK", (8, 16), 16, "K step"),
            Param("WM", (32, 64), 64, "rows of a warp's C tile"),
            Param("WN", (32, 64), 32, "columns of a warp's C tile"),
            Param("WNITER", (1, 2, 4), 2, "sub-tiles across a warp tile's columns"),
            Param("TM", (4, 8), 4, "rows of a thread's patch"),
            Param("TN", (4,), 4, "columns of a thread's patch"),
            Param("UNROLL", (4, 8, 16), 16, "#pragma unroll factor of the k loop over the tile", slider=(8, 16)),
            *_snake_interior_params(),
        ),
        threads=threads, tile=lambda p: (p["BM"], p["BN"]),
        rules=(
            *_warp_grid_rules(threads),
            Rule("warp-tile-fits-lanes",
                 lambda p: (p["WM"] * p["WN"]) % (32 * p["TM"] * p["TN"] * p["WNITER"]) == 0
                 and p["WN"] % p["WNITER"] == 0 and p["WM"] % g(p)["WMITER"] == 0
                 and g(p)["WSUBM"] % p["TM"] == 0 and g(p)["WSUBN"] % p["TN"] == 0
                 and (g(p)["WSUBM"] // p["TM"]) * (g(p)["WSUBN"] // p["TN"]) == 32,
                 lambda p: (f"a {p['WM']} x {p['WN']} warp tile cannot be cut into WNITER={p['WNITER']} column "
                            f"sub-tiles whose {p['TM']} x {p['TN']} patches give exactly 32 lanes one patch each "
                            f"(it needs WM*WN = 32*TM*TN*WMITER*WNITER with whole sub-tiles)")),
            _accumulator_rule(),
            *_tile_load_rules(threads, 4),
            Rule("unroll-within-tile", lambda p: p["UNROLL"] <= p["BK"],
                 lambda p: f"UNROLL={p['UNROLL']} is more than the {p['BK']} steps of the loop (BK)"),
        ),
        shape_rules=(_vector_rows(),),
        owner=_warp_owner,
        static_smem=_tile_smem(lambda p: 2),
        pointer_alignment=lambda p: 16,
        studies=_snake_interior_studies({"WN": 64, "TM": 8, "UNROLL": 8}),
    )


def _snake_interior_params() -> tuple[Param, ...]:
    # The sliders keep both on; the chapter's steps (studies) measure them off.
    return (Param("SNAKE", (0, 1), 1, "1: odd rows of the outer product run backwards (operand reuse); 0: row by row",
                  slider=(1,)),
            Param("INTERIOR", (0, 1), 1, "1: blocks inside the matrices load without bounds checks; 0: every "
                  "load checked", slider=(1,)))


def _snake_interior_studies(base: dict) -> tuple[tuple[str, dict], ...]:
    return (("FFMAs row by row, every load checked", {**base, "SNAKE": 0, "INTERIOR": 0}),
            ("+ SNAKE: odd rows backwards", {**base, "SNAKE": 1, "INTERIOR": 0}),
            ("+ INTERIOR: unchecked loads inside", {**base, "SNAKE": 1, "INTERIOR": 1}))


def _final() -> KernelSpec:
    threads = lambda p: (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32
    accumulators = lambda p: (p["WM"] * p["WN"]) // 32

    def owner(p: Params, r: int, c: int) -> int:   # kernels/10_final.cu: lanes 4 x 8 in 16 x 32 sub-tiles
        warp = (r // p["WM"]) * (p["BN"] // p["WN"]) + c // p["WN"]
        return warp * 32 + (r % 16) // 4 * 8 + (c % 32) // 4
    smem = lambda p: p["STAGES"] * 4 * p["BK"] * (p["BM"] + 4 + p["BN"])
    return KernelSpec(
        name="10_final", chapter=10, title="10 final",
        technique="08's warp tiling fed by cp.async copies through a STAGES-deep shared-memory pipeline",
        params=(
            Param("BM", (64, 128, 256), 128, "rows of the block's C tile", slider=(128,)),
            Param("BN", (64, 128, 256), 256, "columns of the block's C tile", slider=(128, 256)),
            Param("BK", (8, 16, 32), 16, "K step: depth of one pipeline stage", slider=(8, 16)),
            Param("WM", (32, 64), 64, "rows of a warp's C tile (sub-tiles of 16 rows)", slider=(64,)),
            Param("WN", (32, 64, 128), 64, "columns of a warp's C tile (sub-tiles of 32 columns)", slider=(64,)),
            Param("STAGES", (2, 3, 4), 4, "shared-memory buffers in the copy pipeline"),
            Param("KUNROLL", (4, 8, 16, 32), 16, "k steps unrolled at a time within a tile (code size)",
                  slider=(4, 8, 16)),
            Param("GROUP", (1, 8), 8, "tile rows walked together, column by column (L2 reuse); 1: row by row"),
            Param("MINB", (1, 2), 1, "blocks per SM promised to the compiler (__launch_bounds__): caps registers",
                  slider=(1,)),
            *_snake_interior_params(),
            Param("SPREAD", (0, 2, 4), 4,
                  "interior blocks issue the next tile's copies SPREAD at a time between the k steps "
                  "(0: all at once after the barrier, before the math)", slider=(4,)),
            Param("SPLIT", (1, 2, 3, 4, 5, 7, 9, 12, 16), 1,
                  "pieces along K that each tile of a last partial wave is cut into, one block each, so "
                  "that no SM idles at the end (1: never)", slider=(1,)),
        ),
        threads=threads, tile=lambda p: (p["BM"], p["BN"]), split=lambda p: p["SPLIT"],
        rules=(
            *_warp_grid_rules(threads),
            _accumulator_rule(),
            Rule("registers-per-thread",
                 lambda p: accumulators(p) + 64 <= 65536 // (threads(p) * p["MINB"]),
                 lambda p: (f"{p['MINB']} block(s) of {threads(p)} threads leave each thread "
                            f"{65536 // (threads(p) * p['MINB'])} registers, fewer than its "
                            f"{accumulators(p)} accumulators plus 64 for operands and addresses")),
            _divides("a-tile-copies", "the A tile (BM*BK floats) must split evenly into 1-float copies per thread",
                     lambda p: p["BM"] * p["BK"], threads),
            _divides("b-tile-copies", "the B tile (BK*BN floats) must split evenly into 4-float copies per thread",
                     lambda p: p["BK"] * p["BN"], lambda p: 4 * threads(p)),
            Rule("unroll-within-tile", lambda p: p["KUNROLL"] <= p["BK"],
                 lambda p: f"KUNROLL={p['KUNROLL']} is more than the {p['BK']} steps of a tile (BK)"),
            Rule("spread-needs-interior", lambda p: p["SPREAD"] == 0 or p["INTERIOR"] == 1,
                 lambda p: (f"SPREAD={p['SPREAD']} spreads the unchecked copies of interior blocks; with "
                            f"INTERIOR=0 there are none (use SPREAD=0)")),
            Rule("shared-memory-per-block", lambda p: smem(p) <= 227 * 1024,
                 lambda p: (f"{p['STAGES']} stages of these tiles need {smem(p)} bytes of shared memory; "
                            f"a block may have at most 227 KiB (on sm_90)")),
        ),
        owner=owner,
        dynamic_smem=smem,
        studies=(*_snake_interior_studies({"SPREAD": 0}),
                 ("+ SPREAD: the next tile's copies among the FFMAs", {"SNAKE": 1, "INTERIOR": 1, "SPREAD": 4})),
    )


KERNELS: dict[str, KernelSpec] = {
    spec.name: spec for spec in (
        _naive(),
        _tiled("02_smem_tiling", 2, "02 shared-memory tiling",
               "blocks stage TILE x TILE tiles of A and B in shared memory; threads still map to C naively",
               lanes_along_rows=True),
        _tiled("03_coalescing", 3, "03 tiling + coalescing",
               "the same tiles, with consecutive threads on consecutive addresses of A, B and C",
               lanes_along_rows=False),
        _bank_conflicts(),
        _register_tiling(),
        _vectorize(),
        _prefetch(),
        _warp_tiling(),
        _final(),
    )
}


def get(name: str) -> KernelSpec:
    """A spec by name; a unique prefix or chapter number ("02", "2") works too."""
    if name in KERNELS:
        return KERNELS[name]
    matches = [k for k in KERNELS if k.startswith(name) or k.split("_", 1)[0] == name.zfill(2)]
    if len(matches) == 1:
        return KERNELS[matches[0]]
    raise KeyError(f"no kernel '{name}'; known kernels: {', '.join(KERNELS)}")
