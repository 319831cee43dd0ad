"""Measured figures by name, so that prose names a number in the record instead of copying it.

A figure is one number of the record, asked for in a line of words: a verb, what it is about, and a
field of the row found. KERNEL is a kernel's name (prose writes it in full; a unique prefix works,
as in `registry.get`). SHAPE is `4096` (4096 x 4096 x 4096) or `MxNxK`. NAME=VALUE pairs are tunables.

    device FIELD                             the recorded GPU:           device peak_fp32_tflops
    cublas SIZE FIELD                        chapter 00's cuBLAS sweep:  cublas 4096 gflops
    best KERNEL SHAPE FIELD                  the fastest configuration:  best 08 4096 ratio
    result KERNEL SHAPE FIELD NAME=VALUE...  one configuration (overrides on the defaults):
                                                                         result 06 4096 gflops VECTORIZE=0
    step KERNEL I FIELD                      the chapter's step I (from 0), measured at course.STEP_SIZE
    ladder KERNEL SHAPE FIELD                the ladder chapter's:       ladder 03 8192 gflops
    rows, sass, intensity, plan, ...         gemmlab.research.claims's queries, where its VERBS are passed
    search KERNEL SHAPE FIELD NAME=VALUE...  the fastest candidate of the final kernel's search at SHAPE
                                             among those with these values: search 11 6144 ratio SPLIT=4
    final SHAPE FIELD                        the final kernel's table:   final 4096x4096x1024 ratio
    stall KERNEL [I|defaults|best] FIELD     Nsight Compute's profile of the best configuration at the
                                             step size (or of step I, or of the defaults); KERNEL
                                             `cublas` is cuBLAS. FIELD: a stall reason,
                                             issued_per_scheduler, warps_per_scheduler, l2_bytes, ...,
                                             ffma_share (FFMAs among the issued instructions),
                                             dram_bytes (read + written), gflops (of that launch),
                                             ffma_per_sm_cycle, shared_per_sm_cycle: stall cublas wait
    counter KERNEL FIELD NAME=VALUE...       a memory counter of a counter configuration (the first
                                             if none given), by metric or by its words in
                                             records.COUNTERS with underscores: global_load_requests

`A / B` divides one figure by another. Result rows have the fields the record gives them: ms, gflops,
ratio (of cuBLAS in the same run), cublas_gflops, spread, rel_err, ...

In prose (notebook Markdown, README.md) a figure is marked right after the number it checks:
`**102.5%**<!-- figure: final 4096 ratio % -->`. The unit at the end says how the number is
written: `%` (the figure x 100), `+%` (how many percent the figure is above 1: a ratio of cuBLAS
or of two figures written as "6% ahead"), `T` (GFLOP/s written as TFLOP/s), `G` (bytes written as GB), `x` or nothing (as it is).
tests/test_figures.py checks every marked number against the record, within its rounding.
`python -m gemmlab.research.figures QUERY` prints a figure; `python -m gemmlab.research.figures --readme` rewrites
README.md's generated tables from the record.
"""
from __future__ import annotations

import numbers
import re
from pathlib import Path

from .. import course, records, registry
from ..spec import Params

UNITS = {"%": lambda v: v * 100, "+%": lambda v: (v - 1) * 100, "T": lambda v: v / 1e3, "G": lambda v: v / 1e9,
         "x": lambda v: v}
# A marker, and the number written just before it: digits (commas allowed), then at most a few
# characters of no digits on the same line (`**`, `%`, ` TFLOP/s`, `x`, `³`).
MARKER = re.compile(r"<!--\s*figure:\s*(.*?)\s*-->")
WRITTEN = re.compile(r"(\d[\d,]*(?:\.\d+)?)[^\d\n<>]{0,12}$")


class FigureError(ValueError):
    """A query that names nothing in the record: unknown verb, kernel, field or row."""


def shape_of(word: str) -> tuple[int, int, int]:
    parts = word.split("x")
    if not all(p.isdigit() for p in parts) or len(parts) not in (1, 3):
        raise FigureError(f"'{word}' is not a shape (4096 or MxNxK)")
    dims = tuple(int(p) for p in parts)
    return dims * 3 if len(dims) == 1 else dims


def overrides(words: list[str]) -> dict[str, int]:
    out = {}
    for w in words:
        name, eq, val = w.partition("=")
        if not eq or not val.isdigit():
            raise FigureError(f"'{w}' is not NAME=VALUE")
        out[name] = int(val)
    return out


def field_of(row: dict, field: str, what: str) -> float:
    value = row.get(field, row.get("params", {}).get(field))       # a tunable of the row's configuration too
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fields = sorted(k for k, v in row.items() if isinstance(v, numbers.Real) and not isinstance(v, bool))
        raise FigureError(f"{what} has no number '{field}'; it has {', '.join(fields)}")
    return float(value)


def _one(rows: list[dict], what: str) -> dict:
    if not rows:
        raise FigureError(f"the record has no {what}")
    return rows[0]


def _stall_row(profile: dict, sm_count: int) -> dict:
    """A profile flattened: its numbers and stall reasons, and what they give (records.profile_figures)."""
    row = {k: v for k, v in profile.items() if k != "stalls"} | profile["stalls"]
    return row | records.profile_figures(profile, sm_count)


def _counter_row(entry: dict) -> dict:
    row = dict(entry["counters"])
    for metric, words in records.COUNTERS.items():
        if metric in row:
            row[re.sub(r"[^a-z0-9]+", "_", words.lower())] = row[metric]
    return row


def _matches(params: Params, wanted: Params, spec) -> bool:
    for name in wanted:
        spec.tunable(name)                     # a misspelt tunable is an error, not "no row"
    return all(params.get(k) == v for k, v in wanted.items())


def _step(spec, word: str) -> dict:
    """The full configuration of a chapter's step, counted from 0."""
    steps = spec.step_configs()
    if not word.isdigit() or int(word) >= len(steps):
        raise FigureError(f"{spec.name} has steps 0 to {len(steps) - 1}, not '{word}'")
    return steps[int(word)]


def _lookup(words: list[str], rec: records.Record, verbs: dict) -> float:
    if not words:
        raise FigureError("empty query")
    verb, args = words[0], words[1:]

    def need(n: int, form: str, exact: bool = True):
        if len(args) < n or (exact and len(args) != n):
            raise FigureError(f"'{verb}' takes {form}")

    if verb == "device":
        need(1, "FIELD")
        return field_of(rec.device, args[0], "the device")
    if verb == "cublas":
        need(2, "SIZE FIELD")
        sweep = rec.section("chapter00", "chapter 00")["cublas_sweep"]
        row = _one([r for r in sweep if str(r["size"]) == args[0]], f"cuBLAS sweep row at {args[0]}")
        return field_of(row, args[1], f"the cuBLAS sweep at {args[0]}")
    if verb == "final":
        need(2, "SHAPE FIELD")
        shape = shape_of(args[0])
        rows = [r for r in rec.section("final", "the final kernel's table") if records.shape_key(r) == shape]
        return field_of(_one(rows, f"final-table row at {records.shape_label(shape)}"), args[1], "a final-table row")
    if verb in verbs:                         # gemmlab.research.claims's (rows, sass, plan, ...)
        value = verbs[verb](args, rec)
        if isinstance(value, str):
            raise FigureError(f"'{' '.join(words)}' is a string, not a number")
        return value
    if verb not in ("best", "result", "step", "ladder", "search", "stall", "counter"):
        raise FigureError(f"unknown verb '{verb}'; known: device, cublas, best, result, step, ladder, search, "
                          f"final, stall, counter")

    if verb == "stall":
        need(2, "KERNEL [STEP] FIELD", exact=False)
        try:
            name = registry.get(args[0]).name
        except registry.UnknownKernel:
            name = args[0]                     # cuBLAS is profiled too
        profiles = [p for p in rec.stalls() if p["kernel"] == name]
        if name != "cublas":
            spec = registry.get(name)
            which = args[1] if len(args) == 3 else "best"
            wanted = (spec.defaults if which == "defaults" else
                      records.best_config(rec.data["results"], name, course.STEP_SIZE, spec.defaults)
                      if which == "best" else _step(spec, which))
            profiles = [p for p in profiles if p["params"] == wanted]
        if len(args) not in (2, 3):
            raise FigureError("'stall' takes KERNEL [STEP|defaults|best] FIELD")
        row = _stall_row(_one(profiles, f"stall profile of {' '.join(args[:-1])}"), rec.device["sm_count"])
        return field_of(row, args[-1], f"the stall profile of {' '.join(args[:-1])}")

    spec = registry.get(args[0]) if args else None
    if verb == "counter":
        need(2, "KERNEL FIELD [NAME=VALUE...]", exact=False)
        wanted = overrides(args[2:])
        entries = [e for e in rec.counters(spec.name) if _matches(e["params"], wanted, spec)]
        return field_of(_counter_row(_one(entries, f"counters of {spec.name} {' '.join(args[2:])}")), args[1],
                      f"the counters of {spec.name}")
    if verb == "step":
        need(3, "KERNEL STEP FIELD")
        size = (course.STEP_SIZE,) * 3
        return field_of(rec.result(spec.name, _step(spec, args[1]), size), args[2], f"step {args[1]} of {spec.name}")

    need(3, "KERNEL SHAPE FIELD" + (" [NAME=VALUE...]" if verb in ("result", "search") else ""),
         exact=verb in ("best", "ladder"))
    shape, field = shape_of(args[1]), args[2]
    where = f"{spec.name} at {records.shape_label(shape)}"
    if verb == "best":
        return field_of(rec.best(spec.name, shape), field, f"the best of {where}")
    if verb == "result":
        return field_of(rec.result(spec.name, overrides(args[3:]), shape), field, where)
    section, what = {"ladder": ("ladder", "the ladder"), "search": ("final_search", "the final kernel's search")}[verb]
    rows = [r for r in rec.section(section, what) if r["kernel"] == spec.name and records.shape_key(r) == shape]
    if verb == "search":
        wanted = overrides(args[3:])
        rows = [r for r in rows if _matches(r["params"], wanted, spec)]
        rows.sort(key=lambda r: -r["gflops"])
    return field_of(_one(rows, f"{what} row of {where} {' '.join(args[3:])}".strip()), field, f"{what} at {where}")


def value(query: str, record: records.Record | None = None, verbs: dict | None = None) -> float:
    """The figure a query names (see the module's doc), or FigureError (a ValueError) naming the query.
    `verbs`: more verbs, name -> function(words after the verb, record) (gemmlab.research.claims.VERBS)."""
    rec = record if record is not None else records.latest()
    try:
        parts = [_lookup(part.split(), rec, verbs or {}) for part in query.split(" / ")]
    except (LookupError, ValueError, IndexError) as e:
        raise FigureError(f"figure '{query}': {e}") from None
    out = parts[0]
    for p in parts[1:]:
        out /= p
    return out


def marked(marker: str, record: records.Record | None = None, verbs: dict | None = None) -> float:
    """The figure a marker's text names, in the unit it is written in: 'final 4096 ratio %' -> 102.45..."""
    words = marker.split()
    unit = words.pop() if words and words[-1] in UNITS else "x"
    return UNITS[unit](value(" ".join(words), record, verbs))


def check(text: str, record: records.Record | None = None, verbs: dict | None = None) -> list[str]:
    """Every marked figure in a text checked against the record: one line per number that does not
    match the figure within the rounding it is written to (a half-way value may round either way)."""
    rec = record if record is not None else records.latest()
    problems = []
    for m in MARKER.finditer(text):
        before = text[:m.start()]
        number = WRITTEN.search(before[-40:])
        where = before[-60:].replace("\n", " ")
        if not number:
            problems.append(f"no number before the marker '{m.group(0)}' (after: ...{where})")
            continue
        digits = number.group(1).replace(",", "")
        decimals = len(digits.partition(".")[2])
        try:
            figure = marked(m.group(1), rec, verbs)
        except FigureError as e:
            problems.append(str(e))
            continue
        if abs(figure - float(digits)) > 0.5 * 10 ** -decimals * (1 + 1e-9):
            problems.append(f"{digits} should be {figure:.{decimals}f} ({m.group(1)}: {figure:g}): ...{where}")
    return problems


# --- README.md's generated tables --------------------------------------------------------------

README = Path(__file__).resolve().parents[2] / "README.md"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def ladder_table(record: records.Record | None = None) -> str:
    """Each kernel at its best configuration at course.LADDER_PICK_SIZE, from the ladder chapter's ladder: the
    sweep's row of that configuration where the record has one, as the chapter shows it."""
    rec = record if record is not None else records.latest()
    shape = (course.LADDER_PICK_SIZE,) * 3
    rows = []
    for spec in registry.KERNELS.values():
        for r in rec.section("ladder", "the ladder"):
            if r["kernel"] == spec.name and records.shape_key(r) == shape:
                try:
                    r = rec.result(r["kernel"], r["params"], shape)
                except LookupError:        # not in the sweep: the ladder's own timing
                    pass
                rows.append([spec.title, spec.config_label(r["params"]), f"{r['gflops'] / 1e3:.1f}",
                             f"{r['cublas_gflops'] / 1e3:.1f}", f"{r['ratio']:.1%}"])
    return (_table(["kernel", "best configuration", "TFLOP/s", "cuBLAS TFLOP/s (same run)", "of cuBLAS"], rows)
            + f"\n\n*{records.shape_label(shape)}, {rec.label}*")


def final_table(record: records.Record | None = None) -> str:
    """The final chapter's table: the final kernel at each shape, at the configuration its search picked there."""
    rec = record if record is not None else records.latest()
    rows = []
    for r in rec.section("final", "the final kernel's table"):
        spec = registry.get(r["kernel"])
        rows.append([records.shape_label(records.shape_key(r)), spec.changes_label(r["params"]) or "(defaults)",
                     f"{r['gflops'] / 1e3:.1f}", f"{r['cublas_gflops'] / 1e3:.1f}", f"{r['ratio']:.1%}"])
    return _table(["M x N x K", "configuration (changes from the defaults)", "TFLOP/s",
                   "cuBLAS TFLOP/s (same run)", "of cuBLAS"], rows)


README_TABLES = {"ladder table": ladder_table, "final table": final_table}


def _block(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- begin: {re.escape(name)} -->\n)(.*?)\n?(<!-- end: {re.escape(name)} -->)", re.S)


def readme_block(text: str, name: str) -> str:
    """What README.md holds between the fences of one generated table."""
    found = _block(name).search(text)
    if not found:
        raise FigureError(f"README.md has no '<!-- begin: {name} -->' ... '<!-- end: {name} -->' block")
    return found.group(2)


def with_tables(text: str, record: records.Record | None = None) -> str:
    """README.md's text with every generated table made anew from the record."""
    for name, make in README_TABLES.items():
        readme_block(text, name)
        text = _block(name).sub(lambda m: m.group(1) + make(record) + "\n" + m.group(3), text, count=1)
    return text


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--readme"]:
        README.write_text(with_tables(README.read_text()))
        print(f"rewrote the generated tables of {README}")
    else:
        try:
            print(value(" ".join(sys.argv[1:])))
        except FigureError as e:
            sys.exit(str(e))
