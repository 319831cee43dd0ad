"""The autotuner: sweep a kernel's legal configurations at one size, validate each, time the
ones that pass, and remember the best per device and size class where gemmlab finds it next
time (`remembered`).

The store is a JSON file in the cache folder ($GEMMLAB_CACHE or ~/.cache/gemmlab), keyed by
device name, kernel and size class; an entry is ignored once its kernel's code changed.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path


from . import bench, device, files, identity, registry
from . import compile as compiler
from .spec import IllegalConfig, UnsupportedShape


def size_class(M: int, N: int, K: int) -> str:
    """Each dimension rounded to the nearest power of two: 4000x4096x1000 -> '4096x4096x1024'."""
    return "x".join(str(2 ** round(math.log2(d))) for d in (M, N, K))


def store_path() -> Path:
    return compiler.cache_dir() / "tuned.json"


def _load() -> dict:
    """The store; a damaged one is moved aside (and named), never in the way of a new result."""
    path = store_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except (OSError, ValueError) as exc:
        aside = path.with_name(f"tuned.damaged-{_dt.datetime.now():%Y%m%d-%H%M%S}.json")
        path.replace(aside)
        print(f"gemmlab: the tuning store {path} was damaged ({exc}); moved it to {aside} and started a new one",
              file=sys.stderr)
        return {}


def remember(device: str, kernel: str, size: tuple[int, int, int], row: dict) -> None:
    data = _load()
    spec = registry.get(kernel)
    data.setdefault(device, {}).setdefault(spec.name, {})[size_class(*size)] = {
        "params": row["params"], "size": list(size), "gflops": row["gflops"],
        "cublas_gflops": row["cublas_gflops"], "date": _dt.date.today().isoformat(),
        "source_hash": identity.code_hash(spec.path),
    }
    files.write_atomic(store_path(), json.dumps(data, indent=1))


def remembered(device: str, kernel: str, size: tuple[int, int, int]) -> dict | None:
    """The configuration tuning found for this device, kernel and size class, if it is still
    valid for the kernel's current code."""
    spec = registry.get(kernel)
    entry = _load().get(device, {}).get(spec.name, {}).get(size_class(*size))
    if entry is None or entry["source_hash"] != identity.code_hash(spec.path) or not spec.is_legal(entry["params"]):
        return None
    return entry["params"]


@dataclass
class Search:
    kernel: str
    size: tuple[int, int, int]
    rows: list[dict]          # one per configuration that validated and was timed
    refused: list[tuple[dict, str]]  # configurations that could not run this shape, or failed validation

    @property
    def best(self) -> dict:
        return max(self.rows, key=lambda r: r["gflops"])


def candidates(kernel: str, only: dict[str, set[int]] | None = None) -> list[dict[str, int]]:
    """The legal configurations, narrowed to the values `only` allows for some tunables."""
    spec = registry.get(kernel)
    only = only or {}
    for name, values in only.items():
        param = spec.tunable(name)
        bad = sorted(set(values) - set(param.values))
        if bad:
            raise IllegalConfig(spec.name, f"{name}-legal-values",
                                f"{name}={bad} is not offered; legal values are {list(param.values)}")
    return [c for c in spec.legal_configs() if all(c[k] in v for k, v in only.items())]


def tune(kernel: str, size: tuple[int, int, int] = (4096, 4096, 4096), progress: bool = True,
         budget_s: float = 0.25, only: dict[str, set[int]] | None = None) -> Search:
    """On a GPU: every legal configuration (or those `only` allows), validated then timed against
    cuBLAS; the best is remembered. A configuration that fails validation is reported, never chosen."""
    facts = device.facts()
    if facts is None:
        raise RuntimeError(device.why_unavailable())
    from tqdm.auto import tqdm
    spec = registry.get(kernel)
    rows, refused = [], []
    for cfg in tqdm(candidates(kernel, only), desc=f"tune {spec.name} at {'x'.join(map(str, size))}",
                    disable=not progress):
        try:
            row = bench.bench(spec, cfg, size, budget_s=budget_s).as_row()
        except (UnsupportedShape, bench.ValidationFailed) as exc:
            refused.append((cfg, str(exc)))
            continue
        rows.append(row)
        if row is max(rows, key=lambda r: r["gflops"]):     # saved as it goes: an interruption keeps it
            remember(facts.name, spec.name, tuple(size), row)
    return Search(spec.name, tuple(size), rows, refused)
