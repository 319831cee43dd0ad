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
    values: tuple[int, ...]
    default: int
    doc: str


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
        for rule in self.rules:
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
        names = [p.name for p in self.params]
        combos = (dict(zip(names, values)) for values in itertools.product(*(p.values for p in self.params)))
        return [c for c in combos if self.is_legal(c)]

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

    def launch(self, params: Params, problem: Problem) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) for a problem: one block per tile of C."""
        rows, cols = self.tile(params)
        grid = (-(-problem.N // cols), -(-problem.M // rows), 1)
        if grid[1] > 65535:
            raise UnsupportedShape(self.name, "grid-y-limit",
                                   f"M={problem.M} needs {grid[1]} block rows, CUDA allows 65535")
        return grid, (self.threads(params), 1, 1)

    def config_label(self, params: Params) -> str:
        return " ".join(f"{k}={v}" for k, v in params.items())


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
            _smem_rule(lambda p: 2 * p["TILE"] * p["TILE"] * 4),
        ),
        owner=owner,
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
