"""Recorded GPU results, read for readers with no GPU (research/measure_all.py writes them).

Each file under gemmlab/data/ is one device's record: the device, versions and date, and the
source identity of every kernel measured (identity.code_hash: comments do not count). Results
of a kernel whose code has changed since are refused as stale; the plan's training rows carry
their own source identity, as they gather over many runs.
"""
from __future__ import annotations

import functools
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import identity, registry
from .spec import Params

DATA_DIR = Path(__file__).resolve().parent / "data"    # the records shipped with the course
CHECKOUT = Path(__file__).resolve().parent.parent


def own_dir() -> Path:
    """Where this machine's `record` goes: gemmlab/data/ in a clone of the course, where it can be
    committed; from an installed package, a folder of the user's ($GEMMLAB_RECORDS, else
    $XDG_DATA_HOME/gemmlab/records): site-packages is no place for measurements, and a reinstall
    would lose them."""
    if os.environ.get("GEMMLAB_RECORDS"):
        return Path(os.environ["GEMMLAB_RECORDS"])
    if (CHECKOUT / "notebooks").is_dir():
        return DATA_DIR
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "gemmlab" / "records"


def _record_files() -> list[Path]:
    mine = own_dir()
    return sorted(DATA_DIR.glob("*.json")) + (sorted(mine.glob("*.json")) if mine != DATA_DIR else [])

# Why warps wait, per issued instruction (Nsight Compute's warp-state counters), in the order shown.
STALL_REASONS = ("dispatch_stall", "wait", "short_scoreboard", "no_instruction", "barrier", "math_pipe_throttle",
                 "mio_throttle", "long_scoreboard", "branch_resolving", "not_selected")
# The memory counters recorded for each kernel's counter configurations, and what they mean.
COUNTERS = {
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global load requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global store sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global store requests",
    "dram__bytes_read.sum": "DRAM bytes read",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts",
}


def profile_figures(profile: dict, sm_count: int | None = None) -> dict[str, float]:
    """What a profile's counters give, where it has them: the FFMAs' share of the issued
    instructions, DRAM bytes (read + written), the launch's GFLOP/s, and warp FFMAs and
    shared-memory wavefronts per SM cycle (peaks 4 and 1; given the GPU's SM count). Figures and
    lessons both read these."""
    out = {}
    if profile.get("instructions") and "ffma_thread_instructions" in profile:
        out["ffma_share"] = profile["ffma_thread_instructions"] / 32 / profile["instructions"]
    if "dram_bytes_read" in profile:
        out["dram_bytes"] = profile["dram_bytes_read"] + profile["dram_bytes_written"]
    if "duration_ns" in profile:
        out["gflops"] = 2 * profile["size"] ** 3 / profile["duration_ns"]
    if sm_count and "sm_cycles_elapsed" in profile:
        sm_cycles = sm_count * profile["sm_cycles_elapsed"]
        out["ffma_per_sm_cycle"] = profile["ffma_thread_instructions"] / 32 / sm_cycles
        out["shared_per_sm_cycle"] = profile["shared_wavefronts"] / sm_cycles
    return out


class StaleRecord(LookupError):
    pass


class NotRecorded(LookupError):
    pass


def shape_key(row: dict) -> tuple[int, int, int]:
    return row["M"], row["N"], row["K"]


def shape_label(shape) -> str:
    return "x".join(map(str, shape))


def _is_current(kernel: str, recorded: str | None) -> bool:
    """Whether `recorded` is the code hash of the kernel's file, and the headers it includes, as they are now."""
    spec = registry.KERNELS.get(kernel)
    if spec is None or not spec.path.exists():
        return False
    try:
        files = (spec.path, *_headers(*_version(spec.path)))
        return recorded == _code_hash(*(_version(p) for p in files))
    except FileNotFoundError:          # a header it included is gone: not the code that was recorded
        return False


def _version(path: Path) -> tuple[Path, int, int]:
    stat = path.stat()
    return path, stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=64)
def _headers(path: Path, mtime_ns: int, size: int) -> tuple[Path, ...]:
    """The headers a version of a kernel's file includes (identity.headers)."""
    return tuple(identity.headers(path.read_text(), path.parent).values())


@functools.lru_cache(maxsize=64)
def _code_hash(kernel: tuple[Path, int, int], *headers: tuple[Path, int, int]) -> str:
    """identity.code_hash, once per version of the file and its headers (a record has thousands of
    rows to judge)."""
    return identity.code_hash(kernel[0])


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
        """Kernels whose code changed since this record was made (or that no longer exist)."""
        return [name for name, recorded in self.data["sources"].items() if not _is_current(name, recorded)]

    def row_is_fresh(self, row: dict) -> bool:
        """Whether a timing was made with its kernel's code as it is now: by the row's own `source`
        where it has one (the plan's training rows, added round by round, carry theirs), else by the
        record's."""
        return _is_current(row["kernel"], row.get("source", self.data["sources"].get(row["kernel"])))

    def section(self, name: str, what: str):
        """A part of the record by name ('chapter00', 'ladder', 'final', ...); NotRecorded saying
        how to make it if this record has none."""
        if name not in self.data:
            raise NotRecorded(f"{what} has not been recorded yet ({self.label}); run `python -m gemmlab record` "
                              f"on a GPU")
        return self.data[name]

    def results(self, kernel: str) -> list[dict]:
        """The kernel's recorded results of its code now (rows carried over a change of its code, or timed anew
        since, say so themselves: research/carry.py)."""
        rows = [r for r in self.data["results"] if r["kernel"] == kernel]
        if kernel in self.stale_kernels():
            rows = [r for r in rows if self.row_is_fresh(r)]
            if not rows:
                raise StaleRecord(f"the recorded results for {kernel} were measured on an older version of "
                                  f"kernels/{kernel}.cu; run `python -m gemmlab record` on a GPU to refresh them")
        return rows

    def at(self, kernel: str, size: tuple[int, int, int]) -> list[dict]:
        """Every recorded configuration of a kernel at one size."""
        return [r for r in self.results(kernel) if shape_key(r) == tuple(size)]

    def result(self, kernel: str, params: Params, size: tuple[int, int, int]) -> dict:
        spec = registry.get(kernel)
        full = spec.resolve(params)
        for row in self.at(spec.name, size):
            if row["params"] == full:
                return row
        raise NotRecorded(f"{spec.name} [{spec.config_label(full)}] at {shape_label(size)} was not recorded "
                          f"({self.label})")

    def best(self, kernel: str, size: tuple[int, int, int]) -> dict:
        rows = self.at(kernel, size)
        if not rows:
            raise NotRecorded(f"no recorded results for {kernel} at {shape_label(size)} ({self.label})")
        return max(rows, key=lambda r: r["gflops"])

    def stalls(self) -> list[dict]:
        """The Nsight Compute profiles, one per kernel and configuration. The recorder profiles a configuration
        twice where it plays two parts (a chapter's defaults that are also one of its steps): every reader gets
        the later profile, so that a chapter's steps table and its profile table agree."""
        latest: dict[tuple[str, str], dict] = {}
        for p in self.data.get("stalls", []):
            latest[(p["kernel"], json.dumps(p.get("params"), sort_keys=True))] = p
        return list(latest.values())

    def counters(self, kernel: str) -> list[dict]:
        """The kernel's Nsight Compute counter entries, one per counter configuration."""
        return self.data.get("ncu", {}).get(kernel, [])


def slug(name: str) -> str:
    """A device name as a file name: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


_parsed: dict[Path, tuple[float, dict | str]] = {}
# What every record holds, and what each of those must be.
REQUIRED = {"device": dict, "date": str, "results": list, "sources": dict}


def _parse(path: Path) -> dict | str:
    """The record in a file, or why it cannot be used."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:            # unreadable, empty, truncated, not UTF-8, not JSON
        return f"not a readable JSON record ({exc})"
    if not isinstance(data, dict):
        return "not a JSON object"
    missing = [k for k, kind in REQUIRED.items() if not isinstance(data.get(k), kind)]
    if missing or "name" not in data["device"]:
        return f"missing or malformed: {', '.join(missing) or 'device.name'}"
    return _device_problem(data["device"]) or data


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _positive(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
            and 0 < value < float("inf"))


# The device facts readers compute with (plans, ceilings, occupancy), and what each must be.
DEVICE_FIELDS = {"name": (lambda v: isinstance(v, str) and bool(v.strip()), "the GPU's name"),
                 "sm_count": (_whole, "a whole number of SMs, at least 1"),
                 "fp32_lanes_per_sm": (_whole, "a whole number, at least 1"),
                 "l2_bytes": (_whole, "a whole number of bytes, at least 1"),
                 "clock_mhz": (_positive, "a number above 0 (MHz)"),
                 "peak_fp32_tflops": (_positive, "a number above 0 (TFLOP/s)"),
                 "dram_gbs": (_positive, "a number above 0 (GB/s)")}


def _device_problem(dev: dict) -> str:
    """Which device field of a record cannot be used, and why ('' where every one can)."""
    from . import arch
    for name, (ok, want) in DEVICE_FIELDS.items():
        if name not in dev:
            return f"device.{name} is missing"
        if not ok(dev[name]):
            return f"device.{name} must be {want}, got {dev[name]!r}"
    if "measured_copy_gbs" in dev and not _positive(dev["measured_copy_gbs"]):
        return f"device.measured_copy_gbs must be a number above 0 (GB/s), got {dev['measured_copy_gbs']!r}"
    cc = dev.get("compute_capability")
    if not (isinstance(cc, list) and len(cc) == 2 and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                           for x in cc)):
        return f"device.compute_capability must be [major, minor] (for example [9, 0]), got {cc!r}"
    if not isinstance(dev.get("arch"), str):
        return f"device.arch must be an architecture's name (for example 'sm_90'), got {dev.get('arch')!r}"
    try:
        arch.get(dev["arch"])
    except arch.UnknownArch as exc:
        return f"device.arch: {exc}"
    if dev["arch"] != f"sm_{cc[0]}{cc[1]}":
        return f"device.arch {dev['arch']!r} is not the compute capability's ({cc[0]}.{cc[1]})"
    return ""


def damaged() -> dict[Path, str]:
    """Record files that cannot be used, with why."""
    load_all()
    return {p: why for p, (_, why) in _parsed.items() if isinstance(why, str) and p.exists()}


def load_all() -> list[Record]:
    """Every usable record file, parsed once per version of the file (notebook cells ask often). A
    damaged file is left out and reported once (records.damaged() lists them)."""
    out = []
    for p in _record_files():
        mtime = p.stat().st_mtime
        if _parsed.get(p, (None,))[0] != mtime:
            _parsed[p] = (mtime, _parse(p))
            if isinstance(_parsed[p][1], str):
                print(f"gemmlab: ignoring the damaged record {p}: {_parsed[p][1]}. Restore it "
                      f"(git checkout -- {p.name} in {p.parent}) or measure anew with `python -m gemmlab record` "
                      f"on a GPU", file=sys.stderr)
        if isinstance(_parsed[p][1], dict):
            out.append(Record(p, _parsed[p][1]))
    return out


def latest() -> Record:
    records = load_all()
    if not records:
        bad = damaged()
        raise NotRecorded("no usable record in gemmlab/data/" + (
            ": " + "; ".join(f"{p} is damaged ({why})" for p, why in bad.items()) +
            "; restore it (git checkout, in a clone of the course) or measure anew with `python -m gemmlab record` "
            "on a GPU" if bad else
            ": no recorded GPU results are shipped there"))
    return max(records, key=lambda r: r.data["date"])


def best_config(rows: list[dict], kernel: str, size: int, defaults: dict) -> dict:
    """The fastest configuration of a kernel at size^3 among `rows` (the defaults if none)."""
    rows = [r for r in rows if r["kernel"] == kernel and r["M"] == r["N"] == r["K"] == size]
    return max(rows, key=lambda r: r["gflops"])["params"] if rows else defaults


def fastest_at(rows: list[dict], shape) -> dict:
    """The fastest configuration of a per-shape search at one shape."""
    at = [r for r in rows if shape_key(r) == tuple(shape)]
    if not at:
        raise NotRecorded(f"no configuration was searched at {shape_label(shape)}")
    return max(at, key=lambda r: r["gflops"])["params"]
