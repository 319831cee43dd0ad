"""The types every kernel is described with: tunables, rules, problems, launch geometry.

A `KernelSpec` is the contract between a `.cu` file and the rest of gemmlab: which tunables
the file reads (as -D defines), which values are legal, which combinations break a rule (checked
before anything is compiled, with a message naming the rule), which shapes the kernel refuses,
and how it is launched. Each kernel's spec lives in `gemmlab/specs/`, `registry` collects them;
legal_configs.py walks a spec's tunables and rules for its legal configurations. The spec holds the
contract only: models of what the kernel's code does are its KernelModel (kernel_model.py), and what
the course measures of it is its Programme (course.py).

Every kernel shares one launch contract: a 1-D thread block, blockIdx.x walking the tiles of C
along N and blockIdx.y along M (or a 1-D grid for a kernel that splits tiles), one
`extern "C" sgemm` entry with the signature in `SIGNATURE`.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from .legal_configs import enumerate_legal, pick_extremes

if TYPE_CHECKING:
    from .arch import Arch

# Installed (a wheel, `pip install .`): the kernels are package data, gemmlab/kernels; in the checkout
# (and an editable install) they are the repository's kernels/.
_PACKAGE = Path(__file__).resolve().parent
KERNEL_DIR = _PACKAGE / "kernels" if (_PACKAGE / "kernels").is_dir() else _PACKAGE.parent / "kernels"

SIGNATURE = ("sgemm(int M, int N, int K, float alpha, const float* A, int lda, "
             "const float* B, int ldb, float beta, float* C, int ldc)")

Params = Mapping[str, int]


class IllegalConfig(ValueError):
    """A tunable combination that breaks a rule; raised before anything is compiled."""

    def __init__(self, kernel: str, rule: str, message: str):
        self.kernel, self.rule, self.message = kernel, rule, message
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
class ArchRule:
    """A constraint that depends on the architecture compiled for (arch.Arch): checked before
    compiling for it; the message names the requirement and what to use instead."""
    name: str
    holds: Callable[[Params, "Arch"], bool]
    message: Callable[[Params, "Arch"], str]


# The largest size or leading dimension a kernel's int arguments hold.
INT_MAX = 2**31 - 1


class BadProblem(ValueError):
    """Sizes or leading dimensions no SGEMM can have (a size below 1, a row longer than its leading dimension)."""


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
        for name in ("M", "N", "K", "lda", "ldb", "ldc"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise BadProblem(f"{name} must be a whole number (an int), got {value!r}")
            object.__setattr__(self, name, int(value))      # numpy's integers as Python's
        for name in ("M", "N", "K"):
            if getattr(self, name) < 1:
                raise BadProblem(f"{name} must be >= 1, got {getattr(self, name)}")
        object.__setattr__(self, "lda", self.lda or self.K)
        object.__setattr__(self, "ldb", self.ldb or self.N)
        object.__setattr__(self, "ldc", self.ldc or self.N)
        for ld, row, what in ((self.lda, self.K, "lda"), (self.ldb, self.N, "ldb"), (self.ldc, self.N, "ldc")):
            if ld < row:
                raise BadProblem(f"{what}={ld} is shorter than a row ({row})")
        for name in ("M", "N", "K", "lda", "ldb", "ldc"):
            if getattr(self, name) > INT_MAX:
                raise BadProblem(f"{name}={getattr(self, name)} is past {INT_MAX:,}: the kernels take 32-bit sizes, "
                                 f"as cuBLAS does")

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    @property
    def operand_bytes(self) -> int:
        """The bytes of A, B and C: what a launch moves through DRAM at least."""
        return 4 * (self.M * self.K + self.K * self.N + self.M * self.N)

    @property
    def intensity(self) -> float:
        """FLOPs per byte if every operand crossed DRAM once."""
        return self.flops / self.operand_bytes


@dataclass(frozen=True)
class ShapeRule:
    name: str
    holds: Callable[[Params, Problem], bool]
    message: Callable[[Params, Problem], str]


@dataclass(frozen=True)
class Evidence:
    """What the learner's build must show, as the chapter's kernel does, where the SASS or the
    resource report shows it: `opcode` (at least as many instructions of that opcode prefix in the
    hot loop as the chapter's kernel has), `at_most` (no more of them), `shared_bytes` (the same shared memory per block) or
    `reuse` (at least the chapter's kernel's share of FFMA operands from the reuse cache)."""
    kind: str
    why: str
    opcode: str = ""


@dataclass(frozen=True)
class Exercise:
    """The chapter's "Your turn": the learner rewrites the code between the kernel file's
    `// exercise: begin` and `// exercise: end` lines, starting from `starter` (the same lines with
    the chapter's change taken out and TODO markers where it goes). Checked at `params` (overrides
    on the defaults, where the change only shows in some configurations), and timed at `timing_shape`
    (M, N, K), a shape where the change pays."""
    task: str
    starter: str
    hints: tuple[str, ...]
    evidence: tuple[Evidence, ...] = ()
    params: dict = field(default_factory=dict)
    timing_shape: tuple[int, int, int] = (4096, 4096, 4096)


@dataclass(frozen=True)
class KernelSpec:
    name: str                      # the .cu file's stem (chapter number first): the key everywhere
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
    # Rows x columns of C one thread updates per k step (outer-product kernels): what it loads
    # from shared memory per step, and the FMAs it gets for them.
    thread_tile: Callable[[Params], tuple[int, int]] | None = None
    # Bytes every matrix pointer must be aligned to (16 for kernels that move float4s).
    pointer_alignment: Callable[[Params], int] = field(default=lambda p: 4)
    # Static shared memory the tiles need: checked by a rule before compiling, and against the cubin.
    static_smem: Callable[[Params], int] = field(default=lambda p: 0)
    # Depth along K of the A and B tiles a block stages at each step (TILE, or BK); None for a
    # kernel that stages none. Drawn by the tile walk and the timelines.
    k_tile: Callable[[Params], int] | None = None
    # The chapter's steps: configurations (over the defaults) that switch its additions on one
    # at a time, in order, each with a caption. `record` measures them at course.STEP_SIZE.
    steps: tuple[tuple[str, dict], ...] = ()
    # Pieces along K that the tiles of a last partial wave may be split into (the SPLIT tunable of
    # 11); 1: one block per tile, always.
    split: Callable[[Params], int] = field(default=lambda p: 1)
    # The most tiles one launch may split (the kernel keeps one flag per split tile).
    split_flags: int = 0
    # Pieces along K that every tile of a problem is cut into, each a block of its own (gridDim.z):
    # chapter 13's SPLIT, whose pieces are added up in a workspace; 1: one block per tile.
    k_split: Callable[[Params, "Problem"], int] = field(default=lambda p, pr: 1)
    # Why a problem's tiles run in fewer pieces than the configuration's most (a sentence for the plan's
    # reader, who sees SPLIT in the configuration), or '' where they run in all of them.
    k_split_why: Callable[[Params, "Problem"], str] = field(default=lambda p, pr: "")
    # The chapter's exercise, or None.
    exercise: Exercise | None = None
    # What the kernel needs of the architecture beyond the shared memory every kernel's tiles need
    # (e.g. cp.async); checked by check_arch with that one.
    arch_rules: tuple[ArchRule, ...] = ()

    @property
    def path(self) -> Path:
        return KERNEL_DIR / f"{self.name}.cu"

    @property
    def defaults(self) -> dict[str, int]:
        return {p.name: p.default for p in self.params}

    def tunable(self, name: str) -> Param:
        """A tunable by name; IllegalConfig naming the ones there are if it has none of that name."""
        for p in self.params:
            if p.name == name:
                return p
        raise IllegalConfig(self.name, "known-parameter",
                            f"{name} is not a tunable of this kernel; it has {', '.join(self.defaults) or 'none'}")

    def _all_rules(self) -> tuple[Rule, ...]:
        return (*self.rules, _static_smem_rule(self.static_smem))

    def resolve(self, overrides: Params | None = None) -> dict[str, int]:
        """Defaults merged with overrides, every value checked against its legal list and
        every rule checked. Raises IllegalConfig naming the rule. Each answer is kept (a spec and its rules
        never change): loading the fitted model checks some 500 configurations, in every new process."""
        try:      # the values' types count: True is not the 1 it hashes like
            key = (id(self), tuple((k, type(v), v) for k, v in (overrides or {}).items()))
            known = _RESOLVED.get(key)
        except TypeError:                      # an unhashable value: checked below, and refused
            key, known = None, None
        if known is None or known[0] is not self:
            try:
                known = (self, self._resolve(overrides), None)
            except IllegalConfig as exc:
                known = (self, None, (exc.rule, exc.message))
            if key is not None:
                _RESOLVED[key] = known
        if known[2] is not None:
            raise IllegalConfig(self.name, *known[2])
        return dict(known[1])

    def _resolve(self, overrides: Params | None) -> dict[str, int]:
        """resolve's work, done once for each answer resolve keeps."""
        params = self.defaults
        for key, value in (overrides or {}).items():
            param = self.tunable(key)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value not in param.values:
                raise IllegalConfig(self.name, f"{key}-legal-values",
                                    f"{key}={value!r} is not offered; legal values are {list(param.values)}")
            params[key] = int(value)
        for rule in self._all_rules():
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
        """Every legal configuration, found by assigning the tunables in order and dropping a
        branch as soon as a rule whose tunables are all assigned fails."""
        return [dict(c) for c in self._legal()]

    def _legal(self) -> tuple[dict[str, int], ...]:
        """legal_configs, computed once per spec and process and shared (do not modify)."""
        return enumerate_legal((self.name, self.params), self.params, self._all_rules())

    def explorer_configs(self) -> list[dict[str, int]]:
        """The legal configurations the sliders offer: what `record` measures and `sweep` walks."""
        return [dict(c) for c in self._legal() if all(c[p.name] in p.offered for p in self.params)]

    def extreme_configs(self) -> list[dict[str, int]]:
        """The defaults plus, for each tunable, a legal configuration at its smallest and at its
        largest legal value: what the compile and correctness tests sweep."""
        return [dict(c) for c in pick_extremes((self.name, self.params), self._legal(), self.defaults)]

    def step_configs(self) -> list[dict[str, int]]:
        """The full configurations of the chapter's steps, in order."""
        return [self.resolve(cfg) for _, cfg in self.steps]

    def check_arch(self, params: Params, arch: "Arch") -> None:
        """IllegalConfig naming the rule if `arch` cannot run this configuration."""
        for rule in (*self.arch_rules, _shared_per_block_rule(self)):
            if not rule.holds(params, arch):
                raise IllegalConfig(self.name, rule.name, rule.message(params, arch))

    def runs_on(self, params: Params, arch: "Arch") -> bool:
        try:
            self.check_arch(params, arch)
            return True
        except IllegalConfig:
            return False

    def check_shape(self, params: Params, problem: Problem) -> None:
        for rule in self.shape_rules:
            if not rule.holds(params, problem):
                raise UnsupportedShape(self.name, rule.name, rule.message(params, problem))

    def tiles(self, params: Params, problem: Problem) -> int:
        """Tiles of C, one block each unless split."""
        rows, cols = self.tile(params)
        return -(-problem.M // rows) * -(-problem.N // cols)

    def k_steps(self, params: Params, problem: Problem) -> int:
        """Steps of a whole tile's K loop (1 for a kernel that stages no tiles)."""
        return -(-problem.K // self.k_tile(params)) if self.k_tile else 1

    def piece_steps(self, params: Params, problem: Problem) -> int:
        """Steps of the longest K loop a block runs: a whole tile's, or with k_split a piece's."""
        return -(-self.k_steps(params, problem) // self.k_split(params, problem))

    def split_count(self, params: Params, problem: Problem, slots: int) -> int:
        """Tiles the launch cuts into split(params) pieces along K (split_tiles's plan; 0: none)."""
        pieces = self.split(params)
        if pieces < 2:
            return 0
        grid, _ = self.launch(params, problem, slots)
        return (grid[0] * grid[1] * grid[2] - self.tiles(params, problem)) // (pieces - 1)

    def launch(self, params: Params, problem: Problem,
               slots: int | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) for a problem: one block per tile of C (times k_split(params) along z, one per
        piece). For a kernel that splits tiles of a last wave (split(params) > 1), given `slots` (blocks
        the GPU runs at once: SMs x blocks per SM): a 1-D grid, the whole tiles first, then the pieces
        of the last `split_tiles` tiles."""
        rows, cols = self.tile(params)
        tiles_n, tiles_m = -(-problem.N // cols), -(-problem.M // rows)
        block = (self.threads(params), 1, 1)
        pieces = self.split(params)
        if pieces > 1:
            tiles = tiles_n * tiles_m
            split = split_tiles(tiles, self.k_steps(params, problem), slots, pieces, self.split_flags) if slots else 0
            blocks = tiles + split * (pieces - 1)
            if blocks > 2**31 - 1:
                raise UnsupportedShape(self.name, "grid-x-limit",
                                       f"{problem.M} x {problem.N} needs {blocks} blocks, CUDA allows 2^31 - 1")
            return (blocks, 1, 1), block
        if tiles_m > 65535:
            raise UnsupportedShape(self.name, "grid-y-limit",
                                   f"M={problem.M} needs {tiles_m} block rows, CUDA allows 65535")
        return (tiles_n, tiles_m, self.k_split(params, problem)), block

    def config_label(self, params: Params) -> str:
        return " ".join(f"{k}={v}" for k, v in params.items())

    def changes_label(self, params: Params) -> str:
        """The tunables that differ from the defaults ('' for the defaults themselves)."""
        defaults = self.defaults
        return " ".join(f"{k}={v}" for k, v in params.items() if v != defaults[k])


# resolve's answers: (id(spec), the overrides with their types) -> (spec, configuration or None, broken rule or None)
_RESOLVED: dict[tuple, tuple] = {}


def _static_smem_rule(bytes_: Callable[[Params], int], limit: int = 48 * 1024) -> Rule:
    return Rule(
        "static-shared-memory",
        lambda p: bytes_(p) <= limit,
        lambda p: (f"the tiles need {bytes_(p)} bytes of shared memory; a block may declare at most "
                   f"{limit} bytes statically"),
    )


def _shared_per_block_rule(spec: "KernelSpec") -> ArchRule:
    def need(p: Params) -> int:
        return spec.static_smem(p) + spec.dynamic_smem(p)
    return ArchRule(
        "shared-memory-per-block",
        lambda p, a: need(p) <= a.shared_per_block,
        lambda p, a: (f"this configuration's tiles need {need(p)} bytes of shared memory per block; a block on "
                      f"{a.name} ({a.examples}) may have at most {a.shared_per_block} ({a.shared_per_block // 1024} "
                      f"KiB): pick smaller tiles{' or fewer STAGES' if 'STAGES' in p else ''}"),
    )


# --- splitting the last wave along K (the SPLIT tunable) ---------------------------------------

# What a piece of a split tile costs beyond its share of K, in K tiles: measured on the H100, where 9
# pieces of 28 K tiles each made 4096^3 1.2% slower instead of 2.8% faster (docs/final-kernel-search.md).
PIECE_COST = 5


def split_time(tiles: int, tiles_k: int, slots: int, pieces: int, split: int) -> float:
    """The time `tiles` take on `slots` block slots, in units of one whole tile's time, with the last
    `split` of them cut into `pieces` along K: a piece costs 1/pieces of a tile's time plus
    PIECE_COST of its `tiles_k` K tiles (filling the pipeline, and adding into C)."""
    if not split:
        return float(-(-tiles // slots))
    return (tiles - split) / slots + -(-split * pieces // slots) * (1 / pieces + PIECE_COST / tiles_k)


def split_tiles(tiles: int, tiles_k: int, slots: int, pieces: int, flags: int) -> int:
    """How many of the last tiles to split into `pieces` runs along K (0: none), so that the
    last wave keeps every one of `slots` block slots busy, splitting at most `flags` tiles.

    Tiles run in waves of `slots`. The candidates are the tiles of the last partial wave, and those
    plus one full wave; the choice is the one with the shortest split_time, and splitting must save
    at least 1% of a tile's time."""
    if pieces < 2 or tiles_k < pieces or slots < 1:
        return 0
    best, best_time = 0, split_time(tiles, tiles_k, slots, pieces, 0)
    for split in (tiles % slots, tiles % slots + slots):
        if not 0 < split <= min(tiles, flags):
            continue
        time = split_time(tiles, tiles_k, slots, pieces, split)
        if time < best_time - 0.01:
            best, best_time = split, time
    return best
