"""Recorded GPU results, for readers with no GPU.

`python -m gemmlab record` (on a GPU) measures every registered kernel over every configuration
its sliders offer and every explorer size, plus chapter 00's measurements, and writes one JSON
file per device under gemmlab/data/. Each file carries the device, versions, date and the
source hash of every kernel; a result whose kernel file has changed since is refused.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import compile as compiler
from . import registry
from .registry import Params

DATA_DIR = Path(__file__).resolve().parent / "data"


class StaleRecord(LookupError):
    pass


class NotRecorded(LookupError):
    pass


@dataclass
class Record:
    path: Path
    data: dict

    @property
    def label(self) -> str:
        return f"recorded on {self.data['device']['name']}, {self.data['date']}"

    @property
    def device(self) -> dict:
        return self.data["device"]

    def stale_kernels(self) -> list[str]:
        """Kernels whose file changed since this record was made (or that no longer exist)."""
        stale = []
        for name, recorded_hash in self.data["sources"].items():
            spec = registry.KERNELS.get(name)
            if spec is None or compiler.source_hash(spec) != recorded_hash:
                stale.append(name)
        return stale

    def results(self, kernel: str | None = None) -> list[dict]:
        rows = [r for r in self.data["results"] if kernel is None or r["kernel"] == kernel]
        if kernel is not None and kernel in self.stale_kernels():
            raise StaleRecord(f"the recorded results for {kernel} were measured on an older version of "
                              f"kernels/{kernel}.cu; run `python -m gemmlab record` on a GPU to refresh them")
        return rows

    def at(self, kernel: str, size: tuple[int, int, int]) -> list[dict]:
        """Every recorded configuration of a kernel at one size."""
        return [r for r in self.results(kernel) if (r["M"], r["N"], r["K"]) == tuple(size)]

    def result(self, kernel: str, params: Params, size: tuple[int, int, int]) -> dict:
        full = registry.get(kernel).resolve(params)
        for row in self.at(kernel, size):
            if row["params"] == full:
                return row
        raise NotRecorded(f"{kernel} [{registry.get(kernel).config_label(full)}] at "
                          f"{'x'.join(map(str, size))} was not recorded ({self.label})")

    def best(self, kernel: str, size: tuple[int, int, int]) -> dict:
        rows = self.at(kernel, size)
        if not rows:
            raise NotRecorded(f"no recorded results for {kernel} at {'x'.join(map(str, size))}")
        return max(rows, key=lambda r: r["gflops"])


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


_parsed: dict[Path, tuple[float, dict]] = {}


def load_all() -> list[Record]:
    """Every record file, parsed once per version of the file (notebook cells ask often)."""
    out = []
    for p in sorted(DATA_DIR.glob("*.json")):
        mtime = p.stat().st_mtime
        if _parsed.get(p, (None,))[0] != mtime:
            _parsed[p] = (mtime, json.loads(p.read_text()))
        out.append(Record(p, _parsed[p][1]))
    return out


def latest() -> Record:
    records = load_all()
    if not records:
        raise NotRecorded("no recorded GPU results are shipped in gemmlab/data/")
    return max(records, key=lambda r: r.data["date"])


def versions() -> dict:
    from importlib import metadata
    from . import toolchain
    out = {"python": platform.python_version(), "nvrtc": toolchain.nvrtc_build()}
    for dist in ("cupy-cuda13x", "cupy-cuda12x", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


# Nsight Compute counters recorded for each kernel's default configuration.
NCU_METRICS = {
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global load requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global store sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global store requests",
    "dram__bytes_read.sum": "DRAM bytes read",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts",
}
PROFILE_SIZE = 2048


def profile(kernels: list[str]) -> dict:
    """Run each kernel once under ncu (clocks left alone) and read the counters above. Returns {}
    when ncu is not installed: the counters are extra evidence, not a requirement."""
    out = {}
    for name in kernels:
        spec = registry.KERNELS[name]
        # the defaults, and for a kernel with a layout switch, every layout
        configs = [spec.defaults] + [{**spec.defaults, "LAYOUT": v} for p in spec.params if p.name == "LAYOUT"
                                     for v in p.values if v != p.default]
        for params in configs:
            values = _ncu_csv(list(NCU_METRICS), [name, "--size", *[str(PROFILE_SIZE)] * 3,
                                                  *[f"-D{k}={v}" for k, v in params.items()]])
            if values:
                out.setdefault(name, []).append({"params": params, "size": PROFILE_SIZE, "counters": values})
    return out


# Why warps wait, per issued instruction (Nsight Compute's warp-state counters).
STALL_REASONS = ("dispatch_stall", "wait", "short_scoreboard", "no_instruction", "barrier", "math_pipe_throttle",
                 "mio_throttle", "long_scoreboard", "branch_resolving", "not_selected")
STALL_METRICS = {f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio": r for r in STALL_REASONS}
ISSUE_METRIC = "smsp__issue_active.avg.per_cycle_active"
# and what was issued, and how busy the L1/shared-memory pipes were
MIX_METRICS = {"smsp__inst_executed.sum": "instructions",
               "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "ffma_thread_instructions",
               "l1tex__throughput.avg.pct_of_peak_sustained_active": "l1_shared_pct_of_peak"}


def _ncu_csv(metrics: list[str], run_args: list[str]) -> dict[str, float] | None:
    """The metrics of the first GEMM launch of `python -m gemmlab run RUN_ARGS` under ncu (clocks
    left alone), or None where ncu is missing or gave nothing."""
    import csv
    import subprocess
    import sys
    ncu = shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if Path(p).exists()), None)
    if ncu is None or os.environ.get("GEMMLAB_NO_NCU"):
        return None
    cmd = [ncu, "--clock-control", "none", "--kernel-name", "regex:gemm", "--launch-count", "1", "--csv",
           "--metrics", ",".join(metrics), sys.executable, "-m", "gemmlab", "run", *run_args]
    result = subprocess.run(cmd, capture_output=True, text=True)
    rows = [r for r in csv.reader(result.stdout.splitlines()) if len(r) > 3]
    if not rows or "Metric Name" not in rows[0]:
        print(f"warning: ncu gave no counters for {' '.join(run_args)}:\n{result.stdout[-1500:]}\n{result.stderr[-1500:]}")
        return None
    head = rows[0]
    return {r[head.index("Metric Name")]: float(r[head.index("Metric Value")].replace(",", "")) for r in rows[1:]}


def profile_stalls(runs: list[tuple[str, dict]], size: int = 4096) -> list[dict]:
    """Issue rate and stall reasons of each (kernel or 'cublas', params) at size^3."""
    out = []
    for name, params in runs:
        values = _ncu_csv([ISSUE_METRIC, *STALL_METRICS, *MIX_METRICS],
                          [name, "--size", *[str(size)] * 3, *[f"-D{k}={v}" for k, v in params.items()]])
        if values:
            out.append({"kernel": name, "params": params, "size": size,
                        "issued_per_scheduler": values[ISSUE_METRIC],
                        "stalls": {STALL_METRICS[m]: values[m] for m in STALL_METRICS},
                        **{MIX_METRICS[m]: values.get(m) for m in MIX_METRICS}})
    return out


def study_configs(kernel: str) -> list[dict]:
    """The full configurations of a kernel's chapter steps (registry studies)."""
    spec = registry.get(kernel)
    return [spec.resolve(cfg) for _, cfg in spec.studies]


def best_params(results: list[dict], kernel: str, size: int = 4096) -> dict:
    """The fastest recorded configuration of a kernel at size^3 (the defaults if none)."""
    rows = [r for r in results if r["kernel"] == kernel and r["M"] == r["N"] == r["K"] == size]
    return max(rows, key=lambda r: r["gflops"])["params"] if rows else registry.KERNELS[kernel].defaults


def record(kernels: list[str] | None = None, sizes=registry.EXPLORER_SIZES, out_dir: Path = DATA_DIR,
           progress: bool = True, ladder: bool = False, final: bool = False) -> Path:
    """Measure and write a record for this GPU. Every result was validated first (bench.bench
    raises on a wrong answer, and a failing configuration aborts the record).
    With nothing asked for: everything. With kernels: only their results (and counters) are
    replaced in this GPU's existing record; `ladder` re-measures chapter 09's ladder (from the
    results now in the record), `final` chapter 10's search of a configuration per shape, its
    table and the stall profiles."""
    from tqdm.auto import tqdm
    from . import bench, device, lessons

    facts = device.facts()
    if facts is None:
        raise RuntimeError(device.why_unavailable())
    path = out_dir / f"{_slug(facts.name)}.json"
    everything = not kernels and not ladder and not final
    names = list(registry.KERNELS) if everything else [registry.get(k).name for k in kernels or []]
    jobs = [(n, cfg, s) for n in names for cfg in registry.KERNELS[n].explorer_configs() for s in sizes]
    jobs += [(n, full, registry.STUDY_SIZE) for n in names for full in study_configs(n)
             if (n, full, registry.STUDY_SIZE) not in jobs]
    results = [bench.bench(name, cfg, (s, s, s), budget_s=0.25).as_row()
               for name, cfg, s in tqdm(jobs, desc="record", disable=not progress)]
    data = json.loads(path.read_text()) if not everything and path.exists() else {"results": [], "sources": {}, "ncu": {}}
    data["results"] = [r for r in data["results"] if r["kernel"] not in names] + results
    data["sources"].update({n: compiler.source_hash(registry.KERNELS[n]) for n in names})
    data["ncu"].update(profile(names))
    data.update({
        "device": {**facts.as_dict(), "measured_copy_gbs": round(device.measure_copy_bandwidth(), 1)},
        "date": _dt.date.today().isoformat(),
        "versions": {**versions(), "driver_cuda": facts.driver_cuda},
    })
    if everything or "chapter00" not in data:
        data["chapter00"] = lessons.measure_chapter00()
    if everything or ladder:
        data["ladder"] = lessons.measure_ladder(data["results"])
    if everything or final:
        data["final_search"] = lessons.search_final(progress)
        data["final"] = lessons.measure_final(lambda shape: lessons.final_params(data["final_search"], shape))
        runs = [(n, best_params(data["results"], n)) for n in ("08_warp_tiling", "10_final")]
        runs += [(n, full) for n in ("08_warp_tiling", "10_final") for full in study_configs(n)
                 if (n, full) not in runs]
        data["stalls"] = profile_stalls(runs + [("cublas", {})])
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path
