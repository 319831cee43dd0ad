"""The measurement programmes behind a record, each also run live by a chapter on a GPU:
chapter 00's cuBLAS measurements, chapter 09's ladder, and the final chapter's per-shape search
and table. Every kernel result was validated before it was timed (bench.bench raises otherwise).
"""
from __future__ import annotations

import time
from typing import Callable

from tqdm.auto import tqdm

from . import bench, course, device, records, registry
from .spec import KernelSpec, Problem


def measure_chapter00() -> dict:
    """Everything chapter 00 shows: cuBLAS over sizes, FP32 against TF32, what warm-up hides."""
    cp = device.cupy()
    out = {"cublas_sweep": [], "tf32": {}, "first_launches_ms": [], "samples": {}}
    for s in course.CUBLAS_SIZES:
        t, check = bench.bench_cublas((s, s, s))
        if not check.ok:
            raise bench.ValidationFailed(f"cuBLAS at {s}: {check}")
        out["cublas_sweep"].append({"size": s, "ms": t.median_ms, "spread": t.spread,
                                    "gflops": 2 * s ** 3 / (t.median_ms * 1e-3) / 1e9, "rel_err": check.rel_err})
    s = course.STEP_SIZE
    for mode, name in ((bench.CUBLAS_DEFAULT_MATH, "fp32"), (bench.CUBLAS_TF32_TENSOR_OP_MATH, "tf32")):
        t, check = bench.bench_cublas((s, s, s), math_mode=mode)
        out["tf32"][name] = {"size": s, "ms": t.median_ms, "gflops": 2 * s ** 3 / (t.median_ms * 1e-3) / 1e9,
                             "rel_err": check.rel_err, "tol": check.tol}
    # What warm-up hides. (1) The first call of a kernel pays for compiling and loading it: host
    # wall clock, compile cache bypassed. (2) After the GPU idles its clock drops; launches right
    # after an idle second are timed one by one with events.
    first = registry.by_chapter(course.FIRST_CALL_CHAPTER)
    started = time.perf_counter()
    k = bench.Kernel(first, first.defaults, fresh=True)
    ops = bench.Operands.random(Problem(1024, 1024, 1024))
    k(ops)
    cp.cuda.runtime.deviceSynchronize()
    out["first_call"] = {"kernel": first.name, "params": k.params, "ms": (time.perf_counter() - started) * 1e3}
    time.sleep(2.0)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(30):
        start.record()
        k(ops)
        stop.record()
        stop.synchronize()
        out["first_launches_ms"].append(cp.cuda.get_elapsed_time(start, stop))
    # Repeated timings of one cuBLAS call, with and without the L2 flush.
    ops = bench.Operands.random(Problem(1024, 1024, 1024))
    for flush in (True, False):
        (t,) = bench.time_interleaved([lambda: bench.cublas_sgemm(ops)], reps=200, flush=flush)
        out["samples"]["flushed" if flush else "hot"] = {"median_ms": t.median_ms, "q1_ms": t.q1_ms,
                                                          "q3_ms": t.q3_ms, "min_ms": t.min_ms, "max_ms": t.max_ms}
    return out


def measure_ladder(results: list[dict], progress: bool = True) -> list[dict]:
    """Each kernel at its best configuration at course.LADDER_PICK_SIZE (from `results`) over the
    ladder's shapes."""
    jobs = [(spec, records.best_config(results, spec.name, course.LADDER_PICK_SIZE, spec.defaults), shape)
            for spec in registry.KERNELS.values() for shape in course.LADDER_SHAPES]
    return [bench.bench(spec, p, s, budget_s=0.3).as_row()
            for spec, p, s in tqdm(jobs, desc="ladder", disable=not progress)]


def measure_shape_search(spec: KernelSpec, progress: bool = True) -> list[dict]:
    """At each shape of the spec's per-shape search, every candidate, validated then timed
    against cuBLAS: what the final chapter's table picks its configuration per shape from."""
    search = registry.programme(spec).shape_search
    jobs = [(shape, cfg) for shape in search.shapes for cfg in search.candidates]
    return [bench.bench(spec, cfg, shape, budget_s=0.25).as_row()
            for shape, cfg in tqdm(jobs, desc=f"{spec.name}: a configuration per shape", disable=not progress)]


def measure_final(spec: KernelSpec, params_at: Callable[[tuple], dict], progress: bool = True) -> list[dict]:
    """The final chapter's table: the kernel against cuBLAS at each shape of its per-shape search,
    at the configuration `params_at(shape)` gives, `reps` timed runs of each, interleaved, L2
    flushed before every run, validated first."""
    search = registry.programme(spec).shape_search
    return [bench.bench(spec, params_at(shape), shape, reps=search.reps).as_row()
            for shape in tqdm(search.shapes, desc=f"{spec.name} against cuBLAS", disable=not progress)]
