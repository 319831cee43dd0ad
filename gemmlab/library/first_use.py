"""gemmlab.matmul tuned on first use: on a GPU with no fitted model of its own, and, on the fitted GPU, where the
model cannot tell its best options apart.

The model in gemmlab/fitted/ was fitted to one GPU's record (the H100's). On another GPU the plan scales it
by clock and FP32 lanes and ranks the options the same way, which can pick wrong. So there, the first call
of a shape's class times the model's CANDIDATES best options for it once (the builds no cubin ships compiled
side by side first, compile_aside; then interleaved, the L2 flushed, each result checked against float64:
_time_checked), keeps the fastest that is right, remembers it in the compile cache keyed by the GPU, its driver
and gemmlab's version, and says so. It also remembers how far each timed option ran from the model's price: a
later shape of the class is priced by those factors (`_from_class`), so that it runs the class's winner where
the model prices that near enough, and the model's own choice for it where the winner's gain does not carry
over (a class spans sizes whose tiles fill the GPU differently: 5000³ and 6144³ share one). A call the plan
runs in parts (peeled) or in several launches keeps the plan as it is. One it runs on a copy of B or in a padded
buffer is timed at its own shape among its launch's CANDIDATES best options (a class's factors would price its
launch, not its copies), where its A and B are few enough to make on the host (TIE_BREAK_CHECKED_FLOATS); the
winner is remembered for that shape. `python -m gemmlab tune
--matmul MxNxK ...` tunes shapes' classes beforehand; `python -m gemmlab fit` on a record of the GPU fits a
model of its own (docs/dispatch.md).

On the GPU the model was fitted to, a small call's best options are often priced within a few percent of each
other while they run up to a third apart (the model's error is largest where a call lasts tens of microseconds:
docs/dispatch-history.md), and so are a longer call's where some of its tiles take a kernel's checked copy path.
There, the first call of a shape whose options the model prices within TIE of its best (the call predicted under
TIE_BREAK_US, or with checked tiles and operands of up to TIE_BREAK_CHECKED_FLOATS) times those of them whose
cubins are at hand (shipped or in the cache: a first call compiles nothing for this), keeps the fastest that is
right, and remembers it for that shape exactly, quietly. The plan as `gemmlab plan` prints it stays the model's; the call's plan says what was timed.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import math
import sys
from pathlib import Path

import numpy as np

from .. import bench, compile as compiler, device, files
from ..compile_aside import compile_side_by_side
from .dispatch import Plan, config_key, device_facts
from .dispatch import options as options_of
from .time_model import as_priced, fitted_path, model, unsplit

# How many of the model's best options a first call times.
CANDIDATES = 4
STORE_NAME = "matmul-tuned.json"
# On the fitted GPU: options predicted within this share of the best are timed, where the call is predicted to
# take less than TIE_BREAK_US (longer calls are priced within a few percent, and timing them costs more) ...
TIE = 0.15
TIE_BREAK_US = 1000.0
# ... or where some of its tiles take a kernel's checked copy path, which one constant per path prices (4097 x 4095
# x 4096 ran 19% over its price: docs/dispatch-history.md), and its A and B hold at most this many floats, which the
# timing makes on the host: the timing took 0.63 s of a first call at 4097 x 4095 x 4096 on the H100.
TIE_BREAK_CHECKED_FLOATS = 40_000_000
TIE_BUDGET_S = 0.1
# A class's timing on a GPU with no model prices every shape of the class: timed longer
CLASS_BUDGET_S = 0.3


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


def _time_checked(options: list, budget_s: float = TIE_BUDGET_S, rows: int = 16) -> list[float]:
    """Each option's median time (ms) at its launch's problem, interleaved, the L2 flushed; math.inf for one whose
    result is wrong. With no kernel of CuPy's own: CuPy compiles its random numbers, its elementwise copies and a
    check's reductions on first use, about 5 s on a machine that never ran them (CuPy's kernel cache empty), more than
    the rest of a first call. So the operands come from the host, C is set to
    NaN by a memset (an element a kernel leaves unwritten fails), and the result is checked on the host: `rows` of C
    whole (the first, the last and random ones; each crosses every column of tiles) against float64, within the
    bound bench.check holds every element to."""
    cp = device.cupy()
    p = dataclasses.replace(options[0].launch.problem, alpha=1.0, beta=0.0)
    rng = np.random.default_rng(0)
    # in place where it can: at 4097 x 4095 x 4096 each new array of B's size costs a first call a tenth of a second
    a = rng.random((p.M, p.lda), dtype=np.float32)
    a -= 0.5
    b = rng.random((p.K, p.ldb), dtype=np.float32)
    b -= 0.5
    A, B = cp.asarray(a)[:, :p.K], cp.asarray(b)[:, :p.N]
    c_rows = cp.empty((p.M, p.ldc), cp.float32)
    C = c_rows[:, :p.N]
    picked = sorted({0, p.M - 1, *rng.integers(0, p.M, max(rows - 2, 0)).tolist()})
    a_picked, b_used = a[picked, :p.K].astype(np.float64), b[:, :p.N].astype(np.float64)
    ref = a_picked @ b_used
    bound = (p.K + 2) * bench.UNIT_ROUNDOFF * (np.abs(a_picked) @ np.abs(b_used, out=b_used)) + 1e-30
    arch = device.facts().arch
    compile_side_by_side([(o.launch.spec.name, dict(o.launch.params), arch) for o in options])
    kernels = [bench.Kernel(o.launch.spec, o.launch.params, arch, prebuilt=True) for o in options]
    right = []
    for k in kernels:
        c_rows.data.memset_async(0xFF, c_rows.nbytes)          # every float NaN
        k.launch(p, A, B, C)
        got = np.stack([cp.asnumpy(c_rows[r, :p.N]) for r in picked])     # whole rows: plain copies
        right.append(bool(np.all(np.abs(got - ref) <= bound)))            # NaN fails the comparison
    timings = bench.time_interleaved([lambda k=k: k.launch(p, A, B, C) for k in kernels], budget_s=budget_s)
    return [t.median_ms if ok else math.inf for t, ok in zip(timings, right)]


def _config(option) -> str:
    """An option's configuration, its split tunables aside (the plan picks a split for each shape)."""
    spec = option.launch.spec
    return config_key(spec.name, unsplit(spec, as_priced(spec, option.launch.params)))


def _ranked(plan: Plan, aligned: bool, problem=None) -> list:
    """Every option the model has for the plan's problem (or `problem`), best first, one per configuration (its
    best split)."""
    dev, gpu = device_facts()
    m = model(dev["name"])
    found, _ = options_of(m, problem or plan.problem, dev, gpu, aligned)
    out, seen = [], set()
    for o in sorted(found, key=lambda o: o.rank):
        if _config(o) not in seen:
            seen.add(_config(o))
            out.append(o)
    return out


# What each plan became in this process: a call's host time is what a small product's user waits for.
_adjusted: dict = {}


def adjusted(plan: Plan, aligned: bool = True, timer=None, checker=None, say=True) -> Plan:
    """The plan, or on a GPU with no model of its own the option its class's first-use timing picks for it; on the
    fitted GPU, where the model cannot tell the best options of a small call apart, the fastest of them at the
    shape (`_tie_break`)."""
    memo = (plan.problem, plan.key, aligned)
    if memo not in _adjusted:
        _adjusted[memo] = _adjust(plan, aligned, timer, checker, say)
    return _adjusted[memo]


def _adjust(plan: Plan, aligned: bool, timer, checker, say: bool) -> Plan:
    gpu = device_facts()[0]["name"]
    if has_model(gpu):
        return _tie_break(plan, aligned, timer, checker)
    if plan.core or plan.parts or plan.launches > 1:
        return plan
    if plan.stage_ldb or plan.pad_m:       # B copied, or C padded: the launch's own options, at its own shape
        if not aligned or not _few_enough(plan.choice.launch.problem):
            return plan
        return _timed_at_shape(plan, aligned, timer, checker, lambda ranked: ranked[:CANDIDATES], CLASS_BUDGET_S,
                               "; tuned on first use on this GPU, at this shape")
    path = _store_path()
    store = _load(path)
    key = f"{_gpu_key()}|{class_key(plan.problem, aligned)}"
    ranked = _ranked(plan, aligned)
    entry = store.get(key)
    chosen = _from_class(entry, ranked, plan.problem) if isinstance(entry, dict) else None
    if chosen is None:
        options = ranked[:CANDIDATES]
        chosen = _fastest_kept(options, plan.choice, timer, checker, CLASS_BUDGET_S, path, store, key,
                               shape=_shape(plan.problem))
        if chosen is None:
            return plan
        if say:
            p = plan.problem
            print(f"gemmlab.matmul: {gpu} has no fitted model of its own; timed the model's {len(options)} best "
                  f"options at {p.M}x{p.N}x{p.K} and kept {chosen.label}; other shapes of its class "
                  f"({class_key(p, aligned)}) are priced by these timings; remembered in {path}", file=sys.stderr)
    if chosen.launch.spec is plan.spec and chosen.launch.params == plan.choice.launch.params:
        return plan
    return dataclasses.replace(plan, choice=chosen, basis=plan.basis + "; tuned on first use on this GPU")


def _shape(problem) -> str:
    return f"{problem.M}x{problem.N}x{problem.K}"


def _from_class(entry: dict, ranked: list, problem):
    """The option a class's first-use timing picks for this shape (None where it has none): at the shape it was
    timed at, the winner; at another shape of the class, the best of the model's options once each is priced by
    how far its configuration ran from its price in the timing (measured / predicted), an option never timed by
    the median of those factors, and one whose result was wrong never. An entry from before the factors were
    kept names its winner alone: that serves every shape of the class."""
    factors = entry.get("factors")
    if entry.get("shape") == _shape(problem) or not isinstance(factors, dict):
        return next((o for o in ranked if _config(o) == entry.get("config")), None)
    measured = {c: f for c, f in factors.items() if isinstance(f, (int, float)) and 0 < f < math.inf}
    if not measured:
        return None
    usual = float(np.median(list(measured.values())))
    priced = [(o.predicted_us * measured.get(_config(o), usual), o.rank[1], o) for o in ranked
              if _config(o) in measured or _config(o) not in factors]
    return min(priced, key=lambda t: t[:2])[2] if priced else None


def _tie_break(plan: Plan, aligned: bool, timer, checker) -> Plan:
    """On the fitted GPU: the plan, or where the model prices its best options within TIE of one another, the
    fastest of them that is right, timed at the shape's first call (module docstring). A call the plan runs in
    parts (peeled) or in several launches keeps the plan; one it runs on a copy of B or in a padded buffer is
    tuned among its launch's options. So does a call on operands that do not start 16-byte aligned: the timing's own
    operands do, and a kernel's copy path is chosen by that at run time."""
    if plan.core or plan.parts or plan.launches > 1 or not aligned or not _priced_loosely(plan):
        return plan
    arch = device_facts()[0]["arch"]

    def near_ties(ranked: list) -> list:
        near = [o for o in ranked if o.predicted_us <= plan.choice.predicted_us * (1 + TIE)]
        return [o for o in near if compiler.ready(o.launch.spec, o.launch.params, arch)][:CANDIDATES]
    return _timed_at_shape(plan, aligned, timer, checker, near_ties, TIE_BUDGET_S,
                           f"; the fastest of the options the model prices within {TIE:.0%} of its best, timed on "
                           f"first use")


def _timed_at_shape(plan: Plan, aligned: bool, timer, checker, pick, budget_s: float, why: str) -> Plan:
    """The plan, or the fastest right one of the options `pick` takes from its launch's ranked options, timed at the
    launch's own problem on the shape's first call and remembered for that shape exactly. None is timed where the
    plan's own choice is not the first picked (not at hand), or fewer than two are."""
    p = plan.choice.launch.problem
    path = _store_path()
    store = _load(path)
    key = f"{_gpu_key()}|shape {p.M}x{p.N}x{p.K} ld {p.lda} {p.ldb} {p.ldc}"
    entry = store.get(key)
    kept = entry.get("config") if isinstance(entry, dict) else None
    if kept == _config(plan.choice):
        return plan               # timed before, and the model's choice was the fastest: no ranking needed
    dev, gpu = device_facts()
    if kept is not None:          # timed before: that configuration's best split, priced alone
        found, _ = options_of(model(dev["name"]), p, dev, gpu, aligned, only=kept)
        if found:
            return _tied(plan, min(found, key=lambda o: o.rank), why)
    near = pick(_ranked(plan, aligned, p))
    if len(near) < 2 or _config(near[0]) != _config(plan.choice):
        return plan               # nothing to choose between, or the plan's own choice not at hand
    chosen = _fastest_kept(near, plan.choice, timer, checker, budget_s, path, store, key)
    return plan if chosen is None or _config(chosen) == _config(plan.choice) else _tied(plan, chosen, why)


def _priced_loosely(plan: Plan) -> bool:
    """Whether the model's price of the plan's options is loose enough to time its near ties: a call predicted under
    TIE_BREAK_US, or one with tiles on its kernel's checked copy path whose operands are small enough to time."""
    if plan.predicted_us < TIE_BREAK_US:
        return True
    launch = plan.choice.launch
    p = launch.problem
    checked = launch.fast_tiles is not None and launch.fast_tiles < launch.tiles
    return checked and _few_enough(p)


def _few_enough(p) -> bool:
    """Whether a launch's A and B are few enough floats for a first call's timing to make on the host."""
    return p.M * p.lda + p.K * p.ldb <= TIE_BREAK_CHECKED_FLOATS


def _tied(plan: Plan, chosen, why: str) -> Plan:
    return dataclasses.replace(plan, choice=chosen, basis=plan.basis + why)


def _fastest_kept(options: list, fallback, timer, checker, budget_s: float, path: Path, store: dict, key: str,
                  shape: str | None = None):
    """A first call's work: `options` timed (by `timer`, else _time_checked), the fastest whose result is right kept
    (`fallback`, the model's choice, where none is) and remembered in `store` under `key`, with the shape it was
    timed at and each option's measured time over its predicted one (None for a wrong result: `_from_class`
    prices a class's other shapes by them). None, and nothing remembered, where the GPU has no room beside the
    caller's arrays for the timing's own."""
    try:
        times = (timer or functools.partial(_time_checked, budget_s=budget_s))(options)    # math.inf: a wrong result
    except (MemoryError, device.cupy().cuda.memory.OutOfMemoryError):
        return None
    right = [math.isfinite(t) and (checker is None or checker(o)) for o, t in zip(options, times)]
    order = sorted(range(len(options)), key=lambda i: times[i])
    best = next((i for i in order if right[i]), None)
    chosen = fallback if best is None else options[best]
    store[key] = {"config": _config(chosen), "ms": None if best is None else times[best], "timed": len(options),
                  "date": _dt.date.today().isoformat(), "shape": shape,
                  "factors": {_config(o): t * 1e3 / o.predicted_us if ok else None
                              for o, t, ok in zip(options, times, right)}}
    files.write_atomic(path, json.dumps(store, indent=1) + "\n")
    return chosen
