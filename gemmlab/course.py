"""The course plan: which sizes and shapes the chapters measure, and what the final chapter searches.

No kernel is named here. The sizes are numbers; a kernel's own measurement programme (which
configurations `record` profiles, which shapes besides the squares it times, a per-shape search) is
a `Programme`, written beside its spec in gemmlab/specs/ and found with `registry.programme`. The
kernel specs and the measurement campaigns read these.
"""
from __future__ import annotations

from dataclasses import dataclass

# The matrix sizes the chapter explorers offer (and so the sizes `record` measures).
EXPLORER_SIZES = (1024, 2048, 4096)
# Where a chapter's steps (KernelSpec.steps) are measured, and where every kernel is profiled.
STEP_SIZE = 4096
# Where the Nsight Compute counters of every kernel are read (Programme.counter_overrides): the
# size the chapters explain, where A and B (64 MiB each) no longer fit in the H100's 50 MiB of L2.
COUNTER_SIZE = 4096
# Chapter 00 times the first call of this chapter's kernel (compile, load, launch) at its defaults.
FIRST_CALL_CHAPTER = 3
# The sizes chapter 00 sweeps cuBLAS over.
CUBLAS_SIZES = (256, 512, 1024, 2048, 4096, 6144, 8192)
# The shapes the ladder chapter measures every kernel at (M, N, K).
LADDER_SHAPES = ((256, 256, 256), (512, 512, 512),
                 (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                 (4096, 4096, 1024), (8192, 1024, 4096))
# The size whose best recorded configuration each kernel takes up the ladder.
LADDER_PICK_SIZE = 4096
# The shapes the final chapter puts its kernel against cuBLAS at (M, N, K), with FINAL_REPS timed
# runs of each, interleaved.
FINAL_SHAPES = ((4096, 4096, 4096), (2048, 2048, 2048), (6144, 6144, 6144), (8192, 8192, 8192),
                (4096, 4096, 1024), (8192, 1024, 4096))
FINAL_REPS = 30
# What the final chapter's table tries at each of FINAL_SHAPES before timing the fastest there
# FINAL_REPS times (overrides on the final kernel's defaults): 128 x 256 tiles, one block per SM,
# with SPLIT off and on; and 128 x 128 tiles of 4 warps, two blocks per SM; 3 or 4 stages each,
# copies spread 2 or 4 at a time. docs/final-kernel-search.md (searches 8 to 10) says why these.
FINAL_CANDIDATES = tuple(
    {**tiles, "STAGES": stages, "SPREAD": spread, "KUNROLL": 16, "GROUP": 1, "SPLIT": split}
    for tiles, splits in (({"BM": 128, "BN": 256, "WM": 64, "WN": 64, "MINB": 1}, (1, 4, 5, 9)),
                          ({"BM": 128, "BN": 128, "WM": 32, "WN": 64, "MINB": 2}, (1,)))
    for stages in (3, 4) for spread in (2, 4) for split in splits)


@dataclass(frozen=True)
class ShapeSearch:
    """A configuration per shape, as a tuned library picks one: at each shape every candidate
    (overrides on the defaults) is validated and timed, then the fastest is timed `reps` times."""
    shapes: tuple[tuple[int, int, int], ...]
    candidates: tuple[dict, ...]
    reps: int


@dataclass(frozen=True)
class Programme:
    """What the course measures of one kernel, beyond its sliders' configurations at EXPLORER_SIZES
    and its steps at STEP_SIZE (both read from its spec)."""
    # The configurations (overrides on the defaults) whose Nsight Compute counters `record` reads.
    counter_overrides: tuple[dict, ...] = ({},)
    # Shapes (M, N, K) besides the explorer's squares where `record` times the sliders' configurations:
    # for a kernel built for a regime squares do not show (chapter 12's skinny products).
    regime_shapes: tuple[tuple[int, int, int], ...] = ()
    # A per-shape search (the final chapter's table), or None.
    shape_search: ShapeSearch | None = None

    def counter_configs(self, spec) -> list[dict[str, int]]:
        """The full configurations of counter_overrides, resolved by `spec` (the kernel's
        spec.KernelSpec, which this module sits below and does not import)."""
        return [spec.resolve(cfg) for cfg in self.counter_overrides]

