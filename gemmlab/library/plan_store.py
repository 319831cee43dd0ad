"""The plans gemmlab.matmul ran, kept in the compile cache (matmul-plans.json): a new process's first call of a shape
it ran before skips the model's ranking. A reshaped call (B copied, peeled, padded) has every option of every way to
run it priced: 0.23 s of a warm first call's 0.49 s at 4097 x 4095 x 4096 on an H200 (docs/dispatch-history.md).

What is kept is a plan's recipe: how the call is reshaped, and each launch's problem and configuration. Loading it
prices those launches alone (dispatch.options with `only`), which checks each one's rules again, so a recipe can
only ever run what the model would offer now; one whose configuration it no longer offers is planned anew. Recipes
are kept per GPU (its name), model file and gemmlab version. The plan as `gemmlab plan` prints it is the model's
whole ranking (dispatch.plan): a recipe's plan names no runners-up.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import threading
from pathlib import Path

from .. import arch as archs, compile as compiler, files
from ..spec import Problem
from .dispatch import Option, Part, Plan, device_facts, options
from .dispatch import plan as ranked_plan
from .time_model import NotFitted, as_priced, config_key, model, unsplit

STORE_NAME = "matmul-plans.json"
# the most recipes kept (the oldest go first): a process that calls many shapes rewrites the file for each new one
KEPT = 1024


@functools.lru_cache(maxsize=4096, typed=True)      # this process's plans: a repeated shape asks the store nothing
def plan(M: int, N: int, K: int, lda: int, ldb: int, ldc: int, aligned: bool) -> Plan:
    """dispatch.plan's plan for this call, from its recipe where one was kept (made and kept where none was)."""
    dev, gpu = device_facts()
    try:
        m = model(dev["name"])
        store, key = _store(), f"{_section(dev['name'], m.path, m.dropped)}|{M}x{N}x{K} ld {lda} {ldb} {ldc} {aligned}"
        found = _rebuilt(store.get(key), m, dev, gpu, aligned)
    except (NotFitted, archs.UnknownArch):   # no model, or none for this GPU: dispatch's fallback, kept nowhere
        return ranked_plan(M, N, K, lda, ldb, ldc, aligned)
    if found is None:
        found = ranked_plan(M, N, K, lda, ldb, ldc, aligned)
        with _writing:                       # calls from several threads: one changes and writes the store at a time
            store.pop(key, None)             # a stale recipe, or none: this one joins last
            if not math.isnan(found.predicted_us):       # a plan the model priced (not dispatch's fallback)
                store[key] = _recipe(found)
                for old in list(store)[:max(len(store) - KEPT, 0)]:
                    del store[old]
                files.write_atomic(_store_path(), json.dumps(store) + "\n")
    return found


_writing = threading.Lock()


def _store_path() -> Path:
    return compiler.cache_dir() / STORE_NAME


@functools.lru_cache(maxsize=None)
def _store() -> dict:
    """The kept recipes, read once a process (and added to as it plans); empty where missing or damaged."""
    try:
        data = json.loads(_store_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):            # only a cache: planned anew
        return {}


@functools.lru_cache(maxsize=None)
def _section(gpu: str, model_path: Path, dropped: tuple) -> str:
    """What a recipe was made under: the GPU, the model file's bytes (and kernels it dropped) and gemmlab's version."""
    from .. import __version__
    digest = hashlib.sha256(model_path.read_bytes()).hexdigest()[:16]
    return f"{gpu}|model {digest} {','.join(dropped)}|gemmlab {__version__}"


def _problem_list(p: Problem) -> list:
    return [p.M, p.N, p.K, p.lda, p.ldb, p.ldc, p.alpha, p.beta]


def _launch_recipe(option: Option) -> dict:
    launch = option.launch
    p, spec = launch.problem, launch.spec
    return {"problem": _problem_list(p), "params": dict(launch.params),
            "candidate": config_key(spec.name, unsplit(spec, as_priced(spec, launch.params)))}


def _recipe(plan: Plan) -> dict:
    return {"problem": _problem_list(plan.problem), "basis": plan.basis,
            "launches": plan.launches, "core": plan.core, "stage_ldb": plan.stage_ldb, "stage_us": plan.stage_us,
            "pad_n": plan.pad_n, "pad_m": plan.pad_m, "choice": _launch_recipe(plan.choice),
            "parts": [{"row0": part.row0, "col0": part.col0, "basis": part.plan.basis,
                       "problem": _problem_list(part.plan.problem), "choice": _launch_recipe(part.plan.choice)}
                      for part in plan.parts]}


def _option(recipe: dict, m, dev: dict, gpu: str, aligned: bool) -> Option | None:
    """The launch a recipe names, priced alone: None where the model no longer offers it for that problem."""
    found, _ = options(m, Problem(*recipe["problem"]), dev, gpu, aligned, only=recipe["candidate"])
    return next((o for o in found if dict(o.launch.params) == recipe["params"]), None)


def _rebuilt(recipe, m, dev: dict, gpu: str, aligned: bool) -> Plan | None:
    """The plan a recipe makes, its launches priced anew; None where there is none, or the model no longer offers
    one of its launches."""
    try:
        choice = _option(recipe["choice"], m, dev, gpu, aligned)
        parts = [(part, _option(part["choice"], m, dev, gpu, aligned)) for part in recipe["parts"]]
        if choice is None or any(o is None for _, o in parts):
            return None
        return Plan(
            Problem(*recipe["problem"]), recipe["basis"], choice, (), (), launches=recipe["launches"],
            core=tuple(recipe["core"]) if recipe["core"] else None, stage_ldb=recipe["stage_ldb"],
            stage_us=recipe["stage_us"], pad_n=recipe["pad_n"], pad_m=recipe["pad_m"],
            parts=tuple(Part(part["row0"], part["col0"],
                                      Plan(Problem(*part["problem"]), part["basis"], o, (), ()))
                        for part, o in parts))
    except (TypeError, KeyError, ValueError, AttributeError):      # no recipe, or a damaged one: planned anew
        return None

