"""The course plan: which sizes and shapes the chapters measure, and what the final chapter searches.

Numbers only; no kernel is named here. The kernel specs (gemmlab/specs/) and the measurement
campaigns read these.
"""
from __future__ import annotations

# The matrix sizes the chapter explorers offer (and so the sizes `record` measures).
EXPLORER_SIZES = (1024, 2048, 4096)
# Where a chapter's steps (KernelSpec.steps) are measured, and where every kernel is profiled.
STEP_SIZE = 4096
# Where the Nsight Compute counters of every kernel are read (KernelSpec.counter_overrides): the
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
# Issue 17's shape suite, where gemmlab.matmul is put against cuBLAS (`record --matmul` keeps the
# table in the record): squares, sizes that are multiples of nothing, skinny M and N, transformer
# layers, extremes of K.
MATMUL_SUITE = (tuple((s, s, s) for s in (128, 192, 320, 640, 768, 1536, 2000, 2500, 3072, 4000, 5000, 6144, 8192, 10240))
                + tuple((s, s, s) for s in (1023, 2049, 4093, 5003))
                + tuple((m, 4096, 4096) for m in (1, 4, 32, 64, 256)) + ((4096, 8, 4096),)
                + ((4096, 11008, 4096), (4096, 4096, 11008), (2048, 14336, 4096), (512, 4096, 4096))
                + ((1024, 1024, 32768), (8192, 8192, 128)))
MATMUL_REPS = 25


def _training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """Shapes drawn log-uniformly from 16 to 8192 per dimension, half of them rounded to multiples of
    128: what the fit of gemmlab.matmul's model learns from beyond the square sizes, chosen by a
    seeded draw, never from the suite it is judged on."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        shape = tuple(max(16, round(2 ** rng.uniform(4, 13))) for _ in range(3))
        if len(shapes) % 2:
            shape = tuple(max(128, d // 128 * 128) for d in shape)
        if shape not in MATMUL_SUITE and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


def _skinny_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """Skinny shapes: M (or, every other one, N) drawn log-uniformly from 1 to 128, the other two
    from 512 to 16384, by a seeded draw, none of them in the suite: where a memory-bound kernel and
    the tiled ones meet."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        short = max(1, round(2 ** rng.uniform(0, 7)))
        long_, k = (round(2 ** rng.uniform(9, 14)) for _ in range(2))
        shape = (short, long_, k) if len(shapes) % 2 == 0 else (long_, short, k)
        if shape not in MATMUL_SUITE and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


def _aligned_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """Shapes drawn log-uniformly from 512 to 8192 per dimension, rounded to multiples of 8 but not of
    128: rows that start 16-byte aligned, tiles that do not fit. Where a few edge tiles take a slow
    copy path and the rest do not, by a seeded draw, none of them in the suite."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        shape = tuple(round(2 ** rng.uniform(9, 13) / 8) * 8 for _ in range(3))
        if any(d % 128 for d in shape[:2]) and shape not in MATMUL_SUITE and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


def _short_side_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """Shapes with one short side: M (or, every other one, N) drawn log-uniformly from 128 to 1024, the
    other two from 2048 to 16384, half of them rounded to multiples of 8, by a seeded draw, none of them
    in the suite. Large tiles make a grid that fills part of the GPU there (a transformer layer at a
    small batch), and small tiles, a split or a last wave's split compete."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        short = round(2 ** rng.uniform(7, 10))
        long_, k = (round(2 ** rng.uniform(11, 14)) for _ in range(2))
        shape = (short, long_, k) if len(shapes) % 2 == 0 else (long_, short, k)
        if len(shapes) % 4 < 2:
            shape = tuple(max(8, round(d / 8) * 8) for d in shape)
        if shape not in MATMUL_SUITE and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


# Where `record --matmul` times the plan's best few options (DISPATCH_TRIES of them) for the fit.
DISPATCH_TRAINING_SHAPES = (_training_shapes(48, seed=17) + _skinny_training_shapes(32, seed=12)
                            + _aligned_training_shapes(24, seed=23) + _short_side_training_shapes(16, seed=29))
DISPATCH_TRIES = 4
# The grid of the final chapter's heatmap of gemmlab.matmul against cuBLAS (`record --matmul`): M and N
# over these sizes, at each of these K; before dispatch (the final kernel at its defaults) and after.
HEATMAP_SIZES = (256, 512, 1024, 2048, 4096, 8192)
HEATMAP_K = (256, 4096)
