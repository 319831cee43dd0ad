"""Claims as data: a sentence of prose that compares or judges is tied to the check that proves it.

A figure marker (gemmlab.research.figures) ties one written number to the record. A claim marker ties a
whole sentence to a condition on the record, the model or the compiled code:

    Chapter 09 ends below chapter 08.<!-- claim 3fa2c1: best 09 4096 gflops < best 08 4096 gflops -->

The text after the colon is the condition: clauses joined by ` and `, each `TERM OP TERM` with OP one
of < <= > >= == !=. A TERM is a number, a 'quoted string', or a query with ` * `, ` / `, ` + `,
` - ` between queries and numbers (spaces around each). A query is any figure query (see
gemmlab.research.figures) or one of (gemmlab.research.claim_queries):

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
    option SHAPE FIELD KERNEL [NAME=VALUE...]  one configuration's price at the shape as the plan weighs it:
                                            predicted_us, compute_us, memory_us
    candidates FIELD AGG [FILTER...]        an aggregate over the fitted model's configurations, as `rows`
                                            over a section: candidates alone count alone<1
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
    launch M N K FIELD [KERNEL] [NAME=VALUE...]  gemmlab.launch's launch of a shape on the record's GPU (the
                                            final kernel at its defaults unless given): tiles, slots, blocks,
                                            waves, last_wave (tiles in a partial last wave), slot_use,
                                            split_tiles, pieces, k_steps, fast_tiles, covered, intensity,
                                            ridge, k_rest (K % the K tile), ldb_rest (B's row % 4
                                            floats), findings (how many), or a tunable's value

The six hex digits after `claim` are the sentence's stamp: a hash of the sentence (its words, without
markers) and the condition. When the sentence changes and its condition does not, the stamp no longer
matches and the check fails, until someone has read the condition again and re-stamped it
(`python -m gemmlab.research.claims --stamp FILE`).

A sentence that compares or judges with no marker at all is an unchecked claim (`unchecked`): the
words that make a sentence one are in CLAIM_WORDS. Where such a sentence states no measurement (a
definition, the arithmetic of the code it stands beside), it says so with a stamped reason:
`<!-- claim 0a1b2c: not measured: the tile's size, read off the listing -->`.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from .. import records
from . import figures
from .claim_queries import COMPILING, VERBS, ClaimError, query  # noqa: F401  (the queries a condition uses)

ROOT = Path(__file__).resolve().parents[2]
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


def compiles(condition: str) -> bool:
    """Whether evaluating the condition compiles a kernel (a query whose verb is in claim_queries.COMPILING)."""
    sides = [side for clause in condition.split(" and ") if (m := _CLAUSE.match(clause.strip()))
             for side in (m.group(1), m.group(3))]
    return any(part.split()[0] in COMPILING for side in sides
               for part in _ARITH.split(f" {side} ")[::2] if part.split())


def check(text: str, record: records.Record | None = None, compiling: bool | None = None) -> list[str]:
    """One line per claim marker that is false, cannot be evaluated, or whose sentence changed. `compiling`:
    True evaluates only the conditions that compile a kernel, False only the others (every stamp is checked
    either way), None all of them."""
    rec = record if record is not None else records.latest()
    problems = []
    for written, condition, sentence in claims(text):
        if written != stamp(sentence, condition):
            problems.append(f"the sentence or its condition changed since the claim was stamped: read the "
                            f"condition again, then `python -m gemmlab.research.claims --stamp FILE`: \"{sentence}\" "
                            f"[{condition}]")
            continue
        if compiling is not None and compiles(condition) != compiling:
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
    # a block generated from the record (README.md's tables: `python -m gemmlab.research.figures --readme`) is
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
    ap = argparse.ArgumentParser(prog="python -m gemmlab.research.claims",
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
