"""The queries a claim's condition may use beyond gemmlab.research.figures's: aggregates over the record,
the compiled code, the model, the plan and the code's own constants (gemmlab.research.claims says how a
condition is written). VERBS maps each verb to its function: the query's words after the verb and the record."""
from __future__ import annotations

import functools
import json
import numbers
import re
import statistics

from .. import records, registry
from . import figures


class ClaimError(ValueError):
    """A condition that cannot be evaluated: an unknown query, a missing row, a malformed clause."""


def _filters(words: list[str], spec_of=None) -> list:
    out = []
    for w in words:
        m = re.fullmatch(r"([A-Za-z_0-9]+)(=|<|>)(.+)", w)
        if not m:
            raise ClaimError(f"'{w}' is not a filter KEY=VALUE, KEY<VALUE or KEY>VALUE")
        out.append(m.groups())
    return out


def _row_value(row: dict, key: str):
    if key in row:
        return row[key]
    return row.get("params", {}).get(key)


def _passes(row: dict, key: str, op: str, want: str) -> bool:
    have = _row_value(row, key)
    if have is None:
        return False
    if key == "kernel":
        return have == registry.get(want).name
    if op == "=":
        return str(have) == want or (isinstance(have, numbers.Real) and _number(want) == have)
    value = _number(want)
    return have < value if op == "<" else have > value


def _number(word: str) -> float:
    try:
        return float(word)
    except ValueError:
        raise ClaimError(f"'{word}' is not a number") from None


def _rows(args: list[str], rec: records.Record) -> float:
    if len(args) < 3:
        raise ClaimError("'rows' takes SECTION FIELD AGG [FILTER...]")
    section, field, agg = args[:3]
    rows = rec.data.get(section)
    if not isinstance(rows, list):
        sections = sorted(k for k, v in rec.data.items() if isinstance(v, list))
        raise ClaimError(f"the record has no section '{section}'; it has {', '.join(sections)}")
    return _aggregate(rows, section, field, agg, args[3:])


def _candidates(args: list[str]) -> float:
    """An aggregate over the fitted model's configurations, as `rows` over a section of the record: candidates
    alone count alone<1"""
    if len(args) < 2:
        raise ClaimError("'candidates' takes FIELD AGG [FILTER...]")
    return _aggregate(_fitted_data()["candidates"], "the fitted model's candidates", args[0], args[1], args[2:])


def _aggregate(rows: list[dict], section: str, field: str, agg: str, filters: list[str]) -> float:
    for key, op, want in _filters(filters):
        rows = [r for r in rows if _passes(r, key, op, want)]
    if agg == "count":
        return float(len(rows))
    if "/" in field:                        # a ratio of two of the row's fields: ms/predicted_us
        top, bottom = field.split("/", 1)
        values = [figures.field_of(r, top, f"a row of {section}") / figures.field_of(r, bottom, f"a row of {section}")
                  for r in rows]
    else:
        values = [figures.field_of(r, field, f"a row of {section}") for r in rows]
    if not values:
        raise ClaimError(f"no row of {section} matches {' '.join(filters)}")
    aggs = {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median,
            "geomean": statistics.geometric_mean}
    if agg not in aggs:
        raise ClaimError(f"'{agg}' is not an aggregate; known: {', '.join(aggs)}, count")
    return float(aggs[agg](values))


def _params(spec, words: list[str]) -> dict:
    return {**spec.defaults, **figures.overrides(words)}


@functools.lru_cache(maxsize=None)
def _build(kernel: str, params_items: tuple):
    from .. import compile as _compile
    return _compile.compile_kernel(kernel, dict(params_items))


def _sass(args: list[str]) -> float:
    from .. import sass
    build, field = _kernel_build("sass", args), args[1]
    if field == "instructions":
        return float(len(sass.instructions(build)))
    if hasattr(build.resources, field):
        return float(getattr(build.resources, field))
    return float(sass.mix(build).get(field, 0))


def _intensity(args: list[str]) -> float:
    from .. import roofline
    from ..spec import Problem
    if len(args) < 2:
        raise ClaimError("'intensity' takes KERNEL SHAPE [NAME=VALUE...]")
    spec = registry.get(args[0])
    M, N, K = figures.shape_of(args[1])
    return roofline.traffic(spec, _params(spec, args[2:]), Problem(M, N, K)).intensity


def _on_record(rec: records.Record) -> tuple[dict, str]:
    """The record's GPU, as a plan names it: claims are about the record, whatever GPU checks them (another
    GPU's plan differs, its copies of B priced at its own bandwidth)."""
    return rec.device, f"{rec.device['name']}, the record's GPU"


_record_plans: dict = {}          # (shape, record's file): its plan, made once a session


def _record_plan(shape: str, rec: records.Record):
    from ..library import dispatch
    from ..spec import Problem
    key = (shape, str(rec.path))
    if key not in _record_plans:
        _record_plans[key] = dispatch.plan_for(Problem(*figures.shape_of(shape)), *_on_record(rec))
    return _record_plans[key]


def _plan(args: list[str], rec: records.Record):
    if len(args) != 2:
        raise ClaimError("'plan' takes SHAPE FIELD")
    p = _record_plan(args[0], rec)
    launch = p.choice.launch
    fields = {"kernel": p.spec.name, "config": launch.spec.changes_label(launch.params) or "defaults",
              "predicted_us": p.predicted_us, "predicted_gflops": p.problem.flops / p.predicted_us / 1e3,
              "launches": float(p.launches), "k_split": float(launch.k_split), "pieces": float(launch.pieces),
              "split_tiles": float(launch.split_tiles), "stage_ldb": float(p.stage_ldb), "pad_n": float(p.pad_n),
              "pad_m": float(p.pad_m), "stage_us": float(p.stage_us),
              "peeled": float(p.core is not None), "parts": float(len(p.parts)), "streams": float(registry.model(p.spec).streams),
              "others_slower": float(all(o.predicted_us > p.choice.predicted_us for o in p.others)),
              "checked_build": float(bool(swapped := registry.model(p.spec).checked_build)
                                     and all(launch.params.get(k) == v for k, v in swapped.items()))}
    fields.update({k: float(v) for k, v in launch.params.items() if k not in fields})   # the launch's tunables
    if args[1] not in fields:
        raise ClaimError(f"a plan has no field '{args[1]}'; it has {', '.join(fields)}")
    return fields[args[1]]


def _option(args: list[str], rec: records.Record):
    """One configuration's price at a shape as the plan weighs it (dispatch.options, the record's model, on the
    record's GPU), for a comparison with the plan's choice: option 640 predicted_us 13 BM=32 SPLIT=3 STAGE_C=1"""
    from ..library import dispatch, time_model
    from ..spec import Problem
    if len(args) < 3:
        raise ClaimError("'option' takes SHAPE FIELD KERNEL [NAME=VALUE...]")
    spec = registry.get(args[2])
    full = spec.resolve(figures.overrides(args[3:]))
    dev, gpu = _on_record(rec)
    found, _ = dispatch.options(time_model.model(dev["name"]), Problem(*figures.shape_of(args[0])), dev, gpu, True)
    match = [o for o in found if o.launch.spec.name == spec.name
             and time_model.as_priced(spec, o.launch.params) == time_model.as_priced(spec, full)]
    if not match:
        raise ClaimError(f"the model prices no option {spec.name} {spec.changes_label(full) or 'defaults'} at {args[0]}")
    fields = {"predicted_us": match[0].predicted_us, "compute_us": match[0].compute_us,
              "memory_us": match[0].memory_us}
    if args[1] not in fields:
        raise ClaimError(f"an option has no field '{args[1]}'; it has {', '.join(fields)}")
    return fields[args[1]]


def _fitted_data() -> dict:
    """The fitted model's file for the newest record's GPU, as JSON."""
    from ..library import time_model
    return json.loads(time_model.fitted_path(records.latest().device["name"]).read_text())


def _fitted(args: list[str]):
    if len(args) != 1:
        raise ClaimError("'fitted' takes FIELD")
    data = _fitted_data()
    value = data
    for key in args[0].split("."):           # fit.median_error, chain_by_kernel.<kernel>
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, list):
        return float(len(value))
    if not isinstance(value, numbers.Real):
        known = sorted(k for k, v in data.items() if isinstance(v, (numbers.Real, list)))
        raise ClaimError(f"the fitted model has no number '{args[0]}'; it has {', '.join(known)}")
    return float(value)


def _setting(args: list[str], rec: records.Record):
    """A constant of gemmlab's code, by module and name: setting dispatch.CEILING_SLACK."""
    import importlib
    if len(args) != 1 or "." not in args[0]:
        raise ClaimError("'setting' takes MODULE.NAME (a module of gemmlab)")
    module, _, name = args[0].rpartition(".")
    try:
        value = getattr(importlib.import_module(f"gemmlab.{module}"), name)
    except (ImportError, AttributeError):
        raise ClaimError(f"gemmlab.{module} has no {name}") from None
    if isinstance(value, (list, tuple, dict, set)):
        return float(len(value))
    if isinstance(value, str):
        return value
    return float(value)


def _launch(args: list[str], rec: records.Record):
    """One shape's launch as gemmlab.launch models it on the record's GPU (the final kernel at its defaults
    unless a kernel and overrides are given): launch 6144 6144 6144 waves; launch 512 512 512 tiles 13"""
    from .. import launch
    from ..compile import compile_kernel
    from ..spec import Problem
    if len(args) < 4 or not all(a.isdigit() for a in args[:3]):
        raise ClaimError("'launch' takes M N K FIELD [KERNEL] [NAME=VALUE...]")
    rest = args[4:]
    spec = registry.get(rest.pop(0)) if rest and "=" not in rest[0] else launch.final_kernel()
    full = spec.resolve(figures.overrides(rest))
    problem = Problem(*(int(a) for a in args[:3]))
    spec.check_shape(full, problem)
    dev = rec.device
    per_sm = compile_kernel(spec, full, dev["arch"]).occupancy.blocks_per_sm
    l = launch.launch_with(spec, full, problem, dev, per_sm, dev["name"])
    fields = {"tiles": l.tiles, "slots": l.slots, "blocks": l.blocks, "waves": l.waves,
              "last_wave": l.tiles * l.k_split % l.slots, "slot_use": l.slot_use, "wave_time": l.wave_time,
              "split_tiles": l.split_tiles, "pieces": l.pieces, "k_steps": l.k_steps, "k_split": l.k_split,
              "fast_tiles": l.fast_tiles, "covered": l.covered, "intensity": l.intensity, "ridge": l.ridge,
              "k_rest": l.problem.K % l.spec.k_tile(l.params), "ldb_rest": l.problem.ldb % 4,
              "findings": len(l.findings())}
    value = fields.get(args[3], l.params.get(args[3]))
    if value is None:
        raise ClaimError(f"a launch has no number '{args[3]}'; it has {', '.join(fields)} and the tunables")
    return float(value)


def _record(args: list[str], rec: records.Record) -> float:
    """A number of the record by its path: record chapter00.first_launches_ms.0, record latency.dram_cycles."""
    if len(args) != 1:
        raise ClaimError("'record' takes PATH (keys and list indices joined by dots)")
    node, walked = rec.data, []
    for key in args[0].split("."):
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            known = (f"indices 0 to {len(node) - 1}" if isinstance(node, list) else
                     ", ".join(sorted(map(str, node))) if isinstance(node, dict) else "nothing below a number")
            raise ClaimError(f"the record has no '{key}' under '{'.'.join(walked) or '(top)'}'; it has {known}")
        walked.append(key)
    if isinstance(node, bool) or not isinstance(node, numbers.Real):
        raise ClaimError(f"the record's '{args[0]}' is not a number")
    return float(node)


def _kernel_build(verb: str, args: list[str]):
    if len(args) < 2:
        raise ClaimError(f"'{verb}' takes KERNEL FIELD [NAME=VALUE...]")
    spec = registry.get(args[0])
    return _build(spec.name, tuple(sorted(_params(spec, args[2:]).items())))


def _occupancy(args: list[str]) -> float:
    """A build's residency on an SM (compile.occupancy): occupancy 04 blocks_per_sm LAYOUT=2"""
    build, field = _kernel_build("occupancy", args), args[1]
    fields = {"blocks_per_sm": build.occupancy.blocks_per_sm, "warps_per_sm": build.occupancy.warps_per_sm}
    if field not in fields:
        raise ClaimError(f"'occupancy' has no field '{field}'; it has {', '.join(fields)}")
    return float(fields[field])


def _loop(args: list[str]) -> float:
    """The hot loop's SASS (sass.hot_region, sass.operand_reads): loop 10 instructions; loop 08 FFMA
    UNROLL=8; loop 10 same_bank (share of its FFMAs with two reads in one register bank); loop 10
    from_cache (FFMA operands served by the reuse cache, per FFMA)."""
    from .. import sass
    build, field = _kernel_build("loop", args), args[1]
    if field == "instructions":
        return float(len(sass.hot_region(build)))
    if field in ("same_bank", "from_cache"):
        reads = sass.operand_reads(build)
        return reads[field] / max(reads["ffma"], 1)
    ops = sass.hot_region(build)
    if field in ("after_barrier", "copies_before_loads"):
        bar = next((i for i, op in enumerate(ops) if op.startswith("BAR")), None)
        if bar is None:
            raise ClaimError(f"the hot loop of {build.kernel} has no barrier")
        if field == "after_barrier":          # instructions between the barrier and the first FFMA
            return float(ops.index("FFMA", bar) - bar - 1)
        first = next(i for i in range(bar, len(ops)) if ops[i].startswith("LDS.128"))
        return float(sum(op.startswith("LDGSTS") for op in ops[bar:first]))
    return float(sum(op.startswith(field) for op in ops))


def _conflicts(args: list[str]) -> float:
    """The model of a warp's shared loads of one operand over a tile (lessons.models.shared_loads, as
    show_shared_loads tables it): passes over the passes it would take conflict-free, 1 for none,
    2 for a 2-way conflict: conflicts 05 B TN=8."""
    from ..lessons.models import shared_loads
    if len(args) < 2 or args[1] not in ("A", "B"):
        raise ClaimError("'conflicts' takes KERNEL A|B [NAME=VALUE...]")
    spec = registry.get(args[0])
    passes = [ld.wavefronts(ph) for ld in shared_loads(spec, _params(spec, args[2:]), args[1])
              for ph in ld.phases()]
    return sum(passes) / len(passes)


# Each verb's function takes the query's words after the verb and the record.
VERBS = {"record": _record, "setting": _setting, "rows": _rows, "sass": lambda args, rec: _sass(args), "intensity": lambda args, rec: _intensity(args),
         "plan": _plan, "option": _option,
         "candidates": lambda args, rec: _candidates(args),
         "fitted": lambda args, rec: _fitted(args),
         "launch": _launch, "loop": lambda args, rec: _loop(args),
         "conflicts": lambda args, rec: _conflicts(args)}

VERBS.update({"occupancy": lambda args, rec: _occupancy(args)})


def _addresses(args: list[str]) -> float:
    """How many registers the hot loop's loads of one opcode (exactly: LDS, LDS.128, LDG.E.128...)
    take their addresses from, immediate offsets aside (sass.hot_lines): one where the loads add
    offsets to one base, one per load where each has its own. addresses 04 LDS LAYOUT=2"""
    from .. import sass
    if len(args) < 2:
        raise ClaimError("'addresses' takes KERNEL OPCODE [NAME=VALUE...]")
    spec = registry.get(args[0])
    build = _build(spec.name, tuple(sorted(_params(spec, args[2:]).items())))
    bases = set()
    for line in sass.hot_lines(build):
        words = line.split()
        op = words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")
        address = re.search(r"\[([^\]]*)\]", line)
        if op == args[1] and address:
            bases.add(re.sub(r"\s*[+-]\s*-?0x[0-9a-fA-F]+|\s", "", address.group(1)))
    if not bases:
        raise ClaimError(f"the hot loop of {spec.name} has no {args[1]} with an address")
    return float(len(bases))


VERBS.update({"addresses": lambda args, rec: _addresses(args)})


def _reuse(args: list[str]) -> float:
    """FFMAs per value a thread loads from shared memory in one k step, TM*TN / (TM + TN) of its
    thread tile (as show_reuse tables it): reuse 08 WN=64 TM=8"""
    if len(args) < 1:
        raise ClaimError("'reuse' takes KERNEL [NAME=VALUE...]")
    spec = registry.get(args[0])
    tm, tn = spec.thread_tile(spec.resolve(figures.overrides(args[1:])))
    return tm * tn / (tm + tn)


def _refuses(args: list[str]) -> str:
    """The shape rule that refuses a problem (spec.check_shape), or 'none': refuses 08 100x101x100
    (row-major, leading dimensions the row lengths) is '16-byte-rows'"""
    from ..spec import Problem, UnsupportedShape
    if len(args) < 2:
        raise ClaimError("'refuses' takes KERNEL SHAPE [NAME=VALUE...]")
    spec = registry.get(args[0])
    try:
        spec.check_shape(spec.resolve(figures.overrides(args[2:])), Problem(*figures.shape_of(args[1])))
    except UnsupportedShape as exc:
        return exc.rule
    return "none"


VERBS.update({"reuse": lambda args, rec: _reuse(args), "refuses": lambda args, rec: _refuses(args)})
# The verbs that compile a kernel to answer (a second or more a build where the compile cache is empty).
COMPILING = frozenset({"sass", "occupancy", "loop", "addresses", "launch"})


def query(text: str, rec: records.Record):
    """One query's value: a number, or a string (a plan's kernel)."""
    words = text.split()
    if not words:
        raise ClaimError("an empty term")
    if words[0] in VERBS:
        return VERBS[words[0]](words[1:], rec)
    return figures.value(text, rec, VERBS)


