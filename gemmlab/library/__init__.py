"""gemmlab.matmul: C = alpha * A @ B + beta * C for CuPy float32 matrices of any shape, through the
course's kernels, each shape with the kernel and configuration its plan picks (dispatch.plan).

The kernels read row-major operands with leading dimensions. A C-contiguous matrix, or one whose
rows are padded (a slice of a wider one), is passed as it is. Where both A and B are transposed
views of such matrices, the product is computed as C^T = B^T A^T, which reads them as they lie and
writes C^T row-major: C comes back as a transposed view. Anything else is copied once, with a
warning that says why.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np

from .. import bench, device
from . import dispatch, first_use, plan_store
from ..spec import Problem


class LayoutCopy(UserWarning):
    """An operand gemmlab.matmul had to copy before the kernels could read it."""


@dataclass(frozen=True)
class Layout:
    """How a 2-D float32 array lies in memory, as the kernels can read it: row-major rows `ld`
    floats apart (transposed=False), or the transpose of such a matrix (transposed=True)."""
    transposed: bool
    ld: int


@functools.lru_cache(maxsize=4096)   # a call asks three times, with the same few shapes over and over
def layout(shape: tuple[int, int], strides: tuple[int, int], itemsize: int = 4) -> Layout | None:
    """The Layout of an array with these shape and strides (bytes), or None where the kernels cannot
    read it in place (a stride that is not a whole number of elements, or neither axis contiguous)."""
    rows, cols = shape
    if any(s % itemsize for s in strides):
        return None
    s0, s1 = (s // itemsize for s in strides)
    # a stride along an axis of length 1 never moves: it may be anything
    if (s1 == 1 or cols == 1) and (rows == 1 or s0 >= cols):
        return Layout(False, max(s0 if rows > 1 else cols, cols, 1))
    if (s0 == 1 or rows == 1) and (cols == 1 or s1 >= rows):
        return Layout(True, max(s1 if cols > 1 else rows, rows, 1))
    return None


def _described(x) -> str:
    """What a caller passed, as a message names it: its type with its module, and its dtype and shape where
    it has them ('numpy.ndarray (float64, 2 x 3)', 'list')."""
    kind = type(x)
    module = kind.__module__.split(".")[0]
    name = kind.__name__ if module == "builtins" else f"{module}.{kind.__name__}"
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    extra = [str(dtype)] if dtype is not None else []
    if isinstance(shape, tuple):
        sizes = " x ".join(map(str, shape))
        extra.append(sizes if len(shape) == 2 else f"{len(shape)}-D, {sizes}")
    return f"{name} ({', '.join(extra)})" if extra else name


def _no_gpu(why: str, **given) -> RuntimeError:
    """Why gemmlab.matmul cannot run here, naming what it was given and how to give what it takes."""
    named = ", ".join(f"{n}: {_described(x)}" for n, x in given.items() if x is not None)
    return RuntimeError(f"gemmlab.matmul multiplies CuPy float32 matrices (2-D) on an NVIDIA GPU (given {named}), "
                        f"and this machine has none: {why.split(';')[0]}. On a GPU, make them with "
                        f"cupy.asarray(a, dtype=cupy.float32); without one, gemmlab.matmul.plan(M, N, K) says what "
                        f"it would run")


def _check(name: str, array, cp) -> None:
    fix = f"make it one with cupy.asarray({name}, dtype=cupy.float32)"
    if not isinstance(array, cp.ndarray):
        raise TypeError(f"gemmlab.matmul: {name} must be a cupy.ndarray of float32 on the GPU, got "
                        f"{_described(array)}; {fix}")
    if array.ndim != 2:
        raise ValueError(f"gemmlab.matmul: {name} must be a matrix (2-D), got {array.ndim}-D of shape {array.shape}"
                         f"; multiply each matrix of a batch in its own call")
    if array.dtype != cp.float32:
        raise TypeError(f"gemmlab.matmul: {name} is {array.dtype}; this is SGEMM: pass float32 "
                        f"({name}.astype(cupy.float32))")


def _readable(name: str, array, cp) -> tuple[object, Layout]:
    """The array (copied once, with a warning, where the kernels cannot read it in place) and its layout."""
    found = layout(array.shape, array.strides, array.itemsize)
    if found is not None and found.ld < 2**31:
        return array, found
    warnings.warn(f"gemmlab.matmul copies {name} ({array.shape[0]} x {array.shape[1]}, strides {array.strides} "
                  f"bytes): the kernels read row-major rows or their transpose", LayoutCopy, stacklevel=3)
    return cp.ascontiguousarray(array), Layout(False, array.shape[1])


def _aligned(*arrays) -> bool:
    return all(a.data.ptr % 16 == 0 for a in arrays)


# Compiled and loaded kernels, by (kernel, configuration): a plan's kernel is loaded once a process.
_kernels: dict[str, bench.Kernel] = {}


def _kernel(plan: dispatch.Plan) -> bench.Kernel:
    key = plan.key
    if key not in _kernels:
        _kernels[key] = bench.Kernel(plan.spec, plan.params, prebuilt=True)
    return _kernels[key]


# The one launch each call signature came to, for calls made as they are (row-major operands read in
# place, C written in place, one launch of one kernel): a repeated call skips the checks, the plan and the
# argument conversions its signature already passed (a small product's user waits for the host's time).
_prepared: dict[tuple, tuple] = {}


def _signature(A, B, out, alpha, beta) -> tuple:
    """What decides a call's checks, plan and launch: the arrays' types, dtypes, shapes and strides, whether
    every pointer is 16-byte aligned, alpha and beta. TypeError or AttributeError for what is no array."""
    ptrs = A.data.ptr | B.data.ptr | (0 if out is None else out.data.ptr)
    return (type(A), A.dtype, A.shape, A.strides, type(B), B.dtype, B.shape, B.strides,
            None if out is None else (type(out), out.dtype, out.shape, out.strides), ptrs % 16 == 0, alpha, beta)


def matmul(A, B, out=None, alpha: float = 1.0, beta: float = 0.0):
    """C = alpha * A @ B + beta * C, with C = `out` (or a new matrix, where beta must be 0), in FP32
    on the GPU through the course's kernels: the one dispatch.plan picks for this shape. Returns C."""
    try:
        signature = _signature(A, B, out, alpha, beta)
        fast = _prepared.get(signature)
    except (AttributeError, TypeError):        # not arrays, or alpha unhashable: the checks below say what
        signature = fast = None
    if fast is not None:
        launch, cp = fast
        C = out if out is not None else cp.empty((A.shape[0], B.shape[1]), cp.float32)
        launch(A, B, C)
        return C
    try:
        cp = device.cupy()
    except RuntimeError as exc:        # no GPU: say so, with what it was given and what it takes
        raise _no_gpu(str(exc), A=A, B=B, out=out) from None
    _check("A", A, cp)
    _check("B", B, cp)
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise ValueError(f"gemmlab.matmul: A is {M} x {K} and B is {K2} x {N}: A's columns must equal B's rows")
    if out is None:
        if beta != 0:
            raise ValueError("gemmlab.matmul: beta is not 0, so C must be given as out")
    else:
        _check("out", out, cp)
        if out.shape != (M, N):
            raise ValueError(f"gemmlab.matmul: out is {out.shape[0]} x {out.shape[1]}; A @ B is {M} x {N}")
    if M == 0 or N == 0:
        return cp.empty((M, N), cp.float32) if out is None else out
    if K == 0:                                   # no products: C = beta * C (C not read when beta is 0)
        if out is None:
            return cp.zeros((M, N), cp.float32)
        if beta == 0:
            out.fill(0)
        else:
            out *= np.float32(beta)
        return out
    given_a, given_b = A, B
    A, la = _readable("A", A, cp)
    B, lb = _readable("B", B, cp)
    if la.transposed and lb.transposed:
        # C^T (N x M) = B^T A^T: B^T and A^T are row-major as they lie
        ct = out.T if out is not None else cp.empty((M, N), cp.float32, order="F").T
        _run(ct, B.T, lb.ld, A.T, la.ld, N, M, K, alpha, beta, cp)
        return out if out is not None else ct.T
    if la.transposed or lb.transposed:
        name, array = ("A", A) if la.transposed else ("B", B)
        warnings.warn(f"gemmlab.matmul copies {name}: it is a transposed view and the other operand is not; the "
                      f"kernels read both row-major, or both transposed", LayoutCopy, stacklevel=2)
        copied = cp.ascontiguousarray(array)
        A, la = (copied, Layout(False, K)) if la.transposed else (A, la)
        B, lb = (copied, Layout(False, N)) if lb.transposed else (B, lb)
    c = out if out is not None else cp.empty((M, N), cp.float32)
    launch = _run(c, A, la.ld, B, lb.ld, M, N, K, alpha, beta, cp)
    if launch is not None and signature is not None and A is given_a and B is given_b:
        if len(_prepared) >= 4096:                   # a caller of many shapes keeps a bounded memo
            _prepared.clear()
        _prepared[signature] = (launch, cp)
    return c


def _run(C, A, lda: int, B, ldb: int, M: int, N: int, K: int, alpha: float, beta: float, cp):
    """C (row-major M x N, or copied into and out of such) = alpha A B + beta C, A and B row-major.
    Returns the launch, as Kernel.prepared, where the call was one launch on these arrays as they are."""
    target = C
    lc = layout(C.shape, C.strides, C.itemsize)
    if lc is None or lc.transposed:
        warnings.warn("gemmlab.matmul writes C through a row-major copy: out is neither row-major nor the "
                      "transposed view this product writes", LayoutCopy, stacklevel=3)
        C = cp.ascontiguousarray(target) if beta != 0 else cp.empty((M, N), cp.float32)
        lc = Layout(False, N)
    aligned = _aligned(A, B, C)
    plan = first_use.adjusted(plan_store.plan(M, N, K, lda, ldb, lc.ld, aligned), aligned)
    if plan.pad_n or plan.pad_m:                     # run as a wider or taller C, in a buffer
        call = _padded_call(plan, M, N, K, lda, ldb, lc.ld, float(alpha), float(beta), cp)
        call(A, B, C)
        if C is not target:
            target[...] = C
            return None
        return call                                  # it launches in rows itself where C is past CUDA's grid
    if plan.stage_ldb:
        B, ldb = _staged(B, K, N, ldb, plan.stage_ldb, cp), plan.stage_ldb
    rows, cols = plan.core or (M, N)
    kernel = _kernel(plan)
    launch = None
    if rows <= dispatch.ROWS_PER_LAUNCH:
        problem = _problem(rows, cols, K, lda, ldb, lc.ld, float(alpha), float(beta))
        kernel.launch(problem, A, B, C)
        if not plan.parts and not plan.stage_ldb and C is target:
            launch = kernel.prepared(problem)
    else:                                            # M past CUDA's grid rows: several launches
        _launch_in_rows(kernel, M, N, K, lda, ldb, lc.ld, alpha, beta, A, B, C)
    for part in plan.parts:                          # the rows and columns past the core, each by its own plan
        p, r, c = part.plan.problem, part.row0, part.col0
        _kernel(part.plan).launch(_problem(p.M, p.N, K, lda, ldb, lc.ld, float(alpha), float(beta)),
                                  A[r:r + p.M], B[:, c:c + p.N], C[r:r + p.M, c:c + p.N])
    if C is not target:
        target[...] = C
    return launch


def _padded_call(plan: dispatch.Plan, M: int, N: int, K: int, lda: int, ldb: int, ldc: int, alpha: float,
                 beta: float, cp):
    """call(A, B, C) for a plan that runs C as a taller or wider one (plan.pad_m, plan.pad_n), everything but
    the buffers worked out once, as for a prepared launch: a padded call makes three launches, and where the host
    takes longer to issue them than the GPU to run them, the GPU waits between them. B's columns past N (A's
    rows past M) are left as the buffer had them: column j of C depends on column j of B alone (row i on row i
    of A), and C's columns (rows) past its own are never copied back (zeroing them cost a launch, about 8 us)."""
    rows, cols = plan.pad_m or M, plan.pad_n or N
    kernel = _kernel(plan)
    if plan.pad_n:
        problem = _problem(rows, cols, K, lda, cols, cols, alpha, beta)
    else:
        problem = _problem(rows, cols, K, K, ldb, cols, alpha, beta)
    launch = kernel.prepared(problem) if rows <= dispatch.ROWS_PER_LAUNCH else None

    def call(A, B, C) -> None:
        padded = cp.empty((rows, cols), cp.float32)
        if beta != 0:
            _copy_columns(padded, cols, C, ldc, M, N, cp)
        if plan.pad_n:
            A_, B_ = A, _staged(B, K, N, ldb, cols, cp)
        else:
            A_, B_ = _staged(A, M, K, lda, K, cp, rows), B
        if launch is not None:
            launch(A_, B_, padded)
        else:
            _launch_in_rows(kernel, rows, cols, K, problem.lda, problem.ldb, cols, alpha, beta, A_, B_, padded)
        _copy_columns(C, ldc, padded, cols, M, N, cp)
    return call


def _launch_in_rows(kernel: bench.Kernel, M: int, N: int, K: int, lda: int, ldb: int, ldc: int, alpha: float,
                    beta: float, A, B, C) -> None:
    """C (M x N) = alpha A B + beta C by one kernel, in launches of at most ROWS_PER_LAUNCH rows (CUDA's grid)."""
    for r in range(0, M, dispatch.ROWS_PER_LAUNCH):
        rows = min(dispatch.ROWS_PER_LAUNCH, M - r)
        kernel.launch(_problem(rows, N, K, lda, ldb, ldc, float(alpha), float(beta)), A[r:r + rows], B, C[r:r + rows])


def _rows_of(array, ld: int, rows: int, cols: int, cp):
    """The first `cols` columns of `rows` rows of the buffer `array` starts, rows `ld` floats apart, as a view."""
    return cp.ndarray((rows, cols), cp.float32, array.data, strides=(ld * 4, 4))


def _copy_columns(dst, ld_dst: int, src, ld_src: int, rows: int, cols: int, cp) -> None:
    """The first `cols` columns of `rows` rows from src to dst (rows ld_src and ld_dst floats apart), on the
    current stream: one block of memory (rows packed on both sides) by the CUDA runtime's copy, which costs the
    host least; rows apart by CuPy's elementwise copy, which at a few columns took 4.4-6.0 us where the runtime's
    2-D copy took 6.0-10.2 (docs/dispatch-history.md, round 21)."""
    if rows == 1 or ld_dst == ld_src == cols:
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, rows * cols * 4, cp.cuda.runtime.memcpyDeviceToDevice,
                                    cp.cuda.get_current_stream().ptr)
    else:
        _rows_of(dst, ld_dst, rows, cols, cp)[...] = _rows_of(src, ld_src, rows, cols, cp)


def _staged(X, rows: int, cols: int, ld: int, stage_ld: int, cp, stage_rows: int = 0):
    """X (rows x cols, rows ld floats apart) copied into a new buffer of `stage_rows` (at least `rows`) rows
    stage_ld floats apart (a 16-byte multiple), on the current stream. The columns past `cols` and the rows
    past `rows` are not written."""
    staged = cp.empty((max(rows, stage_rows), stage_ld), cp.float32)
    _copy_columns(staged, stage_ld, X, ld, rows, cols, cp)
    return staged


@functools.lru_cache(maxsize=4096)
def _problem(*args) -> Problem:
    """A launch's Problem, checked once per sizes, leading dimensions, alpha and beta (a small call's
    host time is what its user waits for)."""
    return Problem(*args)


def _plan(M: int, N: int, K: int, lda: int = 0, ldb: int = 0, ldc: int = 0) -> dispatch.Plan:
    """gemmlab.matmul.plan(M, N, K): the kernel, configuration, grid and split matmul runs for a
    row-major M x N x K product, and why (no GPU needed)."""
    return dispatch.plan(M, N, K, lda, ldb, ldc)


matmul.plan = _plan


def ran(M: int, N: int, K: int) -> dispatch.Plan:
    """The plan gemmlab.matmul runs for packed, aligned operands of this shape in this process: the model's, or where
    a first call timed the options the model could not tell apart, the fastest of them (first_use). On a GPU."""
    return first_use.adjusted(dispatch.plan(M, N, K), True)


def bench_matmul(size, reps: int | None = None) -> bench.Measurement:
    """gemmlab.matmul, the whole call as a user makes it, validated then timed against cuBLAS FP32 in
    the same run (interleaved, L2 flushed), on fresh random inputs."""
    label = ran(*size).label
    return bench.bench_call(lambda ops: matmul(ops.A, ops.B, out=ops.C), "matmul", {"plan": label},
                            f"gemmlab.matmul [{label}]", size, reps)


def suite_table(rows: list[dict]) -> str:
    """The suite as the closing note and the chapter show it: shape, plan, TFLOP/s, cuBLAS, ratio,
    spread; the geometric mean of the ratios and the smallest."""
    lines = [f"{'M x N x K':<18} {'plan':<64} {'TFLOP/s':>8} {'cuBLAS':>8} {'ratio':>6} {'spread':>7}"]
    for r in rows:
        changes = (f"{r['plan_kernel']}{''.join(reshaped_marks(r))}{'+timed' if timed_away(r) else ''} "
                   + " ".join(f"{k}={v}" for k, v in r["params"].items()))
        lines.append(f"{'x'.join(str(r[d]) for d in 'MNK'):<18} {changes[:64]:<64} {r['gflops'] / 1e3:>8.2f} "
                     f"{r['cublas_gflops'] / 1e3:>8.2f} {r['ratio']:>6.3f} {r['spread']:>7.1%}")
    return "\n".join(lines + suite_summary(rows))


def reshaped_marks(row: dict) -> list[str]:
    """'+edges' where a suite row's plan ran peeled, '+copyB' where on a copy of B (both, or neither), '+padN'
    where C's columns were padded, '+padM' where its rows were."""
    return [mark for mark, key in (("+edges", "peeled"), ("+copyB", "staged"), ("+padN", "padded"),
                                   ("+padM", "padded_rows")) if row.get(key)]


def timed_away(row: dict) -> bool:
    """Whether a suite row ran another configuration than the model put first: its first call timed a near tie and
    kept the fastest (the row keeps the model's choice as model_kernel and model_params)."""
    return "model_params" in row and (row.get("model_kernel"), row["model_params"]) != (row["plan_kernel"], row["params"])


def suite_summary(rows: list[dict]) -> list[str]:
    """The suite's summary lines: the geometric mean of the ratios and the smallest, each group's range, the
    shapes under 0.9."""
    ratios = np.array([r["ratio"] for r in rows])
    lines = [f"geometric mean of the ratios {np.exp(np.log(ratios).mean()):.3f}, smallest {ratios.min():.3f} "
             f"({'x'.join(str(rows[int(ratios.argmin())][d]) for d in 'MNK')}), {len(rows)} shapes"]
    for name, group in suite_groups(rows).items():
        if group:
            low, high = min(r["ratio"] for r in group), max(r["ratio"] for r in group)
            lines.append(f"{name}: {len(group)} shapes, ratios {low:.3f} to {high:.3f}")
    under = [r for r in rows if r["ratio"] < 0.9]
    lines.append("under 0.9: " + (", ".join("x".join(str(r[d]) for d in "MNK") for r in under) or "none"))
    return lines


# A large product: at least as many FLOPs as 3072^3, every size a multiple of 8.
LARGE_FLOPS = 2 * 3072 ** 3


def suite_groups(rows: list[dict]) -> dict[str, list[dict]]:
    """The suite's rows by kind, as suite_table's last lines and chapter 12 describe them."""
    return {
        "large (at least 3072³'s FLOPs, sizes multiples of 8)":
            [r for r in rows if 2 * r["M"] * r["N"] * r["K"] >= LARGE_FLOPS and all(r[d] % 8 == 0 for d in "MNK")],
        "M or N at most 4": [r for r in rows if min(r["M"], r["N"]) <= 4],
    }
