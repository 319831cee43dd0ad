"""gemmlab.matmul: operands as they lie in memory map to leading dimensions (no GPU needed for
that); on a GPU, every shape of issue 17's suite, 300 random shapes, transposed views, alpha,
beta and padded rows come out right against a float64 reference."""
import os
import random
import subprocess
import sys
import warnings

import numpy as np
import pytest

import gemmlab
from gemmlab import bench, device, library
from gemmlab.library import dispatch, time_model
from gemmlab.library import Layout, layout

# Issue 17's shape suite (M, N, K).
SUITE = ([(s, s, s) for s in (128, 192, 320, 640, 768, 1536, 2000, 2500, 3072, 4000, 5000, 6144, 8192, 10240)]
         + [(s, s, s) for s in (1023, 2049, 4093, 5003)]
         + [(m, 4096, 4096) for m in (1, 4, 32, 64, 256)] + [(4096, 8, 4096)]
         + [(4096, 11008, 4096), (4096, 4096, 11008), (2048, 14336, 4096), (512, 4096, 4096)]
         + [(1024, 1024, 32768), (8192, 8192, 128)])


def _strides(a: np.ndarray):
    return layout(a.shape, a.strides, a.itemsize)


def test_row_major_and_transposed_views_map_to_leading_dimensions():
    base = np.zeros((6, 10), np.float32)
    assert _strides(base) == Layout(False, 10)
    assert _strides(base[:, :7]) == Layout(False, 10), "padded rows: a slice of a wider matrix"
    assert _strides(base.T) == Layout(True, 10), "a transposed view reads the rows it came from"
    assert _strides(base[:, :7].T) == Layout(True, 10)
    assert _strides(base[2:3, :]) == Layout(False, 10) and _strides(base[:, 4:5]) == Layout(False, 10)
    assert _strides(np.zeros((1, 5), np.float32).T) == Layout(False, 1), "a column is a row-major matrix of rows of 1"


def test_what_the_kernels_cannot_read_in_place_is_named():
    base = np.zeros((6, 10), np.float32)
    assert _strides(base[:, ::2]) is None, "every other column"
    assert _strides(base[::-1]) is None, "rows backwards"
    assert _strides(np.broadcast_to(np.float32(1), (4, 4))) is None, "a broadcast scalar"
    assert layout((4, 4), (17, 4)) is None, "a stride that is not whole elements"


def test_the_library_call_and_its_plan_are_one_attribute_away():
    assert gemmlab.matmul is library.matmul and gemmlab.matmul.plan(512, 512, 512).choice.predicted_us > 0
    assert isinstance(gemmlab.matmul.plan(100, 100, 100, 104, 100, 100), dispatch.Plan)
    with pytest.raises(AttributeError):
        gemmlab.no_such_thing


def _without_a_gpu(*args):
    """gemmlab in a fresh process that sees no GPU, here or on a GPU machine (CUDA_VISIBLE_DEVICES empty)."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)


def test_without_a_gpu_matmul_says_it_needs_one():
    done = _without_a_gpu("-c", "import numpy as np, gemmlab\n"
                                "try:\n    gemmlab.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))\n"
                                "except RuntimeError as e:\n    print('RuntimeError:', e)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("RuntimeError:") and any(w in done.stdout for w in ("CuPy", "GPU", "CUDA"))


def test_bench_matmul_needs_a_gpu_and_says_so():
    done = _without_a_gpu("-m", "gemmlab", "bench", "matmul", "--size", "64", "64", "64")
    assert done.returncode == 2 and "needs a GPU" in done.stderr and "Traceback" not in done.stderr


# --- on a GPU --------------------------------------------------------------------------------------

def _reference(cp, A, B, C0, alpha, beta):
    ref = alpha * (A.astype(cp.float64) @ B.astype(cp.float64))
    return ref + beta * C0.astype(cp.float64) if C0 is not None else ref


def _assert_right(cp, got, A, B, C0=None, alpha=1.0, beta=0.0, what=""):
    """Normwise and elementwise, as bench.check judges every kernel; NaN never passes."""
    ref = _reference(cp, A, B, C0, alpha, beta)
    out = got.astype(cp.float64)
    assert bool(cp.isfinite(out).all()), f"{what}: NaN or Inf in C"
    K = A.shape[1]
    err = cp.abs(out - ref)
    rel = float(cp.linalg.norm(err)) / (float(cp.linalg.norm(ref)) or 1.0)
    assert rel <= bench.tolerance(K), f"{what}: relative error {rel:.2e}"
    scale = abs(alpha) * (cp.abs(A).astype(cp.float64) @ cp.abs(B).astype(cp.float64))
    if C0 is not None:
        scale += abs(beta) * cp.abs(C0).astype(cp.float64)
    assert float((err / ((K + 2) * bench.UNIT_ROUNDOFF * scale + 1e-30)).max()) <= 1.0, f"{what}: an element off"


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SUITE, ids=lambda s: "x".join(map(str, s)))
def test_every_suite_shape_is_right(shape):
    cp = device.cupy()
    M, N, K = shape
    rng = cp.random.default_rng(17)
    A = rng.uniform(-1, 1, (M, K), dtype=cp.float32)
    B = rng.uniform(-1, 1, (K, N), dtype=cp.float32)
    _assert_right(cp, gemmlab.matmul(A, B), A, B, what=dispatch.plan(M, N, K).label)


@pytest.mark.gpu
def test_300_random_shapes_with_alpha_beta_and_padded_rows():
    cp = device.cupy()
    rng = random.Random(300)
    crng = cp.random.default_rng(300)
    for i in range(300):
        M, N, K = (rng.randint(1, 3000) for _ in range(3))
        lda, ldb, ldc = (d + rng.choice((0, 0, 1, 3, 4)) for d in (K, N, N))
        alpha, beta = rng.choice((1.0, -0.5, 2.0)), rng.choice((0.0, 0.0, 1.0, -0.75))
        A = crng.uniform(-1, 1, (M, lda), dtype=cp.float32)[:, :K]
        B = crng.uniform(-1, 1, (K, ldb), dtype=cp.float32)[:, :N]
        C = crng.uniform(-1, 1, (M, ldc), dtype=cp.float32)[:, :N]
        C0 = C.copy()
        if beta == 0.0:
            C[...] = cp.nan                      # poisoned: beta = 0 must not read C
        got = gemmlab.matmul(A, B, out=C, alpha=alpha, beta=beta)
        assert got is C
        _assert_right(cp, C, A, B, C0 if beta else None, alpha, beta,
                      what=f"#{i} {M}x{N}x{K} ld {lda},{ldb},{ldc} alpha {alpha} beta {beta}: "
                           f"{dispatch.plan(M, N, K, lda, ldb, ldc).label}")


@pytest.mark.gpu
def test_a_repeated_call_takes_its_prepared_launch_and_stays_right(monkeypatch):
    """The second call of a signature skips the checks and the plan (library._prepared); each change that
    decides the plan or the launch (alpha, beta, a misaligned pointer, C given or not, another shape) is a
    signature of its own, and a call that copies an operand is never prepared (it warns every time)."""
    cp = device.cupy()
    monkeypatch.setattr(library, "_prepared", {})
    rng = cp.random.default_rng(5)
    wide = rng.uniform(-1, 1, (300, 517), dtype=cp.float32)
    B = rng.uniform(-1, 1, (512, 260), dtype=cp.float32)
    C = rng.uniform(-1, 1, (300, 260), dtype=cp.float32)
    for round_ in range(2):
        for A in (wide[:, :512], wide[:, 1:513]):          # rows 16-byte aligned, then not
            for alpha, beta in ((1.0, 0.0), (-0.5, 0.75)):
                C0 = C.copy()
                assert library.matmul(A, B, out=C, alpha=alpha, beta=beta) is C
                _assert_right(cp, C, A, B, C0 if beta else None, alpha, beta,
                              what=f"round {round_}, A at +{A.data.ptr % 16} bytes, alpha {alpha}, beta {beta}")
            _assert_right(cp, library.matmul(A, B), A, B, what=f"round {round_}, a new C")
        assert len(library._prepared) == 6
    with pytest.warns(library.LayoutCopy):
        library.matmul(B.T[:, :300], B[:300, :])         # B^T is a transposed view, the other one is not
    with pytest.warns(library.LayoutCopy):
        library.matmul(B.T[:, :300], B[:300, :])
    assert len(library._prepared) == 6
    with pytest.raises(ValueError, match="A's columns must equal B's rows"):
        library.matmul(B, B)


def test_a_call_just_past_whole_tiles_is_peeled_and_b_copied_into_16_byte_rows():
    """2049^3 on the record's model: 2048 x 2048 of whole tiles, the row and column past them each by a
    plan of its own, and B first copied into rows of 2052 floats; the plan says so, and prices all of it."""
    plan = dispatch.plan(2049, 2049, 2049)
    assert plan.core == (2048, 2048) and plan.stage_ldb == 2052
    assert [(p.row0, p.col0, p.plan.problem.M, p.plan.problem.N) for p in plan.parts] == [(2048, 0, 1, 2049),
                                                                                        (0, 2048, 2048, 1)]
    assert plan.choice.launch.problem.ldb == 2052 and all(p.plan.problem.ldb == 2052 for p in plan.parts)
    assert plan.predicted_us == pytest.approx(plan.choice.predicted_us + plan.stage_us
                                              + sum(p.plan.predicted_us for p in plan.parts))
    assert plan.predicted_us < dispatch.plan_for(plan.problem, *dispatch.device_facts(), reshape=False).predicted_us
    text = str(plan)
    assert "peeled: the kernel above runs the first 2,048 rows and 2,048 columns" in text
    assert "B is copied first into rows of 2,052 floats" in text
    assert dispatch.plan(4096, 4096, 4096).core is None and dispatch.plan(4096, 4096, 4096).stage_ldb == 0


def test_a_c_of_few_columns_may_run_padded_to_whole_narrow_tiles():
    """Under PAD_BELOW columns the plan may run C as one of N rounded up to 32 or 64 columns: the padded
    problem's own plan (B and C that wide), the copies priced on top; it says so. Wider C is never padded."""
    dev, gpu = dispatch.device_facts()
    m = time_model.model(dev["name"])
    problem = dispatch.Problem(4096, 24, 11008)
    padded = dispatch._padded(problem, dev, gpu, True, m)
    assert sorted(p.pad_n for p in padded) == [32, 64]
    for plan in padded:
        launched = plan.choice.launch.problem
        assert (launched.M, launched.N, launched.K, launched.ldb, launched.ldc) == (4096, plan.pad_n, 11008,
                                                                                  plan.pad_n, plan.pad_n)
        assert plan.problem == problem and plan.stage_us > 0
        assert plan.predicted_us == pytest.approx(plan.choice.predicted_us + plan.stage_us)
        assert f"run {plan.pad_n} columns wide" in plan.label and plan.label in str(plan).splitlines()[0]
        assert f"C's 24 columns are run as {plan.pad_n}" in str(plan)
    assert dispatch._padded(dispatch.Problem(4096, 48, 4096), dev, gpu, True, m)[0].pad_n == 64
    assert dispatch._padded(dispatch.Problem(4096, 64, 4096), dev, gpu, True, m) == []
    assert dispatch._padded(dispatch.Problem(4096, dispatch.PAD_BELOW + 1, 4096), dev, gpu, True, m) == []


def test_a_c_of_few_rows_may_run_padded_to_whole_tiles():
    """Under PAD_BELOW rows the plan may run C as one of M rounded up to 32 or 64 rows (33 to 47 rows also to 48):
    the taller problem's own plan (A and C that tall, A's rows packed), the copies priced on top; it says so. Where
    C is narrow too, both are offered, each alone."""
    dev, gpu = dispatch.device_facts()
    m = time_model.model(dev["name"])
    problem = dispatch.Problem(24, 4096, 11008, 11010, 4100, 4096)
    padded = dispatch._padded(problem, dev, gpu, True, m)
    assert sorted(p.pad_m for p in padded) == [32, 64] and all(p.pad_n == 0 and p.stage_ldb == 0 for p in padded)
    for plan in padded:
        launched = plan.choice.launch.problem
        assert (launched.M, launched.N, launched.K, launched.lda, launched.ldb, launched.ldc) == (
            plan.pad_m, 4096, 11008, 11008, 4100, 4096)
        assert plan.problem == problem and plan.stage_us > 0
        assert plan.predicted_us == pytest.approx(plan.choice.predicted_us + plan.stage_us)
        assert f"run {plan.pad_m} rows tall" in plan.label and plan.label in str(plan).splitlines()[0]
        assert f"C's 24 rows are run as {plan.pad_m}" in str(plan)
    both = dispatch._padded(dispatch.Problem(40, 24, 4096), dev, gpu, True, m)
    assert sorted((p.pad_m, p.pad_n) for p in both) == [(0, 32), (0, 64), (48, 0), (64, 0)], "columns: no 48"
    assert dispatch._padded(dispatch.Problem(64, 4096, 4096), dev, gpu, True, m) == []


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(3001, 23, 517), (19, 3001, 517)], ids=["few-columns", "few-rows"])
def test_a_padded_plan_writes_only_cs_own_rows_and_columns(shape):
    """Each padded plan (wider or taller C), forced, into C that is a slice of a wider matrix with rows below
    it, A of padded rows, with beta 0 (C poisoned) and not: the product is right, and the wider matrix past C's
    rows and columns is as it was."""
    cp = device.cupy()
    M, N, K = shape
    dev, gpu = dispatch.device_facts()
    problem = dispatch.Problem(M, N, K, K + 3, N, N + 9)
    crng = cp.random.default_rng(8)
    A = crng.uniform(-1, 1, (M, K + 3), dtype=cp.float32)[:, :K]
    B = crng.uniform(-1, 1, (K, N), dtype=cp.float32)
    plans = dispatch._padded(problem, dev, gpu, True, time_model.model(dev["name"]))
    assert plans
    for plan in plans:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(library.dispatch, "plan", lambda *args, plan=plan: plan)
            mp.setattr(library, "_prepared", {})
            for alpha, beta in ((1.0, 0.0), (2.0, -0.5)):
                for call in ("first", "prepared"):      # the second call of a signature takes the prepared one
                    big = crng.uniform(-1, 1, (M + 5, N + 9), dtype=cp.float32)
                    C = big[:M, :N]
                    C0 = C.copy()
                    if beta == 0.0:
                        C[...] = cp.nan
                    outside = big.copy()
                    assert gemmlab.matmul(A, B, out=C, alpha=alpha, beta=beta) is C
                    what = f"{plan.label}, beta {beta}, {call} call"
                    _assert_right(cp, C, A, B, C0 if beta else None, alpha, beta, what=what)
                    assert bool((big[:, N:] == outside[:, N:]).all()), f"{what}: wrote past C's columns"
                    assert bool((big[M:] == outside[M:]).all()), f"{what}: wrote past C's rows"
            assert len(library._prepared) == 2, "each signature's padded call is prepared once"


@pytest.mark.gpu
@pytest.mark.parametrize("shape,pad", [((2049, 2049, 300), (0, 0, 0)), ((130, 4099, 77), (3, 0, 1)),
                                       ((4097, 1031, 64), (0, 5, 2)), ((1500, 37, 611), (1, 3, 2))],
                         ids=lambda v: "x".join(map(str, v)))
def test_every_reshaped_plan_is_right(shape, pad, monkeypatch):
    """Each way the plan may reshape a call (B copied, peeled, both; C's columns padded), forced, with alpha,
    beta and padded rows: the parts cover C exactly once, and the copy of B is read with its own leading
    dimension."""
    cp = device.cupy()
    M, N, K = shape
    lda, ldb, ldc = K + pad[0], N + pad[1], N + pad[2]
    dev, gpu = dispatch.device_facts()
    problem = dispatch.Problem(M, N, K, lda, ldb, ldc)
    variants = dispatch._reshaped(problem, dev, gpu, True, time_model.model(dev["name"]))
    assert variants, "this shape can be peeled or its B copied"
    crng = cp.random.default_rng(5)
    for plan in variants:
        monkeypatch.setattr(library.dispatch, "plan", lambda *args, plan=plan: plan)
        A = crng.uniform(-1, 1, (M, lda), dtype=cp.float32)[:, :K]
        B = crng.uniform(-1, 1, (K, ldb), dtype=cp.float32)[:, :N]
        C = crng.uniform(-1, 1, (M, ldc), dtype=cp.float32)[:, :N]
        C0 = C.copy()
        B0 = B.copy()
        gemmlab.matmul(A, B, out=C, alpha=-0.5, beta=0.75)
        _assert_right(cp, C, A, B, C0, -0.5, 0.75, what=plan.label)
        assert bool((B == B0).all()), "B is read, never written"


@pytest.mark.gpu
def test_transposed_views_are_read_in_place_or_copied_once_with_a_warning():
    cp = device.cupy()
    rng = cp.random.default_rng(5)
    M, N, K = 333, 517, 129
    At = rng.uniform(-1, 1, (K, M), dtype=cp.float32)      # A = At.T
    Bt = rng.uniform(-1, 1, (N, K), dtype=cp.float32)      # B = Bt.T
    A, B = cp.ascontiguousarray(At.T), cp.ascontiguousarray(Bt.T)
    with warnings.catch_warnings():
        warnings.simplefilter("error", library.LayoutCopy)  # both transposed: no copy
        C = gemmlab.matmul(At.T, Bt.T)
    assert C.shape == (M, N)
    _assert_right(cp, C, A, B, what="both transposed")
    with pytest.warns(library.LayoutCopy, match="transposed view"):
        _assert_right(cp, gemmlab.matmul(At.T, B), A, B, what="A transposed")
    with pytest.warns(library.LayoutCopy, match="transposed view"):
        _assert_right(cp, gemmlab.matmul(A, Bt.T), A, B, what="B transposed")
    every_other = cp.zeros((M, 2 * K), cp.float32)
    every_other[:, ::2] = A
    with pytest.warns(library.LayoutCopy, match="copies A"):
        _assert_right(cp, gemmlab.matmul(every_other[:, ::2], B), A, B, what="every other column")
    out = cp.empty((N, M), cp.float32).T                     # C written as C^T, row-major
    with warnings.catch_warnings():
        warnings.simplefilter("error", library.LayoutCopy)
        assert gemmlab.matmul(At.T, Bt.T, out=out) is not None
    _assert_right(cp, out, A, B, what="out as a transposed view")
    C0 = rng.uniform(-1, 1, (M, N), dtype=cp.float32)
    C = cp.asfortranarray(C0)                                # row-major product into a column-major out
    with pytest.warns(library.LayoutCopy, match="writes C through a row-major copy"):
        gemmlab.matmul(A, B, out=C, alpha=0.5, beta=2.0)
    _assert_right(cp, C, A, B, C0, 0.5, 2.0, what="column-major out, beta 2")


@pytest.mark.gpu
def test_mistakes_are_named_and_empty_products_are_right():
    cp = device.cupy()
    A, B = cp.ones((4, 3), cp.float32), cp.ones((3, 5), cp.float32)
    with pytest.raises(ValueError, match="A's columns must equal B's rows"):
        gemmlab.matmul(A, cp.ones((4, 5), cp.float32))
    with pytest.raises(TypeError, match="float32"):
        gemmlab.matmul(A.astype(cp.float64), B)
    with pytest.raises(TypeError, match="cupy.ndarray"):
        gemmlab.matmul(np.ones((4, 3), np.float32), B)
    with pytest.raises(ValueError, match="out is 4 x 4"):
        gemmlab.matmul(A, B, out=cp.empty((4, 4), cp.float32))
    with pytest.raises(ValueError, match="beta is not 0"):
        gemmlab.matmul(A, B, beta=1.0)
    assert gemmlab.matmul(cp.ones((0, 3), cp.float32), B).shape == (0, 5)
    C = cp.full((4, 5), 2.0, cp.float32)
    gemmlab.matmul(cp.ones((4, 0), cp.float32), cp.ones((0, 5), cp.float32), out=C, beta=0.5)
    assert bool((C == 1.0).all()), "K = 0: C = beta C"
    C[...] = cp.nan
    gemmlab.matmul(cp.ones((4, 0), cp.float32), cp.ones((0, 5), cp.float32), out=C)
    assert bool((C == 0.0).all()), "beta = 0: C is not read, so NaN in it does not survive"


@pytest.mark.gpu
def test_bench_matmul_times_the_library_call_against_cublas():
    done = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "matmul", "--size", "1000", "1000", "1000",
                           "--reps", "5"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "matmul" in done.stdout and "PASS" in done.stdout and "cuBLAS FP32 timed interleaved" in done.stdout


def test_the_suite_table_gives_the_geometric_mean_and_the_smallest_ratio():
    rows = [{"M": m, "N": 64, "K": 64, "plan_kernel": "k", "params": {"A": 1}, "gflops": g * 1e3,
             "cublas_gflops": 10e3, "ratio": g / 10, "spread": 0.01} for m, g in ((1, 20.0), (2, 5.0), (3, 10.0))]
    table = library.suite_table(rows)
    assert "geometric mean of the ratios 1.000, smallest 0.500 (2x64x64), 3 shapes" in table
    assert table.splitlines()[1].split()[:2] == ["1x64x64", "k"]


def test_a_suite_rows_marks_say_how_its_call_was_reshaped():
    assert library.reshaped_marks({"peeled": True, "staged": True, "padded": 0, "padded_rows": 0}) == ["+edges", "+copyB"]
    assert library.reshaped_marks({"peeled": False, "staged": False, "padded": 32}) == ["+padN"]
    assert library.reshaped_marks({"padded": 0, "padded_rows": 64}) == ["+padM"]
    assert library.reshaped_marks({}) == []


@pytest.mark.gpu
def test_a_product_taller_than_cudas_grid_runs_in_several_launches():
    cp = device.cupy()
    rng = cp.random.default_rng(11)
    tall = dispatch.ROWS_PER_LAUNCH + 1001
    A = rng.uniform(-1, 1, (tall, 5), dtype=cp.float32)
    B = rng.uniform(-1, 1, (5, 3), dtype=cp.float32)
    assert dispatch.plan(tall, 3, 5).launches == 2
    _assert_right(cp, gemmlab.matmul(A, B), A, B, what="tall")
    # both transposed, C wide: C^T = B^T A^T is the tall product, in launches along C^T's rows
    X = rng.uniform(-1, 1, (5, 3), dtype=cp.float32)              # A = X.T, 3 x 5
    Y = rng.uniform(-1, 1, (tall, 5), dtype=cp.float32)           # B = Y.T, 5 x tall
    _assert_right(cp, gemmlab.matmul(X.T, Y.T), cp.ascontiguousarray(X.T), cp.ascontiguousarray(Y.T),
                  what="wide, both transposed")


def test_names_off_the_band_never_cover_each_other_however_close_their_points(monkeypatch):
    """Chapter 14 named 128^3 and 192^3, two calls of a few microseconds under the band, one over the other; and two
    calls over it lie close too. Each name stands a line past the one before it, on either side of the band; and every
    name lies inside the axes (128^3's and 320^3's ran over the axes' lines, near the lower left)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.text as mtext
    from gemmlab.library import plots
    monkeypatch.setattr(plt, "show", lambda: None)
    rows = [{"M": 64 * i, "N": 64, "K": 64, "predicted_us": 10.0 * i, "ms": 0.01 * i, "plan_kernel": "11_last_wave"}
            for i in range(1, 30)]
    rows += [{"M": m, "N": m, "K": m, "predicted_us": us, "ms": us * r / 1e3, "plan_kernel": "12_skinny"}
             for m, us, r in ((128, 5.5, 0.84), (192, 6.9, 0.84), (256, 6.2, 0.8))]
    rows += [{"M": m, "N": 8, "K": m, "predicted_us": us, "ms": us * r / 1e3, "plan_kernel": "13_split_k"}
             for m, us, r in ((768, 31.8, 1.12), (4096, 38.5, 1.12), (320, 6.0, 1.2))]   # 320: near the left edge
    plots.predicted_against_measured(rows, "label")
    fig = plt.gcf()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), mtext.Text.get_window_extent(t, renderer)) for t in fig.axes[0].texts]
    assert len(boxes) == 6
    assert not [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:] if box.overlaps(other)]
    inside = fig.axes[0].get_window_extent(renderer)
    assert not [a for a, box in boxes if box.x0 < inside.x0 or box.y0 < inside.y0 or box.x1 > inside.x1
                or box.y1 > inside.y1], "a name runs past the axes, over their lines"


def test_every_kernels_points_stay_in_sight_and_the_shapes_off_the_band_are_named(monkeypatch):
    """library.plots.predicted_against_measured: where points of two kernels lie on each other both stay in sight
    (chapter 14 hid chapter 10's one point under chapter 11's, then chapter 13's under chapter 12's): hollow markers,
    one shape a kernel, the kernels with fewer points drawn above; the legend keeps the kernels in name order; and
    every shape off the 10% band is named on the chart, as the chapter's prose names them."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from gemmlab.library import plots
    monkeypatch.setattr(plt, "show", lambda: None)
    rows = [{"M": 64 * i, "N": 64, "K": 64, "predicted_us": 10.0 * i, "ms": 0.01 * i, "plan_kernel": "11_last_wave"}
            for i in range(1, 6)]
    rows.append({"M": 1, "N": 1, "K": 1, "predicted_us": 30.0, "ms": 0.03, "plan_kernel": "10_issue_rate"})
    rows.append({"M": 7, "N": 8, "K": 9, "predicted_us": 20.0, "ms": 0.025, "plan_kernel": "11_last_wave"})
    rows.append({"M": 3, "N": 3, "K": 3, "predicted_us": 40.0, "ms": 0.0362, "plan_kernel": "11_last_wave"})  # 9.5% under
    plots.predicted_against_measured(rows, "label")
    ax = plt.gcf().axes[0]
    drawn = {c.get_label(): c for c in ax.collections if c.get_label() in ("10_issue_rate", "11_last_wave")}
    assert drawn["10_issue_rate"].get_zorder() > drawn["11_last_wave"].get_zorder()
    assert all(not c.get_facecolors().any() or c.get_facecolors()[:, 3].max() == 0 for c in drawn.values()), \
        "filled markers hide the points beneath them"
    paths = [drawn[k].get_paths()[0].vertices.tolist() for k in ("10_issue_rate", "11_last_wave")]
    assert paths[0] != paths[1], "one marker for both kernels"
    shown = [t.get_text() for t in ax.get_legend().get_texts()]
    assert shown[-2:] == ["10_issue_rate", "11_last_wave"]
    assert [t.get_text() for t in ax.texts] == ["7 x 8 x 9"], "the one shape off the band (25% over), by name"
    label = ax.texts[0]
    assert label.arrowprops["relpos"] == ((1, 0.5) if label.get_horizontalalignment() == "right" else (0, 0.5)), \
        "the leader leaves the label at the edge nearest its point, not through the label's middle"
    edges = sorted(round(float(l.get_ydata()[0] / l.get_xdata()[0]), 3) for l in ax.lines if l.get_linestyle() == "--")
    assert edges == [0.9, 1.1], ("the band's edges are drawn, 10% either side of the diagonal, where the names start: "
                                 "a point 9.5% under it lies inside, unnamed")
    plt.close(plt.gcf())


def test_the_heatmap_draws_before_and_after_for_each_k(monkeypatch):
    """library.plots.dispatch_heatmaps from rows as `record --matmul` keeps them (made up here: the plot is
    tested, not the GPU): one row of panels per K, the geometric mean and the smallest in each title, the
    smallest cut to 3 decimals as the cells are (0.89378 is under 0.9 and reads 0.893 in both)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from gemmlab.library import plots
    monkeypatch.setattr(plt, "show", lambda: None)
    rows = [{"M": m, "N": n, "K": k, "before_ratio": 0.5, "after_ratio": 2.0 if m == n else 1.0}
            for k in (256, 4096) for m in (256, 512) for n in (256, 512)]
    rows[1]["after_ratio"] = 0.89378
    plots.dispatch_heatmaps(rows, "final", "label")
    fig = plt.gcf()
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 4 and "K = 256" in titles[0] and "K = 4096" in titles[2]
    assert "geometric mean 0.50, smallest 0.50" in titles[0]
    assert "smallest 0.893" in titles[1] and "geometric mean 1.41, smallest 1.000" in titles[3]
    assert "0.893" in [t.get_text() for t in fig.axes[1].texts]
    plt.close(fig)


def test_a_suite_row_that_ran_another_configuration_than_the_models_first_is_marked():
    """A first call that timed a near tie may run another configuration than the model put first: the suite's tables
    mark that row +timed (the row keeps the model's choice beside what ran), and no other."""
    ran = {"M": 1, "N": 4096, "K": 4096, "plan_kernel": "12_skinny", "params": {"LANES": 4}, "gflops": 1e3,
           "cublas_gflops": 1e3, "ratio": 1.0, "spread": 0.01}
    timed = {**ran, "model_kernel": "12_skinny", "model_params": {"LANES": 8}}
    assert library.timed_away(timed) and not library.timed_away(ran)
    assert not library.timed_away({**ran, "model_kernel": "12_skinny", "model_params": {"LANES": 4}})
    lines = library.suite_table([timed, {**ran, "M": 2}]).splitlines()
    assert "+timed" in lines[1] and "+timed" not in lines[2]
