"""Run, validate and time kernels on the GPU, with cuBLAS FP32 timed by the same code.

Every timing is preceded by a validation in the same process on fresh random inputs:
the output is poisoned with NaN, the reference is computed in float64, the error is a
normwise relative error with a tolerance that grows with sqrt(K), and NaN/Inf anywhere fails.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from . import compile as compiler
from . import device, registry
from .spec import KernelSpec, Params, Problem, UnsupportedShape

UNIT_ROUNDOFF = 2.0 ** -24
TOL_FACTOR = 16.0
# cublasMath_t values (stable since CUDA 11).
CUBLAS_DEFAULT_MATH, CUBLAS_PEDANTIC_MATH, CUBLAS_TF32_TENSOR_OP_MATH = 0, 2, 3


class ValidationFailed(AssertionError):
    pass


class TooLarge(ValueError):
    """A problem whose operands (and the float64 check) do not fit in the GPU's free memory."""


def tolerance(K: int) -> float:
    """FP32 accumulation of K products: rounding errors grow like sqrt(K) for random data.
    16 u sqrt(K) sits well below what TF32 inputs give (about 2^-11 relative)."""
    return TOL_FACTOR * UNIT_ROUNDOFF * math.sqrt(K)


# --- operands --------------------------------------------------------------------------------

@dataclass
class Operands:
    """Device buffers for one problem; A, B, C are views of width K, N, N into padded rows."""
    problem: Problem
    A: object
    B: object
    C: object
    C0: object  # the initial C (for beta != 0 references)

    @classmethod
    def random(cls, problem: Problem, seed: int | None = None) -> "Operands":
        cp = device.cupy()
        p = problem
        # A, B and C in float32 (and C's copy), and the float64 reference and its bound at the check
        needed = 4 * (p.M * p.lda + p.K * p.ldb + 2 * p.M * p.ldc) + 8 * (p.M * p.K + p.K * p.N + 3 * p.M * p.N)
        free = cp.cuda.runtime.memGetInfo()[0]
        if needed > free:
            raise TooLarge(f"{p.M} x {p.N} x {p.K} needs about {needed / 2**30:.1f} GiB of GPU memory with its check; "
                           f"{free / 2**30:.1f} GiB are free: try a smaller size")
        rng = cp.random.default_rng(seed)
        A = rng.uniform(-1, 1, (p.M, p.lda), dtype=cp.float32)[:, :p.K]
        B = rng.uniform(-1, 1, (p.K, p.ldb), dtype=cp.float32)[:, :p.N]
        Cbuf = cp.empty((p.M, p.ldc), dtype=cp.float32)
        C = Cbuf[:, :p.N]
        if p.beta == 0.0:
            Cbuf.fill(cp.nan)  # poison: an element the kernel forgets stays NaN and fails
            C0 = None
        else:
            C[...] = rng.uniform(-1, 1, (p.M, p.N), dtype=cp.float32)
            C0 = C.copy()
        return cls(problem, A, B, C, C0)

    def reset_output(self) -> None:
        cp = device.cupy()
        if self.C0 is None:
            self.C.fill(cp.nan)
        else:
            self.C[...] = self.C0

    def reference(self):
        cp = device.cupy()
        p = self.problem
        ref = p.alpha * (self.A.astype(cp.float64) @ self.B.astype(cp.float64))
        if self.C0 is not None:
            ref += p.beta * self.C0.astype(cp.float64)
        return ref


@dataclass(frozen=True)
class Check:
    """Two tests, both must pass, and no NaN/Inf anywhere:
    * normwise: ||C - ref|| / ||ref|| <= 16 u sqrt(K), the statistical size of FP32 rounding
      (TF32 inputs, about 2^-11 relative, fail it);
    * elementwise: every |C - ref|_ij within the worst-case FP32 bound (K + 2) u (|alpha||A||B| +
      |beta||C|)_ij, which no correct FP32 summation order can exceed, so one wrong element fails."""
    ok: bool
    rel_err: float
    tol: float
    nonfinite: int
    elementwise: float  # worst |C - ref| over its bound: <= 1 passes
    where: str = ""      # on a failure, where the wrong elements lie: a pattern points at its cause
    at_edge: bool = False  # they lie only in the last rows or the last columns of C

    def __str__(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        bad = f", {self.nonfinite} NaN/Inf" if self.nonfinite else ""
        where = f"; {self.where}" if self.where else ""
        return (f"{verdict}: relative error {self.rel_err:.2e} (tolerance {self.tol:.2e}{bad}), "
                f"worst element at {self.elementwise:.0%} of its bound{where}")


def span(index, n: int, what: str) -> tuple[str, bool]:
    """Rows (or columns) `index` of n, in words, and whether they are the last ones and not all."""
    if len(index) == n:
        return f"every {what}", False
    lo, hi = int(index[0]), int(index[-1])
    last = hi == n - 1 and hi - lo + 1 == len(index)
    if len(index) == 1:
        return f"{what} {lo}" + (" (the last)" if last else ""), last
    if hi - lo + 1 == len(index):
        return f"{what}s {lo}-{hi}" + (f" (the last {len(index)})" if last else ""), last
    return f"{len(index)} {what}s between {lo} and {hi}", False


def _where_wrong(bad) -> tuple[str, bool]:
    cp = device.cupy()
    rows = cp.nonzero(bad.any(axis=1))[0].get()
    cols = cp.nonzero(bad.any(axis=0))[0].get()
    if not len(rows):
        return "no element past its own bound, but the error over C too large", False
    (in_rows, last_rows), (in_cols, last_cols) = span(rows, bad.shape[0], "row"), span(cols, bad.shape[1], "column")
    return (f"{int(bad.sum()):,} of {bad.size:,} elements wrong, in {in_rows} and {in_cols}",
            last_rows or last_cols)


def check(ops: Operands) -> Check:
    cp = device.cupy()
    p = ops.problem
    out = ops.C.astype(cp.float64)
    nonfinite = int((~cp.isfinite(out)).sum())
    ref = ops.reference()
    tol = tolerance(p.K)
    if nonfinite:
        return Check(False, float("inf"), tol, nonfinite, float("inf"), *_where_wrong(~cp.isfinite(out)))
    err = cp.abs(out - ref)
    rel = float(cp.linalg.norm(err)) / (float(cp.linalg.norm(ref)) or 1.0)
    scale = abs(p.alpha) * (cp.abs(ops.A).astype(cp.float64) @ cp.abs(ops.B).astype(cp.float64))
    if ops.C0 is not None:
        scale += abs(p.beta) * cp.abs(ops.C0).astype(cp.float64)
    bound = (p.K + 2) * UNIT_ROUNDOFF * scale + 1e-30
    worst = float((err / bound).max())
    if rel <= tol and worst <= 1.0:
        return Check(True, rel, tol, 0, worst)
    return Check(False, rel, tol, 0, worst, *_where_wrong(err > bound))


# --- launching ---------------------------------------------------------------------------------

_modules: dict[str, object] = {}


class Kernel:
    """A compiled kernel loaded into CuPy, callable on Operands."""

    def __init__(self, kernel: str | KernelSpec, params: Params | None = None, arch: str | None = None,
                 fresh: bool = False, source=None, prebuilt: bool = False):
        """fresh=True compiles and loads anew, bypassing both caches (to show what that costs);
        `source`: a learner's file compiled under this kernel's spec (compile.compile_kernel);
        `prebuilt`: a cubin gemmlab ships for this build may be taken (prebuilt.py), and one this
        driver cannot load is compiled here instead."""
        cp = device.cupy()
        self.spec = kernel if isinstance(kernel, KernelSpec) else registry.get(kernel)
        arch = arch or device.facts().arch
        self.build = compiler.compile_kernel(self.spec, params, arch, use_cache=not fresh, source=source,
                                             prebuilt=prebuilt)
        try:
            self.function = self._load(self.build, fresh)
        except cp.cuda.driver.CUDADriverError:
            if not self.build.shipped:
                raise
            # a driver older than the compiler that built the shipped cubin: built by this machine's
            self.build = compiler.compile_kernel(self.spec, params, arch, source=source)
            self.function = self._load(self.build, fresh)
        self.params = self.build.params
        dyn = self.spec.dynamic_smem(self.params)
        if dyn > 48 * 1024:
            self.function.max_dynamic_shared_size_bytes = dyn
        self.dynamic_smem = dyn
        # Blocks the GPU runs at once: where a kernel that splits tiles plans its last wave.
        self.slots = device.facts().sm_count * self.build.occupancy.blocks_per_sm
        self._alignment = self.spec.pointer_alignment(self.params)
        self._grids: dict[tuple, tuple] = {}

    @staticmethod
    def _load(build, fresh: bool):
        key = str(build.cubin_path)
        if key not in _modules or fresh:
            module = device.cupy().RawModule(path=key)
            function = module.get_function("sgemm")      # loads the module: a cubin the driver refuses raises here
            _modules[key] = module
            return function
        return _modules[key].get_function("sgemm")

    def _grid(self, p: Problem) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) for a problem this kernel may run (its shape rules checked): worked out once per
        sizes, leading dimensions and block slots, which are all the rules and the grid depend on."""
        key = (p.M, p.N, p.K, p.lda, p.ldb, p.ldc, self.slots)
        if key not in self._grids:
            if len(self._grids) >= 4096:             # a caller of many shapes keeps a bounded cache
                self._grids.clear()
            self.spec.check_shape(self.params, p)
            self._grids[key] = self.spec.launch(self.params, p, self.slots)
        return self._grids[key]

    def __call__(self, ops: Operands) -> None:
        self.launch(ops.problem, ops.A, ops.B, ops.C)

    def launch(self, p: Problem, A, B, C) -> None:
        """One launch on device arrays whose rows lie p.lda, p.ldb and p.ldc floats apart."""
        grid, block = self._grid(p)
        align = self._alignment
        for name, array in (("A", A), ("B", B), ("C", C)):
            if array.data.ptr % align:
                raise UnsupportedShape(
                    self.spec.name, "pointer-alignment",
                    f"{name} starts at an address that is not a multiple of {align} bytes; this kernel "
                    f"loads {align // 4} floats at a time. Pass an aligned copy (e.g. cupy.ascontiguousarray)")
        i32, f32 = np.int32, np.float32
        self.function(grid, block,
                      (i32(p.M), i32(p.N), i32(p.K), f32(p.alpha), A, i32(p.lda), B, i32(p.ldb),
                       f32(p.beta), C, i32(p.ldc)),
                      shared_mem=self.dynamic_smem)

    def prepared(self, p: Problem) -> Callable:
        """launch(A, B, C) for this problem, everything but the arrays worked out once (the grid, the
        arguments' C types): for a caller that checked the arrays' pointers against pointer_alignment."""
        grid, block = self._grid(p)
        i32, f32 = np.int32, np.float32
        m, n, k, alpha, lda, ldb, beta, ldc = (i32(p.M), i32(p.N), i32(p.K), f32(p.alpha), i32(p.lda), i32(p.ldb),
                                               f32(p.beta), i32(p.ldc))
        function, smem = self.function, self.dynamic_smem

        def launch(A, B, C) -> None:
            function(grid, block, (m, n, k, alpha, A, lda, B, ldb, beta, C, ldc), shared_mem=smem)
        return launch

    def validate(self, problem: Problem, seed: int | None = None) -> Check:
        ops = Operands.random(problem, seed)
        self(ops)
        device.cupy().cuda.runtime.deviceSynchronize()
        return check(ops)


def cublas_sgemm(ops: Operands, math_mode: int = CUBLAS_DEFAULT_MATH) -> None:
    """Row-major C = alpha A B + beta C through column-major cublasSgemm: C^T = B^T A^T.
    The handle's math mode is set on every call: DEFAULT is plain FP32 (never TF32)."""
    cp = device.cupy()
    from cupy_backends.cuda.libs import cublas
    p = ops.problem
    handle = cp.cuda.device.get_cublas_handle()
    cublas.setMathMode(handle, math_mode)
    cublas.setPointerMode(handle, 0)  # host pointers for alpha and beta
    alpha, beta = np.array(p.alpha, np.float32), np.array(p.beta, np.float32)
    cublas.sgemm(handle, 0, 0, p.N, p.M, p.K, alpha.ctypes.data, ops.B.data.ptr, p.ldb,
                 ops.A.data.ptr, p.lda, beta.ctypes.data, ops.C.data.ptr, p.ldc)
    if math_mode != CUBLAS_DEFAULT_MATH:
        cublas.setMathMode(handle, CUBLAS_DEFAULT_MATH)


# --- timing --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    max_ms: float
    reps: int

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> "Timing":
        a = np.asarray(samples_ms)
        return cls(float(np.median(a)), float(np.percentile(a, 25)), float(np.percentile(a, 75)),
                   float(a.min()), float(a.max()), len(a))

    @property
    def spread(self) -> float:
        """Interquartile range over the median."""
        return (self.q3_ms - self.q1_ms) / self.median_ms


class L2Flusher:
    """Writes a buffer twice the L2 size so no operand is still cached when timing starts."""

    def __init__(self):
        cp = device.cupy()
        self.buf = cp.empty(max(2 * device.facts().l2_bytes, 1 << 20) // 4, dtype=cp.float32)

    def __call__(self):
        self.buf.fill(0.0)


def time_interleaved(fns: Sequence[Callable[[], None]], reps: int | None = None, warmup: int = 2,
                     budget_s: float = 0.6, min_reps: int = 5, max_reps: int = 50,
                     flush: bool = True) -> list[Timing]:
    """Time several launches in one loop, interleaved (kernel, cuBLAS, kernel, ...), each
    preceded by an L2 flush and bracketed by CUDA events. Warm-up runs first (module load,
    clocks ramping). With reps=None the count fits the time budget, within [min_reps, max_reps].
    Each round starts one launch further along the list, so that no launch always runs in the same
    place: an H100 with its clocks free ran the launch that came right after cuBLAS a quarter slower
    than the same cubin one place later (the exercise check's solution against the chapter's kernel)."""
    cp = device.cupy()
    flusher = L2Flusher() if flush else (lambda: None)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    slowest = 0.0
    for fn in fns:
        for _ in range(warmup):
            flusher()
            start.record()
            fn()
            stop.record()
            stop.synchronize()
        slowest = max(slowest, cp.cuda.get_elapsed_time(start, stop) / 1e3)
    if reps is None:
        per_round = max(slowest * len(fns), 1e-6)
        reps = int(min(max_reps, max(min_reps, budget_s / per_round)))
    events = [[(cp.cuda.Event(), cp.cuda.Event()) for _ in fns] for _ in range(reps)]
    for r, round_ in enumerate(events):
        for j in range(len(fns)):
            i = (j + r) % len(fns)
            a, b = round_[i]
            flusher()
            a.record()
            fns[i]()
            b.record()
    b.synchronize()                      # the last event recorded: every launch before it has ended
    return [Timing.of([cp.cuda.get_elapsed_time(*round_[i]) for round_ in events]) for i in range(len(fns))]


# --- one benchmark -------------------------------------------------------------------------------

@dataclass
class Measurement:
    kernel: str
    params: dict
    M: int
    N: int
    K: int
    kernel_time: Timing
    cublas_time: Timing
    check: Check
    cublas_check: Check

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    @property
    def gflops(self) -> float:
        return self.flops / (self.kernel_time.median_ms * 1e-3) / 1e9

    @property
    def cublas_gflops(self) -> float:
        return self.flops / (self.cublas_time.median_ms * 1e-3) / 1e9

    @property
    def ratio(self) -> float:
        return self.gflops / self.cublas_gflops

    def as_row(self) -> dict:
        return {
            "kernel": self.kernel, "params": self.params, "M": self.M, "N": self.N, "K": self.K,
            "ms": self.kernel_time.median_ms, "spread": self.kernel_time.spread, "reps": self.kernel_time.reps,
            "gflops": self.gflops, "cublas_ms": self.cublas_time.median_ms,
            "cublas_spread": self.cublas_time.spread, "cublas_gflops": self.cublas_gflops,
            "ratio": self.ratio, "rel_err": self.check.rel_err, "tol": self.check.tol,
            "elementwise": self.check.elementwise,
            "cublas_rel_err": self.cublas_check.rel_err,
        }


_cublas_checks: dict[tuple[int, int, int], Check] = {}


def bench(kernel: str | KernelSpec, params: Params | None = None, size: Sequence[int] = (4096, 4096, 4096),
          reps: int | None = None, seed: int | None = None, budget_s: float = 0.6) -> Measurement:
    """Validate the kernel on fresh inputs (cuBLAS too, once per size and process), then time
    both, interleaved, on new inputs."""
    k = Kernel(kernel, params)
    return bench_call(k, k.spec.name, k.params, f"{k.spec.name} [{k.spec.config_label(k.params)}]", size, reps,
                      seed, budget_s)


def bench_call(run: Callable[[Operands], None], name: str, params: dict, label: str, size: Sequence[int],
               reps: int | None = None, seed: int | None = None, budget_s: float = 0.6) -> Measurement:
    """bench for any call that computes an Operands' C (a kernel, or gemmlab.matmul): validated, and
    cuBLAS too (once per size and process), then both timed, interleaved, on new inputs. `label`
    names the call in a validation failure."""
    M, N, K = size
    ops = Operands.random(Problem(M, N, K), seed)
    run(ops)
    result = check(ops)
    if not result.ok:
        raise ValidationFailed(f"{label} at {M}x{N}x{K}: {result}")
    if (M, N, K) not in _cublas_checks:
        ops.reset_output()
        cublas_sgemm(ops)
        _cublas_checks[(M, N, K)] = check(ops)
    cublas_check = _cublas_checks[(M, N, K)]
    if not cublas_check.ok:
        raise ValidationFailed(f"cuBLAS at {M}x{N}x{K}: {cublas_check}")
    ops = Operands.random(Problem(M, N, K), seed)
    kt, ct = time_interleaved([lambda: run(ops), lambda: cublas_sgemm(ops)], reps=reps, budget_s=budget_s)
    return Measurement(name, params, M, N, K, kt, ct, result, cublas_check)


def bench_cublas(size: Sequence[int], math_mode: int = CUBLAS_DEFAULT_MATH, reps: int | None = None) -> tuple[Timing, Check]:
    """cuBLAS alone (chapter 00's sweep, and the TF32 contrast)."""
    M, N, K = size
    ops = Operands.random(Problem(M, N, K))
    cublas_sgemm(ops, math_mode)
    result = check(ops)
    (t,) = time_interleaved([lambda: cublas_sgemm(ops, math_mode)], reps=reps)
    return t, result
