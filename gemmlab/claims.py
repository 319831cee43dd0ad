"""Claims as data: a sentence of prose that compares or judges is tied to the check that proves it.

A figure marker (gemmlab.figures) ties one written number to the record. A claim marker ties a
whole sentence to a condition on the record, the model or the compiled code:

    Chapter 09 ends below chapter 08.<!-- claim 3fa2c1: best 09 4096 gflops < best 08 4096 gflops -->

The text after the colon is the condition: clauses joined by ` and `, each `TERM OP TERM` with OP one
of < <= > >= == !=. A TERM is a number, a 'quoted string', or a query with ` * `, ` / `, ` + `,
` - ` between queries and numbers (spaces around each). A query is any figure query (see
gemmlab.figures) or one of:

    rows SECTION FIELD AGG [FILTER...]      an aggregate over a section of the record: AGG is min,
                                            max, mean, geomean or count; a FILTER is KEY=VALUE,
                                            KEY<VALUE or KEY>VALUE on the row's fields or its tunables
                                            (kernel=08 matches by prefix): rows matmul_heatmap ratio
                                            count ratio<0.9. FIELD may be a ratio of two fields
                                            (ms/predicted_us); AGG may also be median
    sass KERNEL FIELD [NAME=VALUE...]       the compiled code (NVRTC, the default architecture, the
                                            defaults with these overrides): an opcode's count as
                                            `sass.mix` gives it (LDS.128, FFMA, ...), `instructions`,
                                            or a resource: registers, spill_stores, static_smem
    occupancy KERNEL FIELD [NAME=VALUE...]  the same build's residency: blocks_per_sm, warps_per_sm
    intensity KERNEL SHAPE [NAME=VALUE...]  FLOP per byte the kernel requests from global memory
                                            (roofline.traffic)
    plan SHAPE FIELD                        gemmlab.matmul's plan from the record's model: kernel
                                            and config (strings), predicted_us, predicted_gflops,
                                            launches, k_split, pieces, split_tiles, stage_ldb,
                                            peeled, parts, streams (1 or 0), others_slower
    setting MODULE.NAME                     a constant of gemmlab's code: setting dispatch.PEEL_MAX
    fitted FIELD                            the fitted model's number (launch_us, candidates (how many),
                                            fit.median_error, chain_by_kernel.KERNEL, ...)
    loop KERNEL FIELD [NAME=VALUE...]       the hot loop's SASS (sass.hot_region): instructions, an
                                            opcode's count by prefix (FFMA, LDS, LDGSTS), same_bank
                                            (share of its FFMAs with two reads in one register bank),
                                            from_cache (FFMA operands from the reuse cache, per FFMA),
                                            after_barrier (instructions from the barrier to the first
                                            FFMA), copies_before_loads (cp.async copies between the
                                            barrier and the first 128-bit shared load)
    conflicts KERNEL A|B [NAME=VALUE...]    the model of a warp's shared loads of A or B: passes over
                                            conflict-free passes (1: none; 2: a 2-way conflict)
    reuse KERNEL [NAME=VALUE...]            FFMAs per value a thread loads from shared memory in a k
                                            step (show_reuse's table): reuse 08 WN=64 TM=8
    refuses KERNEL SHAPE [NAME=VALUE...]    the shape rule that refuses the problem (leading dimensions
                                            the row lengths), a string, or 'none'
    record PATH                             any number of the record by its keys and list indices
                                            joined by dots: record chapter00.samples.hot.median_ms
    launch M N K FIELD [KERNEL] [NAME=VALUE...]  gemmlab.plan's launch of a shape on the record's GPU (the
                                            final kernel at its defaults unless given): tiles, slots, blocks,
                                            waves, last_wave (tiles in a partial last wave), slot_use,
                                            split_tiles, pieces, k_steps, fast_tiles, covered, intensity,
                                            ridge, k_rest (K % the K tile), ldb_rest (B's row % 4
                                            floats), findings (how many), or a tunable's value

The six hex digits after `claim` are the sentence's stamp: a hash of the sentence (its words, without
markers) and the condition. When the sentence changes and its condition does not, the stamp no longer
matches and the check fails, until someone has read the condition again and re-stamped it
(`python -m gemmlab.claims --stamp FILE`).

A sentence that compares or judges with no marker at all is an unchecked claim (`unchecked`): the
words that make a sentence one are in CLAIM_WORDS. Where such a sentence states no measurement (a
definition, the arithmetic of the code it stands beside), it says so with a stamped reason:
`<!-- claim 0a1b2c: not measured: the tile's size, read off the listing -->`.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import numbers
import re
import statistics
from pathlib import Path

from . import figures, records, registry

ROOT = Path(__file__).resolve().parent.parent
CLAIM = re.compile(r"<!--\s*claim\s+([0-9a-f]{6}|\?+)\s*:\s*(.*?)\s*-->", re.S)
ANY_MARKER = re.compile(r"<!--.*?-->", re.S)
NOT_MEASURED = "not measured:"
OPS = {"<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "==": lambda a, b: a == b,
       "!=": lambda a, b: a != b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}
_CLAUSE = re.compile(r"^(.*?)\s(<=|>=|==|!=|<|>)\s(.*)$")
_ARITH = re.compile(r"\s([*/+-])\s")

# What makes a sentence a measured comparison or judgement. Numbers with a decimal point, a percent
# sign or a unit are figures; they need a figure marker or a claim.
CLAIM_WORDS = re.compile(
    r"\b(faster|slower|fastest|slowest|quicker|ahead|behind|beats?|beaten|wins?|won|loses?|lost|outruns?|"
    r"best(?!\s+(?:configuration|config|option|candidate)s?\b)|worst|better|worse|zero|conflict-free|free of|(?:memory|compute|latency|issue|bandwidth)-bound|"
    r"bound by|level with|on par|twice|half as|more than|less than|fewer|higher|lower|"
    r"spills?|no longer|keeps? up|catches up|cliff)\b"
    r"|\d[\d,]*\.\d+|\d+\s?%|\d[\d,]*(?:\.\d+)?\s?(?:TFLOP/s|GFLOP/s|GB/s|TB/s|µs|ms|MHz|GHz|FLOP/B)",
    re.I)
# A sentence ends at . ! ? (markers may follow it) and a space before a capital, a digit or markup; at a
# blank line, a list item, a heading or a table row.
_BOUNDARY = re.compile(r"[.!?]\0*\s+(?=[A-Z*_`$(\[\"'0-9])|\n\s*\n|\n(?=\s*(?:[-*]|\d+\.)\s)|\n(?=#)|\n(?=\|)")


class ClaimError(ValueError):
    """A condition that cannot be evaluated: an unknown query, a missing row, a malformed clause."""


# --- the queries this module adds to gemmlab.figures -------------------------------------------

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
    for key, op, want in _filters(args[3:]):
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
        raise ClaimError(f"no row of {section} matches {' '.join(args[3:])}")
    aggs = {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median,
            "geomean": statistics.geometric_mean}
    if agg not in aggs:
        raise ClaimError(f"'{agg}' is not an aggregate; known: {', '.join(aggs)}, count")
    return float(aggs[agg](values))


def _params(spec, words: list[str]) -> dict:
    return {**spec.defaults, **figures.overrides(words)}


@functools.lru_cache(maxsize=None)
def _build(kernel: str, params_items: tuple):
    from . import compile as _compile
    return _compile.compile_kernel(kernel, dict(params_items))


def _sass(args: list[str]) -> float:
    from . import sass
    if len(args) < 2:
        raise ClaimError("'sass' takes KERNEL FIELD [NAME=VALUE...]")
    spec = registry.get(args[0])
    build = _build(spec.name, tuple(sorted(_params(spec, args[2:]).items())))
    field = args[1]
    if field == "instructions":
        return float(len(sass.instructions(build)))
    if hasattr(build.resources, field):
        return float(getattr(build.resources, field))
    return float(sass.mix(build).get(field, 0))


def _intensity(args: list[str]) -> float:
    from . import roofline
    from .spec import Problem
    if len(args) < 2:
        raise ClaimError("'intensity' takes KERNEL SHAPE [NAME=VALUE...]")
    spec = registry.get(args[0])
    M, N, K = figures.shape_of(args[1])
    return roofline.traffic(spec, _params(spec, args[2:]), Problem(M, N, K)).intensity


def _plan(args: list[str]):
    from . import dispatch
    if len(args) != 2:
        raise ClaimError("'plan' takes SHAPE FIELD")
    p = dispatch.plan(*figures.shape_of(args[0]))
    launch = p.choice.launch
    fields = {"kernel": p.spec.name, "config": launch.spec.changes_label(launch.params) or "defaults",
              "predicted_us": p.predicted_us, "predicted_gflops": p.problem.flops / p.predicted_us / 1e3,
              "launches": float(p.launches), "k_split": float(launch.k_split), "pieces": float(launch.pieces),
              "split_tiles": float(launch.split_tiles), "stage_ldb": float(p.stage_ldb),
              "peeled": float(p.core is not None), "parts": float(len(p.parts)), "streams": float(p.spec.streams),
              "others_slower": float(all(o.predicted_us > p.choice.predicted_us for o in p.others))}
    if args[1] not in fields:
        raise ClaimError(f"a plan has no field '{args[1]}'; it has {', '.join(fields)}")
    return fields[args[1]]


def _fitted(args: list[str]):
    from . import dispatch
    if len(args) != 1:
        raise ClaimError("'fitted' takes FIELD")
    data = json.loads(dispatch.fitted_path(records.latest().device["name"]).read_text())
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
    """One shape's launch as gemmlab.plan models it on the record's GPU (the final kernel at its defaults
    unless a kernel and overrides are given): launch 6144 6144 6144 waves; launch 512 512 512 tiles 13"""
    from . import plan
    from .compile import compile_kernel
    from .spec import Problem
    if len(args) < 4 or not all(a.isdigit() for a in args[:3]):
        raise ClaimError("'launch' takes M N K FIELD [KERNEL] [NAME=VALUE...]")
    rest = args[4:]
    spec = registry.get(rest.pop(0)) if rest and "=" not in rest[0] else plan.final_kernel()
    full = spec.resolve(figures.overrides(rest))
    problem = Problem(*(int(a) for a in args[:3]))
    spec.check_shape(full, problem)
    dev = rec.device
    per_sm = compile_kernel(spec, full, dev["arch"]).occupancy.blocks_per_sm
    l = plan.launch_with(spec, full, problem, dev, per_sm, dev["name"])
    fields = {"tiles": l.tiles, "slots": l.slots, "blocks": l.blocks, "waves": l.tiles * l.k_split / l.slots,
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
    from . import sass
    if len(args) < 2:
        raise ClaimError("'loop' takes KERNEL FIELD [NAME=VALUE...]")
    spec = registry.get(args[0])
    build = _build(spec.name, tuple(sorted(_params(spec, args[2:]).items())))
    field = args[1]
    if field == "instructions":
        return float(len(sass.hot_region(build)))
    if field in ("same_bank", "from_cache"):
        reads = sass.operand_reads(build)
        return reads[field] / max(reads["ffma"], 1)
    ops = sass.hot_region(build)
    if field in ("after_barrier", "copies_before_loads"):
        bar = next((i for i, op in enumerate(ops) if op.startswith("BAR")), None)
        if bar is None:
            raise ClaimError(f"the hot loop of {spec.name} has no barrier")
        if field == "after_barrier":          # instructions between the barrier and the first FFMA
            return float(ops.index("FFMA", bar) - bar - 1)
        first = next(i for i in range(bar, len(ops)) if ops[i].startswith("LDS.128"))
        return float(sum(op.startswith("LDGSTS") for op in ops[bar:first]))
    return float(sum(op.startswith(field) for op in ops))


def _conflicts(args: list[str]) -> float:
    """The model of a warp's shared loads of one operand over a tile (lessons.models.shared_loads, as
    show_shared_loads tables it): passes over the passes it would take conflict-free, 1 for none,
    2 for a 2-way conflict: conflicts 05 B TN=8."""
    from .lessons.models import shared_loads
    if len(args) < 2 or args[1] not in ("A", "B"):
        raise ClaimError("'conflicts' takes KERNEL A|B [NAME=VALUE...]")
    spec = registry.get(args[0])
    passes = [ld.wavefronts(ph) for ld in shared_loads(spec, _params(spec, args[2:]), args[1])
              for ph in ld.phases()]
    return sum(passes) / len(passes)


# Each verb's function takes the query's words after the verb and the record.
VERBS = {"record": _record, "setting": _setting, "rows": _rows, "sass": lambda args, rec: _sass(args), "intensity": lambda args, rec: _intensity(args),
         "plan": lambda args, rec: _plan(args), "fitted": lambda args, rec: _fitted(args),
         "launch": _launch, "loop": lambda args, rec: _loop(args),
         "conflicts": lambda args, rec: _conflicts(args)}

VERBS.update({"occupancy": lambda args, rec: _occupancy(args)})


def _addresses(args: list[str]) -> float:
    """How many registers the hot loop's loads of one opcode (exactly: LDS, LDS.128, LDG.E.128...)
    take their addresses from, immediate offsets aside (sass.hot_lines): one where the loads add
    offsets to one base, one per load where each has its own. addresses 04 LDS LAYOUT=2"""
    from . import sass
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
    from .spec import Problem, UnsupportedShape
    if len(args) < 2:
        raise ClaimError("'refuses' takes KERNEL SHAPE [NAME=VALUE...]")
    spec = registry.get(args[0])
    try:
        spec.check_shape(spec.resolve(figures.overrides(args[2:])), Problem(*figures.shape_of(args[1])))
    except UnsupportedShape as exc:
        return exc.rule
    return "none"


VERBS.update({"reuse": lambda args, rec: _reuse(args), "refuses": lambda args, rec: _refuses(args)})


def query(text: str, rec: records.Record):
    """One query's value: a number, or a string (a plan's kernel)."""
    words = text.split()
    if not words:
        raise ClaimError("an empty term")
    if words[0] in VERBS:
        return VERBS[words[0]](words[1:], rec)
    return figures.value(text, rec, VERBS)


# --- conditions ----------------------------------------------------------------------------------

def _term(text: str, rec: records.Record):
    text = text.strip()
    if re.fullmatch(r"'[^']*'", text):
        return text[1:-1]
    parts = _ARITH.split(f" {text} ")
    values, ops = [], []
    for i, part in enumerate(parts):
        if i % 2:
            ops.append(part)
            continue
        part = part.strip()
        value = float(part) if re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", part) else query(part, rec)
        values.append(value)
    if len(values) == 1:
        return values[0]
    if any(isinstance(v, str) for v in values):
        raise ClaimError(f"'{text}': arithmetic on a string")
    # * and / before + and -, each left to right
    sums, signs, acc = [], [], values[0]
    for op, v in zip(ops, values[1:]):
        if op == "*":
            acc *= v
        elif op == "/":
            acc /= v
        else:
            sums.append(acc)
            signs.append(op)
            acc = v
    sums.append(acc)
    total = sums[0]
    for sign, v in zip(signs, sums[1:]):
        total = total + v if sign == "+" else total - v
    return total


def holds(condition: str, record: records.Record | None = None) -> bool:
    """Whether a condition holds on the record (ClaimError if it cannot be evaluated)."""
    rec = record if record is not None else records.latest()
    if condition.startswith(NOT_MEASURED):
        if not condition[len(NOT_MEASURED):].strip():
            raise ClaimError("'not measured:' needs a reason")
        return True
    for clause in condition.split(" and "):
        m = _CLAUSE.match(clause.strip())
        if not m:
            raise ClaimError(f"'{clause}' is not TERM OP TERM")
        try:
            left, right = _term(m.group(1), rec), _term(m.group(3), rec)
        except (LookupError, ValueError, ArithmeticError) as e:
            raise ClaimError(f"'{clause}': {e}") from None
        if isinstance(left, str) != isinstance(right, str) and m.group(2) not in ("==", "!="):
            raise ClaimError(f"'{clause}': a string compared with a number")
        if not OPS[m.group(2)](left, right):
            return False
    return True


# --- sentences and stamps ------------------------------------------------------------------------

def _plain(text: str) -> str:
    return " ".join(ANY_MARKER.sub("", text).split())


def _blanked(text: str) -> str:
    """Markers as NULs of the same length, so that positions still match the text."""
    return ANY_MARKER.sub(lambda m: "\0" * len(m.group(0)), text)


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a piece of prose; a marker belongs to the sentence it ends
    or sits in."""
    cuts = [0] + [m.end() for m in _BOUNDARY.finditer(_blanked(text))] + [len(text)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if text[a:b].strip()]


def sentence_at(text: str, pos: int) -> str:
    """The words of the sentence that holds position `pos`, markers left out."""
    return next(_plain(text[a:b]) for a, b in sentences(text) if a <= pos < b)


def stamp(sentence: str, condition: str) -> str:
    return hashlib.sha1(f"{_plain(sentence)}\n{condition.strip()}".encode()).hexdigest()[:6]


def markdown(path: Path) -> list[str]:
    """The prose of a notebook (its markdown cells) or of a Markdown file (one piece)."""
    if path.suffix == ".md":
        return [path.read_text()]
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"]


def _without_code(text: str) -> str:
    """Fenced code blocks, inline code and maths blanked (their length kept): no prose claims there."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r"```.*?```", blank, text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", blank, text, flags=re.S)
    return re.sub(r"`[^`\n]*`|\$[^$\n]*\$", blank, text)


def claims(text: str) -> list[tuple[str, str, str]]:
    """(stamp written, condition, sentence) of every claim marker in a piece of prose."""
    return [(m.group(1), m.group(2), sentence_at(text, m.start())) for m in CLAIM.finditer(text)]


def check(text: str, record: records.Record | None = None) -> list[str]:
    """One line per claim marker that is false, cannot be evaluated, or whose sentence changed."""
    rec = record if record is not None else records.latest()
    problems = []
    for written, condition, sentence in claims(text):
        if written != stamp(sentence, condition):
            problems.append(f"the sentence or its condition changed since the claim was stamped: read the "
                            f"condition again, then `python -m gemmlab.claims --stamp FILE`: \"{sentence}\" "
                            f"[{condition}]")
            continue
        try:
            if not holds(condition, rec):
                problems.append(f"false: \"{sentence}\" [{condition}]")
        except ClaimError as e:
            problems.append(f"cannot check \"{sentence}\": {e}")
    return problems


def unchecked(text: str) -> list[str]:
    """Sentences that compare, judge or state a figure with no claim marker (a number with a figure
    marker is checked; the sentence's other words are not)."""
    out = []
    # a block generated from the record (README.md's tables: `python -m gemmlab.figures --readme`) is
    # checked whole, against what the record generates
    text = re.sub(r"<!-- begin: (.*?) -->.*?<!-- end: \1 -->", lambda m: " " * len(m.group(0)), text, flags=re.S)
    for a, b in sentences(text):
        piece = text[a:b]
        if CLAIM.search(piece) or piece.lstrip().startswith("#"):
            continue
        # the numbers figure markers check are not claims of their own
        for m in reversed(list(figures.MARKER.finditer(piece))):
            number = figures.WRITTEN.search(piece[:m.start()][-40:])
            cut = m.start() - (len(piece[:m.start()][-40:]) - number.start(1)) if number else m.start()
            piece = piece[:cut] + piece[m.end():]
        if CLAIM_WORDS.search(_without_code(_plain(piece))):
            out.append(_plain(text[a:b]))
    return out


def restamp(text: str) -> str:
    """The text with every claim's stamp made anew from its sentence and condition."""
    out, last = [], 0
    for m in CLAIM.finditer(text):
        sentence = sentence_at(text, m.start())
        out.append(text[last:m.start(1)] + stamp(sentence, m.group(2)))
        last = m.end(1)
    return "".join(out) + text[last:]


def restamp_file(path: Path) -> int:
    """Re-stamps every claim of a notebook or Markdown file; returns how many stamps changed."""
    if path.suffix == ".md":
        old = path.read_text()
        new = restamp(old)
        path.write_text(new)
        return sum(a != b for a, b in zip(CLAIM.findall(old), CLAIM.findall(new)))
    nb = json.loads(path.read_text())
    changed = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        old = "".join(cell["source"])
        new = restamp(old)
        if new != old:
            changed += sum(a != b for a, b in zip(CLAIM.findall(old), CLAIM.findall(new)))
            cell["source"] = new.splitlines(keepends=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return changed


def prose_files() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("*.ipynb")) + [ROOT / "README.md", ROOT / "docs" / "dispatch.md"]


if __name__ == "__main__":
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python -m gemmlab.claims",
                                 description="Check the prose's claims against the record, list the unchecked "
                                             "ones, or re-stamp a file's claims after reading them again.")
    ap.add_argument("files", nargs="*", type=Path, help="notebooks or Markdown files (default: all the prose)")
    ap.add_argument("--stamp", action="store_true", help="re-stamp every claim of the files")
    ap.add_argument("--unchecked", action="store_true", help="list the sentences that claim with no marker")
    ap.add_argument("--count", action="store_true", help="how many claims and figures each file checks")
    args = ap.parse_args()
    bad = 0
    if args.count:
        for path in args.files or prose_files():
            found = [c for text in markdown(path) for c in claims(text)]
            stated = sum(c[1].startswith(NOT_MEASURED) for c in found)
            marked = sum(len(figures.MARKER.findall(text)) for text in markdown(path))
            print(f"{path.name}: {len(found) - stated} claims checked, {marked} figures checked, "
                  f"{stated} sentences marked not measured")
        sys.exit(0)
    for path in args.files or prose_files():
        if not path.is_file():
            sys.exit(f"{path}: no such file")
        if args.stamp:
            print(f"{path}: {restamp_file(path)} stamps changed")
            continue
        for text in markdown(path):
            for line in (unchecked(text) if args.unchecked else check(text) + figures.check(text, verbs=VERBS)):
                bad += 1
                print(f"{path.name}: {line}")
    sys.exit(1 if bad else 0)
