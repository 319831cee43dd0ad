"""On a GPU: correctness over awkward shapes, NaN poisoning, the FP32 baseline, timing sanity."""
import pytest

from gemmlab import bench, device, registry
from gemmlab.registry import KERNELS
from gemmlab.spec import Problem, UnsupportedShape

pytestmark = pytest.mark.gpu

AWKWARD = [
    Problem(1, 1, 1),
    Problem(7, 13, 5),                       # primes
    Problem(127, 129, 131),
    Problem(129, 127, 1),                    # K = 1
    Problem(2049, 33, 64),                   # tall
    Problem(31, 1025, 257),                  # wide
    Problem(100, 70, 90, lda=97, ldb=75, ldc=71, alpha=0.75, beta=-0.5),   # padded rows, alpha, beta
    Problem(64, 64, 64, alpha=-2.0, beta=1.0),
    Problem(300, 200, 1000, lda=1003, ldb=201, ldc=256, alpha=1.0, beta=0.0),
    Problem(100, 70, 90, lda=100, ldb=76, ldc=72, alpha=0.75, beta=-0.5),  # padded to multiples of 4
    Problem(257, 259, 263),
    Problem(300, 600, 160),                  # interior blocks and edges, K a multiple of 16: 10 K tiles
    Problem(260, 520, 32),                   # interior blocks with fewer K tiles than pipeline stages
]
CASES = [(name, cfg) for name, spec in KERNELS.items() for cfg in spec.extreme_configs()]


def cublas_math_mode() -> int:
    """The math mode of CuPy's cuBLAS handle (what bench's TF32 run must restore)."""
    cp = device.cupy()
    from cupy_backends.cuda.libs import cublas
    return cublas.getMathMode(cp.cuda.device.get_cublas_handle())


@pytest.mark.parametrize("name,cfg", CASES, ids=[f"{n}-{'-'.join(f'{k}{v}' for k, v in c.items())}" for n, c in CASES])
def test_correct_on_awkward_shapes(name, cfg):
    """Every shape is either computed right or refused with the rule it breaks."""
    kernel = bench.Kernel(name, cfg)
    for problem in AWKWARD:
        try:
            kernel.spec.check_shape(kernel.params, problem)
        except UnsupportedShape as refused:
            # rows that are not 16-byte multiples; or, for 13, C smaller than a tile, K shorter than one K tile
            # where the copies past a block's last tile repeat it, or A copied 16 bytes at a time (A_QUADS=1) with
            # A's rows or K not multiples of 4; for 12's SIDE=2, K longer than it holds
            assert "multiples of 4" in str(refused) or refused.rule in ("tile-fits", "k-whole-tile", "k-fits",
                                                                        "a-quads")
            with pytest.raises(UnsupportedShape):
                kernel.validate(problem, seed=1)
            continue
        check = kernel.validate(problem, seed=1)
        assert check.ok, f"{name} {cfg} {problem}: {check}"


@pytest.mark.parametrize("cfg", [{"SPREAD": 2}, {"BK": 8, "KUNROLL": 8}, {"BK": 32}, {"STAGES": 2},
                                 {"BN": 128, "WM": 32, "MINB": 2, "SPREAD": 2}, {"BK": 8, "KUNROLL": 4, "SPREAD": 2},
                                 {"SPREAD": 4, "SPLIT": 5}])
def test_spread_copies_land_in_every_geometry(cfg):
    """With SPREAD, interior blocks issue the next tile's copies in groups between the k steps and,
    past the last tile, repeat it into an idle stage. Whatever the copies per thread (BK, tile,
    threads), the stages and the unrolling, C comes out right, with K tiles fewer and more than the
    stages, and in split pieces."""
    kernel = bench.Kernel("11_last_wave", cfg)
    for problem in (Problem(300, 600, 160), Problem(260, 520, 32), Problem(1100, 1300, 704, alpha=0.5, beta=2.0),
                    Problem(512, 512, 512)):
        check = kernel.validate(problem, seed=3)
        assert check.ok, f"{cfg} {problem}: {check}"


@pytest.mark.parametrize("pieces", [2, 9, 16])
def test_split_tiles_add_up_in_any_grid(pieces):
    """With SPLIT, the tiles of a last partial wave are computed in pieces along K that add into C
    in turn. Whatever the number of block slots the plan assumes and however many tiles get split
    (all, some, none: K too short for the pieces), C comes out right, and again on the next
    launch (the flags are left at 0)."""
    kernel = bench.Kernel("11_last_wave", {"SPLIT": pieces})
    shapes = (Problem(509, 515, 130, alpha=-1.0, beta=0.5), Problem(1100, 1300, 704), Problem(2049, 4100, 100),
              Problem(300, 200, 1000, lda=1003, ldb=201, ldc=256, alpha=0.5, beta=2.0))
    for slots in (kernel.slots, 50, 16, 5):
        kernel.slots = slots
        for problem in shapes:
            grid, _ = kernel.spec.launch(kernel.params, problem, slots)
            check = kernel.validate(problem, seed=slots)
            assert check.ok, f"SPLIT={pieces}, {slots} slots, grid {grid}, {problem}: {check}"
    # 1100 x 1300 is 9 x 6 tiles of 128 x 256: all of them a last partial wave on 132 slots
    assert kernel.spec.launch(kernel.params, Problem(1100, 1300, 4000), 132)[0] == (54 * pieces, 1, 1)


def test_misaligned_pointers_are_refused_by_vector_kernels():
    kernel = bench.Kernel("08_warp_tiling")
    ops = bench.Operands.random(Problem(64, 64, 64, lda=68), seed=4)
    shifted = bench.Operands(Problem(64, 64, 60, lda=68), ops.A[:, 1:61], ops.B[:60], ops.C, None)
    with pytest.raises(UnsupportedShape, match="pointer-alignment"):
        kernel(shifted)


def test_poisoned_output_is_caught():
    """A launch that covers only part of C leaves NaN behind, and validation fails."""
    kernel = bench.Kernel("03_coalescing")
    problem = Problem(96, 96, 64)
    ops = bench.Operands.random(problem, seed=2)
    kernel(bench.Operands(Problem(64, 96, 64), ops.A[:64], ops.B, ops.C[:64], None))
    check = bench.check(ops)
    assert not check.ok and check.nonfinite == 32 * 96


def test_wrong_answer_is_caught():
    kernel = bench.Kernel("01_naive")
    ops = bench.Operands.random(Problem(64, 64, 64), seed=3)
    kernel(ops)
    ops.C[5, 7] += 1e-3
    assert not bench.check(ops).ok


def test_cublas_baseline_is_fp32_not_tf32():
    assert cublas_math_mode() in (bench.CUBLAS_DEFAULT_MATH, bench.CUBLAS_PEDANTIC_MATH)
    size = (2048, 2048, 2048)
    _, fp32 = bench.bench_cublas(size, reps=3)
    _, tf32 = bench.bench_cublas(size, math_mode=bench.CUBLAS_TF32_TENSOR_OP_MATH, reps=3)
    assert fp32.ok, fp32
    assert not tf32.ok and tf32.rel_err > 10 * fp32.rel_err, "the tolerance tells TF32 from FP32"
    assert cublas_math_mode() == bench.CUBLAS_DEFAULT_MATH, "the TF32 run restored the math mode"


def test_timing_is_sane():
    m = bench.bench("03_coalescing", None, (1024, 1024, 1024), reps=5)
    peak = device.facts().peak_fp32_tflops * 1e3
    assert 0 < m.gflops < peak and 0 < m.cublas_gflops < peak
    assert m.kernel_time.min_ms <= m.kernel_time.median_ms <= m.kernel_time.max_ms
    assert m.check.ok and m.cublas_check.ok


def test_unsupported_grid_is_refused_not_launched():
    spec = registry.get("01_naive")
    with pytest.raises(UnsupportedShape, match="grid-y-limit"):
        spec.launch(spec.defaults, Problem(32 * 65536, 1, 1))


FUZZ_SHAPES = 200


@pytest.mark.parametrize("name", list(KERNELS))
def test_fuzz_random_shapes_give_no_wrong_answer(name):
    """FUZZ_SHAPES random problems per kernel at its defaults: M, N, K in 1..600, leading dimensions
    padded by 0-7 floats (half of them rounded up to a multiple of 4), alpha and beta random (beta = 0
    a quarter of the time). Each is computed right
    or refused by the rule it breaks; the count of each is printed for the record."""
    import random
    rng = random.Random(f"fuzz-{name}")           # the same shapes every run: a failure can be replayed
    kernel = bench.Kernel(name, {})
    right = refused = 0
    for _ in range(FUZZ_SHAPES):
        M, N, K = (rng.randint(1, 600) for _ in range(3))
        lda, ldb, ldc = K + rng.randint(0, 7), N + rng.randint(0, 7), N + rng.randint(0, 7)
        if rng.random() < 0.5:                 # half with rows 16-byte aligned, which 06-08 require
            lda, ldb, ldc = (-(-ld // 4) * 4 for ld in (lda, ldb, ldc))
        problem = Problem(M, N, K, lda=lda, ldb=ldb, ldc=ldc,
                          alpha=rng.uniform(-2, 2), beta=0.0 if rng.random() < 0.25 else rng.uniform(-2, 2))
        try:
            check = kernel.validate(problem, seed=rng.randint(0, 2**31))
        except UnsupportedShape as exc:
            assert exc.rule, problem
            refused += 1
            continue
        assert check.ok, f"{name}: {problem}: {check}"
        right += 1
    print(f"fuzz {name}: {right} right, {refused} refused by a rule, 0 wrong of {FUZZ_SHAPES}")
    assert right >= FUZZ_SHAPES // 10, "most shapes must run, not be refused"


@pytest.mark.gpu
def test_interleaved_timing_moves_each_launch_through_every_place():
    """No launch always runs right after the same other one (the clocks then favour or cost it a place):
    each round starts one further along, so over len(fns) rounds each launch takes every place once."""
    calls = []
    fns = [lambda i=i: calls.append(i) for i in range(3)]
    timings = bench.time_interleaved(fns, reps=6, warmup=1, flush=False)
    assert len(timings) == 3 and all(t.reps == 6 for t in timings)
    assert calls[:3] == [0, 1, 2]                         # the warm-up, one each
    rounds = [calls[3 + r * 3:3 + (r + 1) * 3] for r in range(6)]
    assert rounds[:3] == [[0, 1, 2], [1, 2, 0], [2, 0, 1]] and rounds[3:] == rounds[:3]
