"""gemmlab.matmul on a GPU with no fitted model of its own: tuned on first use.

The model in gemmlab/fitted/ was fitted to one GPU's record (the H100's). On another GPU the plan scales it
by clock and FP32 lanes and ranks the options the same way, which can pick wrong. So there, the first call
of a shape's class times the model's CANDIDATES best options for it once (validated, interleaved, the L2
flushed), keeps the fastest that is right, remembers it in the compile cache keyed by the GPU, its driver
and gemmlab's version, and says so. Later calls of the class run the remembered choice. A call the plan
reshapes (peeled, B copied) or runs in several launches keeps the plan as it is. `python -m gemmlab tune
--matmul MxNxK ...` tunes shapes' classes beforehand; `python -m gemmlab fit` on a record of the GPU fits a
model of its own (docs/dispatch.md).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import sys
from pathlib import Path

from .. import bench, compile as compiler, device, files
from .dispatch import Plan, config_key, device_facts
from .dispatch import options as options_of
from .time_model import fitted_path, model, unsplit

# How many of the model's best options a first call times.
CANDIDATES = 4
STORE_NAME = "matmul-tuned.json"


@functools.lru_cache(maxsize=None)
def has_model(gpu: str) -> bool:
    """Whether gemmlab/fitted/ holds a model fitted to this GPU's own record."""
    return fitted_path(gpu).exists()


def _bucket(n: int) -> int:
    """n rounded up to the next of 1, 2, 3, 4, 6, 8, 12, 16, ... (powers of two and one and a half times
    them): 5000 and 8192 are different classes, whose best tiles differ on an H200."""
    p = 1 << max(n - 1, 0).bit_length()
    return p * 3 // 4 if p >= 4 and n <= p * 3 // 4 else p


def class_key(problem, aligned: bool) -> str:
    """Shapes that share a choice: each size rounded up (`_bucket`), and how the rows align (which copy path
    the tiles take)."""
    return (f"{_bucket(problem.M)}x{_bucket(problem.N)}x{_bucket(problem.K)}"
            f"{'' if aligned else ' unaligned'}{'' if problem.N % 4 == 0 else ' N%4'}{'' if problem.K % 4 == 0 else ' K%4'}")


def _store_path() -> Path:
    return compiler.cache_dir() / STORE_NAME


def _gpu_key() -> str:
    cp = device.cupy()
    from .. import __version__
    return f"{device.facts().name}|driver {cp.cuda.runtime.driverGetVersion()}|gemmlab {__version__}"


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):            # missing or damaged: it is only a cache, tuned anew
        return {}


def _time(options: list) -> list[float]:
    """Each option's median time (ms) at its problem, interleaved, the L2 flushed before each launch."""
    problem = options[0].launch.problem
    ops = bench.Operands.random(problem)
    kernels = [bench.Kernel(o.launch.spec, o.launch.params, prebuilt=True) for o in options]
    timings = bench.time_interleaved([lambda k=k: k(ops) for k in kernels], budget_s=0.3)
    return [t.median_ms for t in timings]


def _right(option) -> bool:
    ops = bench.Operands.random(option.launch.problem)
    bench.Kernel(option.launch.spec, option.launch.params, prebuilt=True)(ops)
    return bench.check(ops).ok


def _config(option) -> str:
    """An option's configuration, its split tunables aside (the plan picks a split for each shape)."""
    spec = option.launch.spec
    return config_key(spec.name, unsplit(spec, option.launch.params))


def _ranked(plan: Plan, aligned: bool) -> list:
    """Every option the model has for the plan's problem, best first, one per configuration (its best split)."""
    dev, gpu = device_facts()
    m = model(dev["name"])
    found, _ = options_of(m, plan.problem, dev, gpu, aligned)
    out, seen = [], set()
    for o in sorted(found, key=lambda o: (o.predicted_us, o.label)):
        if _config(o) not in seen:
            seen.add(_config(o))
            out.append(o)
    return out


# What each plan became in this process: a call's host time is what a small product's user waits for.
_adjusted: dict = {}


def adjusted(plan: Plan, aligned: bool = True, timer=_time, checker=_right, say=True) -> Plan:
    """The plan, or on a GPU with no model of its own the option first use found fastest for its class."""
    memo = (plan.problem, plan.key, aligned)
    if memo not in _adjusted:
        _adjusted[memo] = _adjust(plan, aligned, timer, checker, say)
    return _adjusted[memo]


def _adjust(plan: Plan, aligned: bool, timer, checker, say: bool) -> Plan:
    gpu = device_facts()[0]["name"]
    if has_model(gpu) or plan.core or plan.stage_ldb or plan.pad_m or plan.launches > 1:
        return plan
    path = _store_path()
    store = _load(path)
    key = f"{_gpu_key()}|{class_key(plan.problem, aligned)}"
    ranked = _ranked(plan, aligned)
    entry = store.get(key)
    chosen = next((o for o in ranked if isinstance(entry, dict) and _config(o) == entry.get("config")), None)
    if chosen is None:
        options = ranked[:CANDIDATES]
        times = timer(options)
        order = sorted(range(len(options)), key=lambda i: times[i])
        best = next((i for i in order if checker(options[i])), None)
        chosen = plan.choice if best is None else options[best]
        store[key] = {"config": _config(chosen), "ms": None if best is None else times[best], "timed": len(options),
                      "date": _dt.date.today().isoformat()}
        files.write_atomic(path, json.dumps(store, indent=1) + "\n")
        if say:
            p = plan.problem
            print(f"gemmlab.matmul: {gpu} has no fitted model of its own; timed the model's {len(options)} best "
                  f"options at {p.M}x{p.N}x{p.K} and kept {chosen.label} for shapes of its class "
                  f"({class_key(p, aligned)}); remembered in {path}", file=sys.stderr)
    if chosen.launch.spec is plan.spec and chosen.launch.params == plan.choice.launch.params:
        return plan
    return dataclasses.replace(plan, choice=chosen, basis=plan.basis + "; tuned on first use on this GPU")
