"""Claims as data: every sentence of the notebooks and the README that compares or judges is tied to a
condition on the record (gemmlab.research.claims), the condition holds, and changing the sentence fails the check."""
import re
from pathlib import Path

import pytest

from gemmlab import records
from gemmlab.research import claims, figures

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PROSE = NOTEBOOKS + [ROOT / "README.md"]
DOCS = [ROOT / "docs" / "dispatch.md"]        # its current figures are marked; its history is not claims
OPPOSITES = {"faster": "slower", "slower": "faster", "ahead": "behind", "behind": "ahead", "more": "fewer",
             "fewer": "more", "higher": "lower", "lower": "higher", "better": "worse", "worse": "better",
             "below": "above", "above": "below", "under": "over", "over": "under", "least": "most", "most": "least"}


@pytest.fixture(scope="module")
def record():
    return records.latest()


# The claims a compile answers (a kernel's SASS, registers, occupancy, launches: seconds a build with an empty compile
# cache) are the heavy tier's; the fast tier checks every other claim, and every claim's stamp.
@pytest.mark.parametrize("path", PROSE + DOCS, ids=lambda p: p.name)
def test_every_claim_holds(path, record):
    assert [p for text in claims.markdown(path) for p in claims.check(text, record, compiling=False)] == []


@pytest.mark.slow
@pytest.mark.parametrize("path", PROSE + DOCS, ids=lambda p: p.name)
def test_every_claim_that_compiles_a_kernel_holds(path, record):
    assert [p for text in claims.markdown(path) for p in claims.check(text, record, compiling=True)] == []


def test_the_claims_a_compile_answers_are_told_from_the_others(record):
    """Each part of a condition is looked at: a compiling query anywhere in it puts the claim in the heavy tier;
    a false claim of either kind is found by the check of its kind, and by neither of the other."""
    assert claims.compiles("loop 08 FFMA > 100") and claims.compiles("1 < 2 and sass 08 registers / 2 > 10")
    assert not claims.compiles("best 08 4096 gflops > best 01 4096 gflops") and not claims.compiles("3 > 2")
    false_sass = _claim("Chapter 08 spills.", "sass 08 spill_stores > 0")
    false_record = _claim("Chapter 01 is faster than chapter 08.", "best 01 4096 gflops > best 08 4096 gflops")
    for text, kind in ((false_sass, True), (false_record, False)):
        assert claims.check(text, record, compiling=kind) != [] and claims.check(text, record) != []
        assert claims.check(text, record, compiling=not kind) == []


@pytest.mark.parametrize("path", PROSE, ids=lambda p: p.name)
def test_no_sentence_claims_unchecked(path):
    assert [s for text in claims.markdown(path) for s in claims.unchecked(text)] == []


def _changed(sentence: str) -> str:
    """The sentence with one comparison turned round, or else one digit changed (markers left alone)."""
    words = claims._blanked(sentence)          # markers blanked, so that nothing inside one matches
    for word, other in OPPOSITES.items():
        if m := re.search(rf"\b{word}\b", words):
            return sentence[:m.start()] + other + sentence[m.end():]
    if m := re.search(r"\d", words):
        return sentence[:m.start()] + str((int(m.group(0)) + 1) % 10) + sentence[m.end():]
    m = re.search(r" ", words)
    return sentence[:m.start()] + " not " + sentence[m.end():]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_changing_a_claim_or_a_figure_fails(path, record):
    """In every chapter: a checked comparison turned round (or its digit changed) fails the claims test, and
    so does a checked figure written one unit off."""
    texts = claims.markdown(path)
    measured = [(text, m) for text in texts for m in claims.CLAIM.finditer(text)
                if not m.group(2).startswith(claims.NOT_MEASURED)]
    assert measured, f"{path.name} checks no claim"
    text, m = measured[0]
    a, b = next((a, b) for a, b in claims.sentences(text) if a <= m.start() < b)
    changed = text[:a] + _changed(text[a:b]) + text[b:]
    assert changed != text
    assert claims.check(text, record) == [] and claims.check(changed, record) != []
    figured = [(t, f) for t in texts for f in figures.MARKER.finditer(t)]
    if figured:
        t, f = figured[0]
        number = figures.WRITTEN.search(t[:f.start()][-40:])
        digits = number.group(1).replace(",", "")
        wrong = f"{float(digits) + 10 ** -len(digits.partition('.')[2]) * 3:.{len(digits.partition('.')[2])}f}"
        start = f.start() - len(t[:f.start()][-40:]) + number.start(1)
        assert figures.check(t, record, claims.VERBS) == []
        assert figures.check(t[:start] + wrong + t[start + len(number.group(1)):], record, claims.VERBS) != []


# --- the mechanism itself ------------------------------------------------------------------------

def _claim(sentence: str, condition: str) -> str:
    return f"{sentence}<!-- claim {claims.stamp(sentence, condition)}: {condition} -->"


def test_a_true_claim_passes_and_a_false_one_fails(record):
    fast, slow = figures.value("best 08 4096 gflops", record), figures.value("best 01 4096 gflops", record)
    assert fast > slow
    text = _claim("Chapter 08 is faster than chapter 01.", "best 08 4096 gflops > best 01 4096 gflops")
    assert claims.check(text, record) == []
    wrong = _claim("Chapter 08 is slower than chapter 01.", "best 08 4096 gflops < best 01 4096 gflops")
    assert claims.check(wrong, record)[0].startswith("false")


def test_a_changed_sentence_fails_until_restamped(record):
    text = "Before. " + _claim("Chapter 08 is faster than chapter 01.", "best 08 4096 gflops > best 01 4096 gflops") + " After."
    edited = text.replace("faster", "much faster")
    assert "changed since the claim was stamped" in claims.check(edited, record)[0]
    assert claims.check(claims.restamp(edited), record) == []
    # the condition changed and the sentence not: also stale
    assert claims.check(text.replace("> best 01", ">= best 01"), record) != []


def test_conditions_compute(record):
    peak = figures.value("device peak_fp32_tflops", record)
    assert claims.holds(f"device peak_fp32_tflops * 1000 == {peak * 1000}", record)
    assert claims.holds("2 + 3 * 4 == 14 and 10 / 4 - 1 == 1.5", record)
    assert claims.holds("rows final ratio count >= 1 and rows final ratio min <= rows final ratio max", record)
    assert claims.holds("rows results gflops count kernel=01 BLOCK_M=32 > 0", record)
    assert claims.holds(f"rows results gflops count kernel=01 gflops>1e12 == 0", record)
    assert not claims.holds("1 > 2 and 2 > 1", record)
    assert claims.holds("not measured: the tile's width, from the listing", record)


@pytest.mark.parametrize("condition", [
    "best 08 4096 gflops",                  # no operator
    "fastest 4096 ratio > 1",               # unknown verb
    "rows no_section ratio min > 0",        # unknown section
    "rows final ratio mode > 0",            # unknown aggregate
    "rows final ratio min kernel=01 > 0",   # no row matches
    "'a' < 1",                              # a string against a number
    "not measured:",                        # no reason
])
def test_a_condition_that_cannot_be_evaluated_is_an_error(condition, record):
    with pytest.raises(claims.ClaimError):
        claims.holds(condition, record)
    text = f"A sentence.<!-- claim {claims.stamp('A sentence.', condition)}: {condition} -->"
    assert claims.check(text, record) != []


def test_sentences_end_where_a_reader_ends_them():
    text = ("One is 1.5x.<!-- figure: device sm_count --> Two, with 21.04<!-- figure: x --> TFLOP/s, goes on. "
            "Three?\n\n- Four\n- Five\n## Six")
    pieces = [claims._plain(text[a:b]) for a, b in claims.sentences(text)]
    assert pieces == ["One is 1.5x.", "Two, with 21.04 TFLOP/s, goes on.", "Three?", "- Four", "- Five", "## Six"]


def test_unchecked_finds_comparisons_and_figures_without_a_marker():
    marked = _claim("It is faster.", "1 < 2")
    assert claims.unchecked(marked) == []
    assert claims.unchecked("It is faster than the other.") == ["It is faster than the other."]
    assert claims.unchecked("It runs at 21.04 TFLOP/s.") == ["It runs at 21.04 TFLOP/s."]
    assert claims.unchecked("It runs at 21.04<!-- figure: best 08 4096 gflops T --> TFLOP/s.") == []
    # a marked number does not vouch for a comparison beside it
    assert claims.unchecked("It runs at 21.04<!-- figure: best 08 4096 gflops T --> TFLOP/s, ahead of 03.") != []
    assert claims.unchecked("Each thread loads `x < 2.5` in $1.5 x$.") == []   # code and maths are not prose
    assert claims.unchecked("## The fastest kernel") == []                   # headings name, they don't claim


def test_record_reaches_any_number_of_the_record_by_its_path(record):
    assert claims.query("record chapter00.samples.hot.median_ms", record) == record.data["chapter00"]["samples"]["hot"]["median_ms"]
    assert claims.query("record chapter00.first_launches_ms.0", record) == record.data["chapter00"]["first_launches_ms"][0]
    assert claims.holds("record device.sm_count == device sm_count", record)
    for path in ("chapter00.nope", "chapter00.first_launches_ms.9999", "chapter00.samples", "device.name"):
        with pytest.raises(claims.ClaimError):
            claims.query(f"record {path}", record)


@pytest.mark.slow     # five builds: the compiling queries are the heavy tier's
def test_loop_and_conflicts_read_the_hot_loop_and_the_shared_load_model(record):
    from gemmlab import registry, sass
    from gemmlab.compile import compile_kernel
    hot = sass.hot_region(compile_kernel(registry.get("09"), {"KUNROLL": 8}))
    assert claims.query("loop 09 instructions KUNROLL=8", record) == len(hot)
    assert claims.query("loop 09 FFMA KUNROLL=8", record) == sum(op.startswith("FFMA") for op in hot)
    # the snake: more operands from the reuse cache, fewer FFMAs with two reads in one bank (chapter 08's steps)
    row, snake = "loop 08 {} WN=64 TM=8 UNROLL=8 INTERIOR=0 SNAKE=0", "loop 08 {} WN=64 TM=8 UNROLL=8 INTERIOR=0 SNAKE=1"
    assert claims.holds(f"{snake.format('from_cache')} > {row.format('from_cache')}", record)
    assert claims.holds(f"{snake.format('same_bank')} < {row.format('same_bank')}", record)
    # 10's copies: all 12 between the barrier and the first shared load without SPREAD, none with it
    assert claims.query("loop 10 copies_before_loads SPREAD=0", record) == 12
    assert claims.query("loop 10 copies_before_loads", record) == 0
    # the model of a warp's shared loads: 05's 8-wide patch conflicts 2-way on B, 08's warp tile not at all
    assert claims.query("conflicts 05 B TN=8", record) == 2 and claims.query("conflicts 08 B WN=64 TM=8", record) == 1
    with pytest.raises(claims.ClaimError):
        claims.query("conflicts 08 C", record)


def test_a_plan_in_a_claim_is_the_records_on_any_gpu(record, monkeypatch):
    """A claim about a plan is about the record's GPU. Checked on another GPU (here one with 1.44 times the
    record's DRAM bandwidth, whose copy of B is priced lower), the claim's plan is still the record's."""
    from gemmlab import results
    from gemmlab.library import dispatch
    from gemmlab.spec import Problem
    other = {**record.device, "name": "NVIDIA H200", "dram_gbs": record.device["dram_gbs"] * 1.44}

    class OtherGPU:
        def attributes(self):
            return other
    monkeypatch.setattr(results, "here", OtherGPU)
    dispatch.plan.cache_clear()
    try:
        here = dispatch.plan(4096, 24, 11008).stage_us
        claimed = claims.query("plan 4096x24x11008 stage_us", record)
    finally:
        dispatch.plan.cache_clear()
    on_record = dispatch.plan_for(Problem(4096, 24, 11008), record.device, "the record's GPU").stage_us
    assert claimed == pytest.approx(on_record) and here < on_record - 0.1   # the copy, faster there
