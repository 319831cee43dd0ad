"""Writes records: runs the measurement campaigns on this GPU, profiles with Nsight Compute, and
saves one JSON file per device under gemmlab/data/ (records.py reads them).

`python -m gemmlab record` measures every kernel over every configuration its sliders offer and
every explorer size, each chapter's steps, chapter 00's measurements, the ladder, the final
kernel's per-shape search and table, every kernel's Nsight Compute counters and profiles (at its
defaults, its best configuration and its steps), and the memory latencies and L2 bandwidth (probes.py).
"""
from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from tqdm.auto import tqdm

from .. import bench, campaigns, course, device, files, identity, probes, records, registry, toolchain
from . import carry, training
from ..library.time_model import config_key
from ..spec import KernelSpec

# Nsight Compute's names for what records.STALL_REASONS lists, per issued instruction.
STALL_METRICS = {f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio": r for r in records.STALL_REASONS}
ISSUE_METRIC = "smsp__issue_active.avg.per_cycle_active"
# and what was issued, and how busy the L1/shared-memory pipes were
MIX_METRICS = {"smsp__inst_executed.sum": "instructions",
               "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "ffma_thread_instructions",
               "l1tex__throughput.avg.pct_of_peak_sustained_active": "l1_shared_pct_of_peak"}
# and, for the hierarchical roofline and the issue-slot view, the bytes each level moved, the shared
# memory wavefronts, and the clock and cycles the launch had. Profiles are read without them where
# this ncu does not know one of them.
LEVEL_METRICS = {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": "shared_wavefronts",
                 "lts__t_bytes.sum": "l2_bytes",
                 "dram__bytes_read.sum": "dram_bytes_read",
                 "dram__bytes_write.sum": "dram_bytes_written",
                 "sm__cycles_active.avg": "sm_cycles_active",
                 "sm__cycles_elapsed.avg": "sm_cycles_elapsed",
                 "gpc__cycles_elapsed.avg.per_second": "clock_hz",
                 "gpu__time_duration.sum": "duration_ns",
                 "smsp__warps_active.avg.per_cycle_active": "warps_per_scheduler"}


def versions() -> dict:
    out = {"python": platform.python_version(), "nvrtc": toolchain.nvrtc_build()}
    for dist in ("cupy-cuda13x", "cupy-cuda12x", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


_COUNTERS_DENIED: list[bool] = []   # set once ncu reports that counters are not accessible


def _ncu_csv(metrics: list[str], run_args: list[str]) -> dict[str, float] | None:
    """The metrics of the first GEMM launch of `python -m gemmlab run RUN_ARGS` under ncu (clocks
    left alone), or None where ncu is missing or gave nothing."""
    ncu = shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if Path(p).exists()), None)
    if ncu is None or os.environ.get("GEMMLAB_NO_NCU") or _COUNTERS_DENIED:
        return None
    cmd = [ncu, "--clock-control", "none", "--kernel-name", "regex:gemm", "--launch-count", "1", "--csv",
           "--metrics", ",".join(metrics), sys.executable, "-m", "gemmlab", "run", *run_args]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if "ERR_NVGPUCTRPERM" in result.stdout + result.stderr:
        # said once, then no more ncu runs: every one would be refused the same way
        _COUNTERS_DENIED.append(True)
        print("note: Nsight Compute may not read this GPU's performance counters (ERR_NVGPUCTRPERM: the driver "
              "keeps them for administrators, as on most rented GPUs; NVIDIA's page for that error says how an "
              "administrator allows them). This record gets no profiles; the chapters show the recorded H100 "
              "profiles, labelled so.")
        return None
    rows = [r for r in csv.reader(result.stdout.splitlines()) if len(r) > 3]
    if not rows or "Metric Name" not in rows[0]:
        print(f"warning: ncu gave no counters for {' '.join(run_args)}:\n{result.stdout[-1500:]}\n{result.stderr[-1500:]}")
        return None
    head = rows[0]
    return {r[head.index("Metric Name")]: float(r[head.index("Metric Value")].replace(",", "")) for r in rows[1:]}


def _run_args(name: str, params: dict, size: int) -> list[str]:
    return [name, "--size", *[str(size)] * 3, *[f"-D{k}={v}" for k, v in params.items()]]


def profile_counters(specs: list[KernelSpec]) -> dict:
    """Each kernel's counter configurations run once under ncu, and the memory counters read.
    {} where ncu is not installed: the counters are extra evidence, not a requirement."""
    out = {}
    for spec in specs:
        for params in registry.programme(spec).counter_configs(spec):
            values = _ncu_csv(list(records.COUNTERS), _run_args(spec.name, params, course.COUNTER_SIZE))
            if values:
                out.setdefault(spec.name, []).append({"params": params, "size": course.COUNTER_SIZE,
                                                      "counters": values})
    return out


def profile_stalls(runs: list[tuple[str, dict]], size: int = course.STEP_SIZE) -> list[dict]:
    """Issue rate and stall reasons of each (kernel or 'cublas', params) at size^3."""
    out = []
    base = [ISSUE_METRIC, *STALL_METRICS, *MIX_METRICS]
    for name, params in runs:
        args = _run_args(name, params, size)
        values = _ncu_csv(base + list(LEVEL_METRICS), args) or _ncu_csv(base, args)
        if values:
            out.append({"kernel": name, "params": params, "size": size,
                        "issued_per_scheduler": values[ISSUE_METRIC],
                        "stalls": {STALL_METRICS[m]: values[m] for m in STALL_METRICS},
                        **{MIX_METRICS[m]: values.get(m) for m in MIX_METRICS},
                        **{LEVEL_METRICS[m]: values[m] for m in LEVEL_METRICS if m in values}})
    return out


def _profile_runs(results: list[dict], specs: list[KernelSpec] | None = None) -> list[tuple[str, dict]]:
    """Every kernel (or those given) at its defaults, its best configuration at the step size and
    each of its steps (each chapter's profile set against the previous chapter's); then cuBLAS,
    where every kernel is profiled."""
    runs = []
    for spec in specs or registry.KERNELS.values():
        best = records.best_config(results, spec.name, course.STEP_SIZE, spec.defaults)
        runs += [(spec.name, full) for full in [spec.defaults, best, *spec.step_configs()]
                 if (spec.name, full) not in runs]
    return runs + ([("cublas", {})] if specs is None else [])


def _precompile(jobs: list[tuple[KernelSpec, dict]], progress: bool) -> None:
    """Compile every configuration about to be measured, in parallel (compile_aside.precompile), so the
    measuring loop only loads cubins."""
    from ..compile_aside import precompile
    arch = device.facts().arch
    precompile([(spec.name, cfg, arch) for spec, cfg in jobs], progress)


# How many training launches `record --matmul-refresh` times between saves of the record.
REFRESH_SAVE_EVERY = 50


def _merged(old: list[dict], new: list[dict]) -> list[dict]:
    """Timings by (kernel, configuration, shape): the new where both have one."""
    def key(r: dict) -> str:
        return json.dumps([r["kernel"], r["params"], r["M"], r["N"], r["K"]], sort_keys=True)
    return list({**{key(r): r for r in old}, **{key(r): r for r in new}}.values())


def _save(path: Path, data: dict) -> None:
    """Whole or not at all: an interruption leaves the old record as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, json.dumps(data, indent=1) + "\n")


def _chosen(kernel: str, cfg: dict, only: dict[str, set[int]] | None) -> bool:
    """Whether a configuration has the values `only` asks for (every configuration where it asks for none)."""
    return not only or all(registry.get(kernel).resolve(cfg)[k] in v for k, v in only.items())


def _replace_slice(data: dict, names: set[str], only: dict[str, set[int]], results: list[dict]) -> None:
    """`results`, timed on the kernels' code now, in place of the record's rows of the configurations `only` asks
    for; each says which code it timed, and where all of a kernel's rows are of its code now the record says so
    once (carry.settle)."""
    now = {name: identity.code_hash(registry.get(name).path) for name in names}
    data["results"] = ([r for r in data["results"] if r["kernel"] not in names or not _chosen(r["kernel"], r["params"], only)]
                       + [{**r, "source": now[r["kernel"]]} for r in results])
    for name in names:
        carry.settle(data, name)


def record(kernels: list[str] | None = None, sizes=course.EXPLORER_SIZES, out_dir: Path | None = None,
           progress: bool = True, ladder: bool = False, final: bool = False, profiles: bool = False,
           memory: bool = False, matmul: bool = False, matmul_training: bool | str = False,
           matmul_refresh: bool = False, only: dict[str, set[int]] | None = None) -> Path:
    """Measure and write a record for this GPU. Every result was validated first (bench.bench
    raises on a wrong answer, and a failing configuration aborts the record).
    With nothing asked for: everything. With kernels: only their results (and counters) are
    replaced in this GPU's existing record; `ladder` re-measures the ladder (from the results now
    in the record), `final` the per-shape search and table, `profiles` every kernel's Nsight
    Compute counters and profiles and the memory probes (with kernels: only theirs, and no
    probes), `memory` the memory probes alone, `matmul_training` the plan's training shapes (refit
    with `python -m gemmlab fit` after it; "new": only those no round has timed yet), `matmul_refresh` the
    training timings of kernels whose code has changed since (the same launches, timed anew), `matmul` gemmlab.matmul against cuBLAS over
    issue 17's suite and the heatmap's grid (before and after dispatch). What the record holds of
    kernels that no longer exist is dropped. `only` (with kernels): just their configurations with these values
    of some tunables, timed anew on the code now, replace those in the record; the rest stay as they are (rows
    carried over a change of the code, research/carry.py, among them)."""
    facts = device.facts()
    if facts is None:
        raise RuntimeError(device.why_unavailable())
    path = (out_dir or records.own_dir()) / f"{records.slug(facts.name)}.json"
    plan_only = matmul_training or matmul_refresh
    everything = not (kernels or ladder or final or profiles or memory or matmul or plan_only)
    # read what is there before measuring: a damaged file stops us now, not after an hour
    data = {"results": [], "sources": {}, "ncu": {}}
    if not everything and path.exists():
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"the record {path} is damaged ({exc}); nothing was measured. Restore it (git "
                               f"checkout) or record everything anew: `python -m gemmlab record`") from None
    data["results"] = [r for r in data["results"] if r["kernel"] in registry.KERNELS]
    data["sources"] = {k: v for k, v in data["sources"].items() if k in registry.KERNELS}
    data["ncu"] = {k: v for k, v in data["ncu"].items() if k in registry.KERNELS}
    alone = (matmul or plan_only) and not (kernels or ladder or final or profiles or memory)
    if alone and "device" not in data:
        raise RuntimeError(f"there is no record of this GPU at {path} to add gemmlab.matmul's measurements to; "
                           f"record everything first: `python -m gemmlab record`")
    today = {"date": _dt.date.today().isoformat()}
    code = {name: identity.code_hash(spec.path) for name, spec in registry.KERNELS.items()}

    def dated(rows: list[dict]) -> list[dict]:
        """Training rows with the day and their kernel's code identity: they gather over many runs,
        through changes of a kernel's code, and each must say which code it timed."""
        return [{**r, **today, "source": code[r["kernel"]]} for r in rows]

    if matmul_refresh:                         # launches timed on older code of their kernel, timed anew
        old = records.Record(path, data)
        trained = training.rows_of(old)
        stale = [r for r in trained if r["kernel"] in registry.KERNELS and not old.row_is_fresh(r)]
        jobs = [(registry.get(r["kernel"]), r["params"], records.shape_key(r)) for r in stale]
        _precompile([(spec, cfg) for spec, cfg, _ in jobs], progress)
        bar = tqdm(total=len(jobs), desc="training launches timed anew", disable=not progress)
        for start in range(0, len(jobs), REFRESH_SAVE_EVERY):   # saved as it goes: a rerun goes on from there
            done = []
            for spec, cfg, shape in jobs[start:start + REFRESH_SAVE_EVERY]:
                done.append(bench.bench(spec, cfg, shape, budget_s=0.25).as_row())
                bar.update()
            trained = _merged(trained, dated(done))
            training.save_rows(path, trained)
        bar.close()
    if matmul_training:                        # the plan's best few options where it chooses (its own model's)
        shapes = training.DISPATCH_TRAINING_SHAPES
        trained = training.rows_of(records.Record(path, data))
        if matmul_training == "new":           # only where no round has timed what the plan now runs
            shapes = training.untried_shapes(shapes, trained)
        new = dated(training.measure_training(shapes, training.DISPATCH_TRIES, progress))
        narrow = training.narrow_tile_jobs(training.FEW_COLUMNS_TRAINING_SHAPES)
        small_k = training.small_k_tile_jobs(training.DISPATCH_TRAINING_SHAPES)
        short = training.short_tile_jobs(training.DISPATCH_TRAINING_SHAPES)
        if matmul_training == "new":
            rec = records.Record(path, data)
            fresh = {(r["kernel"], config_key(r["kernel"], r["params"]), records.shape_key(r)) for r in trained
                     if rec.row_is_fresh(r)}
            narrow, small_k, short = ([job for job in jobs if (job[0], config_key(job[0], job[1]), job[2]) not in fresh]
                                      for jobs in (narrow, small_k, short))
        new += dated(training.time_jobs(narrow, "chapter 13's narrow tiles", progress))
        new += dated(training.time_jobs(small_k, "chapter 12's small-K side", progress))
        new += dated(training.time_jobs(short, "chapter 13's 48-row tiles", progress))
        # added to the earlier rounds' rows (a new timing of the same launch replaces the old): what an
        # earlier model chose and the GPU disproved stays in the fit, so a refit cannot choose it again
        training.save_rows(path, _merged(trained, new))
    if matmul:
        data["matmul_suite"] = [{**r, **today} for r in training.measure_suite(training.MATMUL_SUITE, training.MATMUL_REPS,
                                                                              progress)]
        data["matmul_heatmap"] = [{**r, **today} for r in training.measure_heatmap(
            registry.with_shape_search()[-1], training.HEATMAP_SIZES, training.HEATMAP_K, progress)]
    if alone:
        _save(path, data)                      # the rest of the record as it was
        return path
    specs = list(registry.KERNELS.values()) if everything else [registry.get(k) for k in kernels or []]
    jobs = [(spec, cfg, shape) for spec in specs for cfg in spec.explorer_configs()
            for shape in (*((s, s, s) for s in sizes), *registry.programme(spec).regime_shapes)
            if training.takes_shape(spec, cfg, shape)]
    jobs += [(spec, full, (course.STEP_SIZE,) * 3) for spec in specs for full in spec.step_configs()
             if (spec, full, (course.STEP_SIZE,) * 3) not in jobs]

    jobs = [job for job in jobs if _chosen(job[0].name, job[1], only)]
    _precompile([(spec, cfg) for spec, cfg, _ in jobs], progress)
    results = [bench.bench(spec, cfg, shape, budget_s=0.25).as_row()
               for spec, cfg, shape in tqdm(jobs, desc="record", disable=not progress)]
    names = {spec.name for spec in specs}
    if only:                                   # a slice of the kernels' configurations, on their code now
        _replace_slice(data, names, only, results)
    else:
        data["results"] = [r for r in data["results"] if r["kernel"] not in names] + results
        data["sources"].update({spec.name: identity.code_hash(spec.path) for spec in specs})
    # the bandwidths every chapter's roofline is drawn against: measured with the whole record (or the memory
    # probes), kept when a few kernels are recorded again, so that re-recording one does not move every roofline
    kept = data.get("device", {})
    if everything or memory or kept.get("name") != facts.name or not {"measured_copy_gbs", "measured_l2_read_gbs"} <= set(kept):
        kept = {"measured_copy_gbs": round(device.measure_copy_bandwidth(), 1),
                "measured_l2_read_gbs": round(probes.measure_l2_bandwidth(), 1)}
    data.update({
        "device": {**facts.as_dict(), "measured_copy_gbs": kept["measured_copy_gbs"],
                   "measured_l2_read_gbs": kept["measured_l2_read_gbs"]},
        "date": _dt.date.today().isoformat(),
        "versions": {**versions(), "driver_cuda": facts.driver_cuda},
    })
    if everything or "chapter00" not in data:
        data["chapter00"] = campaigns.measure_chapter00()
    if everything or ladder:
        data["ladder"] = campaigns.measure_ladder(data["results"], progress)
    if everything or final:
        data["final_search"], data["final"] = [], []
        for spec in registry.with_shape_search():
            _precompile([(spec, cfg) for cfg in registry.programme(spec).shape_search.candidates], progress)
            search = campaigns.measure_shape_search(spec, progress)
            data["final_search"] += search
            data["final"] += campaigns.measure_final(spec, lambda shape: records.fastest_at(search, shape), progress)
    if specs and not everything:               # these kernels' counters, and their profiles if asked
        if not only:
            data["ncu"].update(profile_counters(specs))
        if profiles:
            data["stalls"] = ([p for p in data.get("stalls", []) if p["kernel"] not in names]
                              + profile_stalls(_profile_runs(data["results"], specs)))
    elif everything or profiles:
        data["ncu"] = profile_counters(list(registry.KERNELS.values()))
        data["stalls"] = profile_stalls(_profile_runs(data["results"]))
    if everything or memory or (profiles and not specs):
        data["latency"] = probes.measure()
    _save(path, data)
    return path
