"""Where a figure comes from: measured now on this reader's GPU, or read from the record.

`here()` answers "what do we know about this kernel, configuration and size on this machine":
with a GPU a `Live` source validates and times now; without one a `Recorded` source reads the
shipped record. Both answer the same questions with the same row format and say which they are
(`label`), so lessons, widgets and the CLI never ask whether there is a GPU themselves.
Profiles (Nsight Compute counters and stalls) exist only in the record: `record()`.
"""
from __future__ import annotations

import datetime as _dt
import functools
from typing import Callable

from . import bench, device, records, registry, tune
from .records import Record
from .spec import KernelSpec, Params


def shape(size) -> tuple[int, int, int]:
    """An int n means n x n x n; a triple is (M, N, K)."""
    return (size, size, size) if isinstance(size, int) else tuple(size)


def record() -> Record:
    """The newest record that holds Nsight Compute profiles (profiles are only in records, GPU or
    not): a learner's own record made where ncu could not read the counters has none, and the
    shipped H100 record's are shown instead."""
    profiled = [r for r in records.load_all() if r.stalls()]
    return max(profiled, key=lambda r: r.data["date"]) if profiled else records.latest()


def reference_for(device_name: str) -> Record | None:
    """The record to show beside live measurements: on a GPU that has no record of its own, the
    newest shipped record (the H100's); None on a GPU that has one."""
    shipped = records.load_all()
    if not shipped or any(r.device.get("name") == device_name for r in shipped):
        return None
    return records.latest()


def _beside(rec: Record | None, spec: KernelSpec, params: Params, size) -> dict | None:
    if rec is None:
        return None
    try:
        return rec.result(spec.name, params, shape(size))
    except LookupError:        # that configuration or size not recorded, or its kernel changed since
        return None


def _beside_section(rec: Record | None, name: str, what: str):
    if rec is None:
        return None
    try:
        return rec.section(name, what)
    except LookupError:        # that programme not recorded there
        return None


class Recorded:
    """No GPU here: every figure comes from the record, labelled with its device and date."""

    reference = None   # the record is what is shown; nothing beside it

    def __init__(self, rec: Record, why: str):
        self.rec, self.why = rec, why

    def beside(self, spec: KernelSpec, params: Params, size) -> dict | None:
        return None

    def beside_section(self, name: str, what: str):
        return None

    @property
    def label(self) -> str:
        return self.rec.label

    @property
    def label_with_reason(self) -> str:
        return f"{self.rec.label} (no GPU here: {self.why})"

    def device(self) -> dict:
        return self.rec.device

    def attributes(self) -> dict:
        """The GPU's facts, nothing measured now (the record's, here)."""
        return self.rec.device

    def result(self, spec: KernelSpec, params: Params, size) -> dict:
        return self.rec.result(spec.name, params, shape(size))

    def sweep(self, spec: KernelSpec, size) -> list[dict]:
        """Every configuration the sliders offer, at one size."""
        return self.rec.at(spec.name, shape(size))

    def same_as_shown(self, row: dict) -> dict:
        """The row another table of the chapter shows for this row's kernel, configuration and shape (the
        record's sweep), else the row itself: one configuration at one size, one figure."""
        try:
            return self.rec.result(row["kernel"], row["params"], records.shape_key(row))
        except LookupError:
            return row

    def best(self, spec: KernelSpec, size) -> dict:
        return self.rec.best(spec.name, shape(size))

    def search(self, spec: KernelSpec, size) -> tuple[list[dict], list[tuple[dict, str]], str]:
        """The autotuner's search over the configurations the sliders offer: (rows, refused, note)."""
        return (self.rec.at(spec.name, shape(size)), [],
                " (the record's sweep; `python -m gemmlab tune` searches on your GPU)")

    def campaign(self, name: str, what: str, measure: Callable[[], object]):
        """A whole measurement programme (chapter 00's, the ladder, ...): the record's section."""
        return self.rec.section(name, what)

    def config_at(self, spec: KernelSpec, size) -> dict:
        return _recorded_config(self.rec, spec, shape(size))


class Live:
    """A GPU here: every figure is validated and timed now, against cuBLAS in the same run."""

    def __init__(self, facts: device.DeviceFacts):
        self.facts = facts
        self._campaigns: dict[str, object] = {}
        # One configuration at one size is measured once a session, so every table that shows it
        # shows the same figure (a re-measurement differs by its noise).
        self._measured: dict[tuple, dict] = {}

    @property
    def label(self) -> str:
        return f"measured on {self.facts.name}, {_dt.date.today().isoformat()} (live)"

    label_with_reason = label

    @functools.cached_property
    def reference(self) -> Record | None:
        """The record shown beside this GPU's measurements (the H100's), where this GPU has none."""
        return reference_for(self.facts.name)

    def beside(self, spec: KernelSpec, params: Params, size) -> dict | None:
        """The reference record's row for the same configuration and size, or None."""
        return _beside(self.reference, spec, params, size)

    def beside_section(self, name: str, what: str):
        """The reference record's whole programme (chapter 00's, the ladder, ...), or None."""
        return _beside_section(self.reference, name, what)

    @functools.cached_property
    def _copy_gbs(self) -> float:
        return round(device.measure_copy_bandwidth(), 1)

    def device(self) -> dict:
        """The GPU's facts, with its DRAM copy bandwidth measured now (once a session)."""
        return {**self.facts.as_dict(), "measured_copy_gbs": self._copy_gbs}

    def attributes(self) -> dict:
        """The GPU's facts from its attributes alone: nothing launched, no memory taken."""
        return self.facts.as_dict()

    def result(self, spec: KernelSpec, params: Params, size) -> dict:
        key = (spec.name, tuple(sorted(spec.resolve(params).items())), shape(size))
        if key not in self._measured:
            self._measured[key] = bench.bench(spec, params, shape(size)).as_row()
        return self._measured[key]

    def same_as_shown(self, row: dict) -> dict:
        """The row measured earlier this session for this row's kernel, configuration and shape, else the row
        itself (remembered from now on): one configuration at one size, one figure."""
        spec = registry.get(row["kernel"])
        key = (spec.name, tuple(sorted(spec.resolve(row["params"]).items())), records.shape_key(row))
        return self._measured.setdefault(key, row)

    def sweep(self, spec: KernelSpec, size) -> list[dict]:
        from .progress import transient
        configs = spec.explorer_configs()
        rows = []
        with transient(len(configs), f"{spec.name} at {shape(size)[0]}") as bar:
            for cfg in configs:
                rows.append(self.result(spec, cfg, size))
                bar.update()
        return rows

    def best(self, spec: KernelSpec, size) -> dict:
        """The best configuration known for this size, re-measured now: what `tune` found on this
        GPU for the size class, else the record's best, else the defaults."""
        return self.result(spec, self.config_at(spec, size), size)

    def search(self, spec: KernelSpec, size) -> tuple[list[dict], list[tuple[dict, str]], str]:
        """Tunes now over the configurations the sliders offer; the best is remembered."""
        found = tune.tune(spec.name, shape(size), only={p.name: set(p.offered) for p in spec.params})
        for row in found.rows:     # what the search measured is what later tables show
            self._measured.setdefault((spec.name, tuple(sorted(row["params"].items())), shape(size)), row)
        return found.rows, found.refused, "; the best is remembered for this GPU"

    def campaign(self, name: str, what: str, measure: Callable[[], object]):
        """Runs the programme now, once per session."""
        if name not in self._campaigns:
            self._campaigns[name] = measure()
        return self._campaigns[name]

    def config_at(self, spec: KernelSpec, size) -> dict:
        found = tune.remembered(self.facts.name, spec.name, shape(size))
        if found is not None:
            return found
        try:
            return _recorded_config(record(), spec, shape(size))
        except LookupError:      # not recorded, stale, or no record at all
            return spec.defaults


def _recorded_config(rec: Record, spec: KernelSpec, size: tuple[int, int, int]) -> dict:
    """The record's pick for a shape: its per-shape search where it searched that shape, else the
    fastest recorded configuration at that size."""
    search = [r for r in rec.data.get("final_search", []) if r["kernel"] == spec.name]
    if registry.programme(spec).shape_search is not None and any(records.shape_key(r) == size for r in search):
        return records.fastest_at(search, size)
    return rec.best(spec.name, size)["params"]


@functools.lru_cache(maxsize=None)
def here() -> Live | Recorded:
    facts = device.facts()
    if facts is not None:
        return Live(facts)
    return Recorded(record(), device.why_unavailable())


def ceilings(rec: Record | None = None) -> tuple[float, float]:
    """(FP32 peak GFLOP/s, DRAM GB/s from attributes) of this GPU, or of the recorded one; of `rec`'s GPU where
    given, for figures that come from it (a record's points under another GPU's roof would sit too low or high)."""
    d = rec.device if rec is not None else here().device()
    return d["peak_fp32_tflops"] * 1e3, d["dram_gbs"]
