"""No hand-copied figures: every measured number marked in the notebooks' prose or the README matches
the record within its rounding, and the README's tables are the ones generated from the record."""
import json
from pathlib import Path

import pytest

from gemmlab import records
from gemmlab.research import claims, figures

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
README = ROOT / "README.md"


def _prose(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


@pytest.fixture(scope="module")
def record():
    return records.latest()


@pytest.mark.parametrize("path", NOTEBOOKS + [README, ROOT / "docs" / "dispatch.md"], ids=lambda p: p.name)
def test_marked_figures_match_the_record(path, record):
    assert figures.check(_prose(path), record, claims.VERBS) == []


def test_the_prose_marks_figures():
    assert sum(len(figures.MARKER.findall(_prose(p))) for p in NOTEBOOKS + [README]) >= 20


@pytest.mark.parametrize("name", list(figures.README_TABLES))
def test_readme_tables_are_generated_from_the_record(name, record):
    written = figures.readme_block(README.read_text(), name)
    assert written == figures.README_TABLES[name](record), \
        "README.md is out of date: run `python -m gemmlab.research.figures --readme`"


def test_regenerating_the_readme_changes_nothing_else(record):
    text = README.read_text()
    stale = text.replace(figures.readme_block(text, "ladder table"), "| old |")
    assert figures.with_tables(stale, record) == figures.with_tables(text, record) == text


def test_a_wrong_number_fails_and_a_right_one_passes(record):
    ratio = figures.value("final 4096 ratio", record)
    right = f"{ratio * 100:.1f}"
    wrong = f"{ratio * 100 + 0.2:.1f}"
    marker = "<!-- figure: final 4096 ratio % -->"
    assert figures.check(f"ahead: **{right}%**{marker} at 4096", record) == []
    problems = figures.check(f"ahead: **{wrong}%**{marker} at 4096", record)
    assert len(problems) == 1 and wrong in problems[0] and right in problems[0]
    # fewer decimals written, a coarser rounding allowed
    assert figures.check(f"about {ratio * 100:.0f}%{marker}", record) == []
    # the other units
    gflops = figures.value("final 4096 gflops", record)
    assert figures.check(f"{gflops / 1e3:.2f} TFLOP/s<!-- figure: final 4096 gflops T -->", record) == []
    assert figures.check(f"{(ratio - 1) * 100:.1f}% ahead<!-- figure: final 4096 ratio +% -->", record) == []
    assert figures.check(f"{ratio:.3f}<!-- figure: final 4096 ratio -->", record) == []
    assert figures.check("no number here<!-- figure: final 4096 ratio -->", record) != []


def test_half_way_rounds_either_way():
    rec = records.Record(Path("made-up"), {"device": {"speed": 16.5}})
    for text in ("16", "17", "16.5"):
        assert figures.check(f"{text}-fold<!-- figure: device speed -->", rec) == []
    assert figures.check("18-fold<!-- figure: device speed -->", rec) != []


@pytest.mark.parametrize("query", [
    "fastest 4096 ratio",                                # unknown verb
    "best no_such_kernel 4096 ratio",                    # unknown kernel
    "final 4096 no_such_field",                          # unknown field
    "final 1234 ratio",                                  # no such row
    "best 4096 ratio",                                   # missing words
    "stall cublas no_such_reason",
])
def test_an_unknown_query_raises(query, record):
    with pytest.raises(ValueError, match="figure '"):
        figures.value(query, record)
    assert figures.check(f"1.0<!-- figure: {query} -->", record) != []


def test_queries_reach_every_part_of_the_record(record):
    """One query per verb, each against the record read by hand."""
    data = record.data
    best = max((r for r in data["results"] if r["kernel"] == data["final"][0]["kernel"]
                and records.shape_key(r) == (4096,) * 3), key=lambda r: r["gflops"])
    kernel = best["kernel"]
    assert figures.value(f"best {kernel} 4096 gflops", record) == best["gflops"]
    assert figures.value(f"best {kernel} 4096x4096x4096 ms", record) == best["ms"]
    assert figures.value("device sm_count", record) == data["device"]["sm_count"]
    sweep = data["chapter00"]["cublas_sweep"][-1]
    assert figures.value(f"cublas {sweep['size']} gflops", record) == sweep["gflops"]
    final = data["final"][0]
    assert figures.value(f"final {records.shape_label(records.shape_key(final))} ratio", record) == final["ratio"]
    stall = next(s for s in data["stalls"] if s["kernel"] == "cublas")
    assert figures.value("stall cublas issued_per_scheduler", record) == stall["issued_per_scheduler"]
    query = f"best {kernel} 4096 gflops"
    assert figures.value(f"{query} / {query}", record) == 1.0
