"""The shapes gemmlab.matmul's plan is judged on (the record's suite, issue 33's class suite and its seeded draws, the
final chapter's grid) and the seeded draws its training rounds time (research/training.py times them)."""
from __future__ import annotations

MATMUL_SUITE = (tuple((s, s, s) for s in (128, 192, 320, 640, 768, 1536, 2000, 2500, 3072, 4000, 5000, 6144, 8192, 10240))
                + tuple((s, s, s) for s in (1023, 2049, 4093, 5003))
                + tuple((m, 4096, 4096) for m in (1, 4, 32, 64, 256)) + ((4096, 8, 4096),)
                + ((4096, 11008, 4096), (4096, 4096, 11008), (2048, 14336, 4096), (512, 4096, 4096))
                + ((1024, 1024, 32768), (8192, 8192, 128)))
MATMUL_REPS = 25

# Issue 33's classes of shapes, each with the shapes real workloads run (LLaMA-7B's and Mistral-7B's
# projections at prefill and at decode batches, GPT-2's and LLaMA's LM heads, ViT-B/16's and ViT-L/16's
# MLPs at a batch of 16 images, 1x1 convolutions): where gemmlab.matmul is held to 0.90 of cuBLAS in every
# class (.ci/matmul-classes), besides the headline squares. Only 8192^3 is in MATMUL_SUITE too.
CLASS_SUITE = {
    "headline squares": ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)),
    "few rows, large K (decode batches)": ((1, 11008, 4096), (8, 4096, 11008), (17, 4096, 4096),
                                           (24, 11008, 4096), (32, 14336, 4096), (48, 4096, 14336),
                                           (64, 8192, 8192), (16, 32000, 4096), (12, 14336, 4096),
                                           (28, 4096, 14336), (20, 5120, 5120)),
    "few columns, large K": ((11008, 1, 4096), (4096, 24, 11008), (8192, 48, 8192), (14336, 64, 4096)),
    "K of 32 or less": ((4096, 4096, 7), (8192, 8192, 16), (4096, 16384, 32), (2048, 2048, 1),
                        (16384, 1024, 3), (1000, 3000, 24)),
    "M or N not a multiple of 4": ((2048, 50257, 768), (512, 50257, 4096), (4097, 4095, 4096), (1001, 999, 1000),
                                   (2047, 2047, 2047), (255, 4099, 1024), (6143, 1023, 2048), (3152, 3073, 768)),
    "primes": ((1999, 2003, 2011), (509, 521, 523), (4093, 4091, 4099), (997, 8191, 127), (7919, 1009, 2003)),
    "short-wide and tall-thin, small K": ((64, 65536, 64), (65536, 64, 64), (128, 32768, 128), (32768, 96, 128),
                                          (256, 131072, 32), (12544, 256, 64)),
    "transformer and vision layers": ((2048, 11008, 4096), (2048, 4096, 11008), (512, 14336, 4096),
                                      (3152, 3072, 768), (3152, 768, 3072), (3152, 4096, 1024)),
}


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


# Every shape either suite judges the plan on: no training draw may be one of them.
_SUITES = frozenset(MATMUL_SUITE) | {s for group in CLASS_SUITE.values() for s in group}


def _prime(n: int) -> int:
    """The smallest prime at least n."""
    while n < 2 or any(n % d == 0 for d in range(2, int(n ** 0.5) + 1)):
        n += 1
    return n


def _class_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """Shapes drawn from issue 33's classes in turn, by a seeded draw, none of them in either suite: a few
    rows or columns (1-64) against a large K; K of 32 or less; M or N not a multiple of 4; all three sizes
    prime; a short side of 16-256 against a long one of 8192-131072 with K of 16-256. Where the plan must
    choose between kernels none of the other draws put side by side."""
    import random
    rng = random.Random(seed)

    def log(lo: int, hi: int) -> int:
        return round(2 ** rng.uniform(lo, hi))

    draws = (
        lambda: (log(0, 6), log(10, 15), log(10, 14)),            # few rows (below: transposed, few columns)
        lambda: (log(9, 14), log(9, 14), log(0, 5)),              # K of 32 or less
        lambda: (log(6, 13) | 1, log(6, 13) | 2, log(6, 13)),     # M odd, N even but not a multiple of 4
        lambda: (_prime(log(7, 13)), _prime(log(7, 13)), _prime(log(7, 13))),
        lambda: (log(4, 8), log(13, 17), log(4, 8)),              # short and wide, small K (below: tall and thin)
    )
    shapes, i = [], 0
    while len(shapes) < count:
        M, N, K = draws[i % len(draws)]()
        if i % 2 and i % len(draws) in (0, 4):
            M, N = N, M
        i += 1
        if (M, N, K) not in _SUITES and (M, N, K) not in shapes and M * N * K <= 2 ** 38:
            shapes.append((M, N, K))
    return tuple(shapes)


def _small_k_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """K of 1 to 32 against M and N of 512 to 16384 that are multiples of 8, as real layers' are (the class
    draws above give M and N any value: there B's and C's rows are not 16-byte multiples as well, a slower
    case of its own), by a seeded draw, none of them in either suite."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        M, N = (max(8, round(2 ** rng.uniform(9, 14) / 8) * 8) for _ in range(2))
        shape = (M, N, max(1, round(2 ** rng.uniform(0, 5))))
        if shape not in _SUITES and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


def _few_columns_training_shapes(count: int, seed: int, k_multiple: int = 1) -> tuple[tuple[int, int, int], ...]:
    """A few columns (N of 5 to 64) against M and K of 2048 to 16384 (K a multiple of `k_multiple`), by a seeded
    draw, none of them in either suite: where a C too narrow for the tiles the record times is run on chapter 13's
    narrow ones."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        M, K = (round(2 ** rng.uniform(11, 14)) for _ in range(2))
        shape = (M, round(2 ** rng.uniform(2.3, 6)), max(k_multiple, K // k_multiple * k_multiple))
        if shape not in _SUITES and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


def _tall_thin_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """Tall and thin: 8,192 to 98,304 rows, 8 to 64 columns, a K of 32 to 256 that is a multiple of 4, by a seeded
    draw, none of them in either suite: where a block's few K steps stream A's rows and C is written once."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        shape = (round(2 ** rng.uniform(13, 16.58)), rng.randint(8, 64), 4 * rng.randint(8, 64))
        if shape not in _SUITES and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


# Chapter 13's narrow tiles are timed at these (research/training.narrow_tile_jobs): K of any value, K a multiple
# of 4 (where A_QUADS=1 copies A 16 bytes at a time), and tall-thin shapes of a small K
FEW_COLUMNS_TRAINING_SHAPES = (_few_columns_training_shapes(6, seed=37)
                               + _few_columns_training_shapes(6, seed=63, k_multiple=4)
                               + _tall_thin_training_shapes(4, seed=67))


def _ragged_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """M, N and K of 1024 to 8192 with N not a multiple of 4 (B's rows not 16-byte multiples), every third
    shape all primes, and every third a few hundred rows against 8192-65536 columns (an LM head), by a seeded
    draw, none of them in either suite: where a plan weighs B read in place, 4 bytes at a time, against a copy."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        M, N, K = (round(2 ** rng.uniform(10, 13)) for _ in range(3))
        if len(shapes) % 3 == 1:
            M, N, K = _prime(M), _prime(N), _prime(K)
        elif len(shapes) % 3 == 2:
            M, N = round(2 ** rng.uniform(8, 11)), round(2 ** rng.uniform(13, 16))
        if N % 4 == 0:
            N += rng.choice((1, 2, 3))
        if (M, N, K) not in _SUITES and (M, N, K) not in shapes and M * N * K <= 2 ** 38:
            shapes.append((M, N, K))
    return tuple(shapes)


RAGGED_TRAINING_SHAPES = _ragged_training_shapes(24, seed=39)


DRAWN_CLASSES = ("few rows or columns", "K of 32 or less", "M or N not a multiple of 4", "primes",
                 "short-wide and tall-thin")


def class_draws(count: int, seed: int) -> tuple[tuple[str, tuple[int, int, int]], ...]:
    """(class, shape): issue 33's classes in turn, each drawn over its whole width as a user's shapes come (sizes
    uniform where the class bounds them, log-uniform where it does not, rarely round). A few rows or columns (2-64)
    against N or M and K of 1,024-24,576; K of 1-32 against M and N of 256-16,384; M or N not a multiple of 4, every
    size 64-8,192; all three prime, 64-8,192; a short side of 16-128 against 8,192-98,304 with K of 16-128. By a
    seeded draw, none of them in either suite: the training rounds' draw with one seed, the shapes
    `.ci/matmul-classes --draw` judges the plan on with another."""
    import random
    rng = random.Random(seed)

    def log(lo: float, hi: float) -> int:
        return round(2 ** rng.uniform(lo, hi))

    def ragged(n: int) -> int:
        return n if n % 4 else n + rng.choice((1, 2, 3))

    draws = (
        lambda: (rng.randint(2, 64), log(10, 14.58), log(10, 14.58)),           # few rows (transposed: few columns)
        lambda: (log(8, 14), log(8, 14), rng.randint(1, 32)),
        lambda: (log(6, 13), ragged(log(6, 13)), log(6, 13)),                    # ragged N (transposed: ragged M)
        lambda: (_prime(log(6, 13)), _prime(log(6, 13)), _prime(log(6, 13))),
        lambda: (rng.randint(16, 128), log(13, 16.58), rng.randint(16, 128)),    # short and wide (transposed: tall)
    )
    out, i = [], 0
    while len(out) < count:
        kind = i % len(draws)
        M, N, K = draws[kind]()
        if (i // len(draws)) % 2 and kind in (0, 2, 4):
            M, N = N, M
        i += 1
        if (M, N, K) not in _SUITES and (M, N, K) not in (s for _, s in out) and M * N * K <= 2 ** 38:
            out.append((DRAWN_CLASSES[kind], (M, N, K)))
    return tuple(out)


def _large_training_shapes(count: int, seed: int, multiple: int = 1) -> tuple[tuple[int, int, int], ...]:
    """M, N and K of 3,000 to 9,000, drawn uniformly (rounded to `multiple`: rows 16-byte aligned, tiles still ragged),
    by a seeded draw, none of them in either suite: the largest products, where candidates a few tenths of a percent
    apart on paper differ by 10% on the GPU (a refit that added new candidates once moved 5000^3 to one that ran 13%
    slower than the one it had, priced from rows that were nearly all on the checked copy path)."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        shape = tuple(rng.randint(3000, 9000) // multiple * multiple for _ in range(3))
        if shape not in _SUITES and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


def _short_k_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """K of 128-512 against M and N of 256-8,192 (log-uniform, half of them multiples of 64), by a seeded draw, none of
    them in either suite: where several kernels' options are priced within a few percent of each other and a refit
    moves between them (round 22 moved chapter 14's grid at K = 256 from one to another, 3-6% slower)."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        shape = (round(2 ** rng.uniform(8, 13)), round(2 ** rng.uniform(8, 13)), round(2 ** rng.uniform(7, 9)))
        if len(shapes) % 2:
            shape = tuple(max(64, d // 64 * 64) for d in shape)
        if shape not in _SUITES and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


def _few_rows_long_k_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """A few rows (2-64; every other shape transposed: a few columns) against a long side of 2,048-16,384 and K of
    8,192-32,768, log-uniform, by a seeded draw, none of them in either suite, each followed by the same shape with its
    few rows padded to 32 or 64: decode batches through wide layers, where the plan pads C to whole 32- or 64-row tiles
    and splits K. A round times the plan's options on the call as it is, so the padded product the plan runs is timed
    only as a shape of its own; round 24's probe found the plan's call there 18-21% slower than the fastest of chapter
    13's 64-row tiles alone (docs/dispatch-history.md)."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < 2 * count:
        few, long_side, K = rng.randint(2, 64), round(2 ** rng.uniform(11, 14)), round(2 ** rng.uniform(13, 15))
        padded = 32 if few <= 32 else 64
        pair = [(few, long_side, K), (padded, long_side, K)]
        if len(shapes) % 4:
            pair = [(n, m, k) for m, n, k in pair]
        if not any(s in _SUITES or s in shapes for s in pair) and few != padded:
            shapes += pair
    return tuple(shapes)


def _short_wide_training_shapes(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """A short side of 16 to 128 rows against 8,192 to 98,304 columns with K of 33 to 64, by a seeded draw, none
    of them in either suite: where chapter 12's small-K side holds K in 12 or 16 quads, its warps side by side."""
    import random
    rng = random.Random(seed)
    shapes = []
    while len(shapes) < count:
        shape = (rng.randint(16, 128), round(2 ** rng.uniform(13, 16.58)), rng.randint(33, 64))
        if shape not in _SUITES and shape not in shapes:
            shapes.append(shape)
    return tuple(shapes)


SHORT_WIDE_TRAINING_SHAPES = _short_wide_training_shapes(8, seed=61)

# Where `record --matmul` times the plan's best few options (DISPATCH_TRIES of them) for the fit.
CLASS_TRAINING_SHAPES = (_class_training_shapes(50, seed=33) + _small_k_training_shapes(20, seed=35)
                         + tuple(shape for seed in (41, 45) for _, shape in class_draws(70, seed=seed)))
DISPATCH_TRAINING_SHAPES = (_training_shapes(48, seed=17) + _skinny_training_shapes(32, seed=12)
                            + _aligned_training_shapes(24, seed=23) + _short_side_training_shapes(16, seed=29)
                            + CLASS_TRAINING_SHAPES + FEW_COLUMNS_TRAINING_SHAPES + RAGGED_TRAINING_SHAPES
                            + _large_training_shapes(12, seed=43) + _large_training_shapes(12, seed=47, multiple=8)
                            + _short_k_training_shapes(16, seed=53) + _few_rows_long_k_training_shapes(16, seed=59)
                            + SHORT_WIDE_TRAINING_SHAPES)
DISPATCH_TRIES = 4
# The grid of the final chapter's heatmap of gemmlab.matmul against cuBLAS (`record --matmul`): M and N
# over these sizes, at each of these K; before dispatch (the final kernel at its defaults) and after.
HEATMAP_SIZES = (256, 512, 1024, 2048, 4096, 8192)
HEATMAP_K = (256, 4096)
