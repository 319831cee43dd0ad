"""The learner's predictions: each question's right answer comes from the course's models, is judged
right (a wrong one wrong), and the quiz cell runs without a front end."""
import ast
import re
from pathlib import Path

import matplotlib
import nbformat
import pytest

from gemmlab import registry, results
from gemmlab.compile import compile_kernel
from gemmlab.lessons import predictions, show_prediction_quiz
from gemmlab.lessons.models import sectors_per_request, warp_requests
from gemmlab.spec import Problem

matplotlib.use("Agg")   # no front end, as under nbval or CI


def _sectors_of_b(chapter: int) -> float:
    spec = registry.by_chapter(chapter)
    return sectors_per_request(warp_requests(spec, spec.resolve({}), Problem(*results.shape(4096))), "B")


def test_sectors_come_from_the_sector_model():
    p = predictions.prediction("sectors")
    assert p.answer == _sectors_of_b(3) == 4
    assert _sectors_of_b(2) > 4
    assert f"{_sectors_of_b(2):g} sectors per request" in p.explanation, "02's number is in the explanation"
    assert p.is_right(4) and p.is_right(4.0)
    assert not p.is_right(32) and not p.is_right(3)


def test_banks_follow_the_specs_indexing_as_show_banks_draws_it():
    spec = registry.by_chapter(4)
    p = predictions.prediction("bank")
    expected = tuple(registry.model(spec).bank_words(spec.resolve({"LAYOUT": layout}), 0)[5] % 32 for layout in (0, 1))
    assert p.answer == expected == (0, 5)
    assert p.answer[0] != p.answer[1]
    assert p.is_right([0, 5]) and p.is_right((0, 5))
    assert not p.is_right([5, 0]) and not p.is_right([0, 0]) and not p.is_right(0) and not p.is_right([0, None])
    assert "32-way" in p.explanation and "conflict-free" in p.explanation


def test_one_layout_may_be_asked_alone():
    spec = registry.by_chapter(4)
    p = predictions.prediction("bank", LAYOUT=2, k=5, lane=3)
    assert p.answer == registry.model(spec).bank_words(spec.resolve({"LAYOUT": 2}), 5)[3] % 32
    assert p.is_right(p.answer) and not p.is_right((p.answer + 1) % 32)


def test_ffma_per_load_is_the_thread_tiles_ratio():
    p = predictions.prediction("ffma_per_load", TM=8, TN=8)
    assert registry.by_chapter(5).thread_tile(registry.by_chapter(5).resolve({"TM": 8, "TN": 8})) == (8, 8)
    assert p.answer == 4.0
    assert p.is_right(4) and p.is_right(4.04) and not p.is_right(0.25) and not p.is_right(2)
    q = predictions.prediction("ffma_per_load", BM=64, BK=16, TM=8, TN=4)
    assert q.answer == pytest.approx(32 / 12)
    assert q.is_right(2.67) and q.is_right(2.7) and not q.is_right(2.6) and not q.is_right(3)


def test_blocks_per_sm_come_from_the_build():
    spec = registry.by_chapter(9)
    p = predictions.prediction("blocks_per_sm")
    assert p.answer == compile_kernel(spec, {}).occupancy.blocks_per_sm == 1
    assert p.is_right(1) and not p.is_right(2) and not p.is_right(0)
    assert "limited by registers" in p.explanation


def test_every_question_judges_its_own_answer_right_and_another_wrong():
    for question in predictions.QUESTIONS:
        p = predictions.prediction(question)
        assert p.is_right(p.answer), question
        wrong = tuple(b.answer + 1 for b in p.blanks)
        assert not p.is_right(wrong if len(wrong) > 1 else wrong[0]), question
        assert p.verdict(p.answer).startswith("Right")
        assert p.verdict(wrong if len(wrong) > 1 else wrong[0]).startswith("Not quite")


def test_an_unknown_question_lists_the_known_ones(capsys):
    show_prediction_quiz("warp_size")
    out = capsys.readouterr().out
    assert "warp_size" in out and all(q in out for q in predictions.QUESTIONS)


def test_illegal_parameters_give_a_message_not_a_traceback(capsys):
    show_prediction_quiz("ffma_per_load", TM=3)
    assert "TM=3 is not offered" in capsys.readouterr().out
    show_prediction_quiz("sectors", NOPE=1)
    assert "not a tunable" in capsys.readouterr().out
    show_prediction_quiz("bank", lane=32)
    assert "lane must be 0 to 31" in capsys.readouterr().out


@pytest.mark.parametrize("question", list(predictions.QUESTIONS))
def test_the_quiz_cell_runs_headless(question, capsys):
    assert show_prediction_quiz(question) is None
    out = capsys.readouterr().out
    assert out.startswith(predictions.prediction(question).question)


def _said(capsys) -> str:
    """What a click printed, less the escape codes Output.clear_output prints without a front end."""
    return capsys.readouterr().out.rsplit("\r", 1)[-1]


def test_the_check_button_says_right_or_not_quite(capsys):
    p = predictions.prediction("bank")                  # two choices
    box = predictions.quiz_widget(p)
    row, _ = box.children
    *inputs, button = row.children
    button.click()
    assert "answer in every box first" in _said(capsys)
    for widget, value in zip(inputs, p.answer):
        widget.value = value
    button.click()
    out = _said(capsys)
    assert out.startswith("Right") and "bank 160 mod 32 = 0" in out
    inputs[1].value = 0
    button.click()
    assert _said(capsys).startswith("Not quite")

    q = predictions.prediction("ffma_per_load")         # a number typed
    *inputs, button = predictions.quiz_widget(q).children[0].children
    button.click()
    assert "answer in every box first" in _said(capsys), "the box starts empty: no answer of 0 is checked"
    inputs[0].value = "thirty"
    button.click()
    assert _said(capsys).startswith("'thirty' is not a number")
    inputs[0].value = " 4 "
    button.click()
    assert _said(capsys).startswith("Right")

    r = predictions.prediction("blocks_per_sm")         # a whole number typed
    *inputs, button = predictions.quiz_widget(r).children[0].children
    inputs[0].value = "1.5"
    button.click()
    assert _said(capsys).startswith("'1.5' is not a whole number")
    inputs[0].value = f"{r.answer}.0"
    button.click()
    assert _said(capsys).startswith("Right")


# --- chapters 01, 02 and 07 -----------------------------------------------------------------------

def test_naive_bound_is_the_roofline_of_the_requested_traffic():
    from gemmlab import roofline
    spec = registry.by_chapter(1)
    peak, bw = results.ceilings()
    for size, params in ((4096, {}), (1024, {"BLOCK_M": 64, "BLOCK_N": 8}), ((1000, 3000, 517), {"BLOCK_N": 1})):
        t = roofline.traffic(spec, spec.resolve(params), Problem(*results.shape(size)))
        p = predictions.prediction("naive_bound", size=size, **params)
        assert p.answer == pytest.approx(min(peak, bw * t.intensity) / 1e3)
        assert p.answer == pytest.approx(bw * 0.25 / 1e3, rel=0.01), "2 loads of 4 bytes per 2 FLOPs"
        assert f"{p.answer:.2f} TFLOP/s" in p.explanation
    p = predictions.prediction("naive_bound")
    assert p.is_right(round(p.answer, 2)) and p.is_right(bw * 0.25 / 1e3), "rounded, or without the bytes of C"
    assert not p.is_right(p.answer * 2) and not p.is_right(peak / 1e3) and not p.is_right(0.25)


def test_tile_intensity_is_the_tiled_kernels_flop_per_requested_byte():
    from gemmlab import roofline
    spec = registry.by_chapter(2)
    for size, params in ((4096, {}), (4096, {"TILE": 64, "OUTPUTS": 8}), (2048, {"TILE": 16, "OUTPUTS": 2}),
                         ((1000, 3000, 517), {"TILE": 8, "OUTPUTS": 1})):
        full = spec.resolve(params)
        t = roofline.traffic(spec, full, Problem(*results.shape(size)))
        p = predictions.prediction("tile_intensity", size=size, **params)
        assert p.answer == pytest.approx(t.intensity)
        if size == 4096:
            assert p.answer == pytest.approx(full["TILE"] / 4, rel=0.01), "T times the naive kernel's 0.25"
    p = predictions.prediction("tile_intensity")
    assert p.answer == pytest.approx(7.97, abs=0.005)
    assert p.is_right(8) and p.is_right(7.97) and p.is_right(7.9)
    assert not p.is_right(7.5) and not p.is_right(16) and not p.is_right(0.25) and not p.is_right(32)
    q = predictions.prediction("tile_intensity", TILE=64, OUTPUTS=8)
    assert q.is_right(16) and not q.is_right(8)


def test_dram_in_flight_is_littles_law_with_the_records_figures():
    from gemmlab.lessons.profiles import dram_in_flight, tile_bytes
    rate, need = dram_in_flight({"measured_copy_gbs": 1000.0, "sm_count": 100, "clock_mhz": 1000.0}, 500)
    assert (rate, need) == (pytest.approx(10.0), pytest.approx(5000.0)), "1000 GB/s / 100 SMs / 1 GHz x 500 cycles"
    rec = results.record()
    d, lat = rec.device, rec.data["latency"]
    expected = d["measured_copy_gbs"] * 1e9 / d["sm_count"] / (d["clock_mhz"] * 1e6) * lat["dram_cycles"] / 1e3
    spec = registry.by_chapter(7)
    for params in ({}, {"BM": 64, "BK": 16, "TN": 4}, {"BM": 128, "BK": 16, "TN": 8, "PREFETCH": 0}):
        p = predictions.prediction("dram_in_flight", **params)
        assert p.answer == pytest.approx(expected), "the law needs no tunable"
        build = compile_kernel(spec, {**params, "PREFETCH": 1})
        ahead = build.occupancy.blocks_per_sm * tile_bytes(spec, build.params)
        assert f"= {ahead / 1e3:.1f} KB per SM" in p.explanation, "what the configuration keeps in flight"
    p = predictions.prediction("dram_in_flight")
    assert p.answer == pytest.approx(7.75, abs=0.06)   # the record's copy bandwidth: 2,970-2,982 GB/s
    assert p.is_right(7.7) and p.is_right(7.8) and p.is_right(round(p.answer, 1))
    assert not p.is_right(7.0) and not p.is_right(680) and not p.is_right(11.4) and not p.is_right(16.4)
    assert "2 x 8.2 = 16.4 KB per SM" in p.explanation, "the default: 2 blocks a SM, (128 + 128) x 8 floats a tile"


# --- the notebooks: asked before told -------------------------------------------------------------

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
QUIZ_CHAPTERS = ("01_naive", "02_smem_tiling", "03_coalescing", "04_bank_conflicts", "05_register_tiling",
                 "07_prefetch", "09_pipeline")
MEASUREMENTS = ("show_vs_cublas", "show_tunable", "show_sweep")

# A number in prose that equals a quiz's answer but says something else, and why it may stay.
NOT_THE_ANSWER = {
    "05_register_tiling": (
        ("(4 warp FFMAs a cycle against 1 shared wavefront)", "the SM's issue rates, not a thread's reuse"),
        ("the FFMAs 1.27<!-- figure: stall 03_coalescing ffma_per_sm_cycle --> of 4", "the same issue rate"),
    ),
}


def _calls(cell, name: str) -> list[ast.Call]:
    if cell.cell_type != "code":
        return []
    try:
        tree = ast.parse(cell.source)
    except SyntaxError:
        return []
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == name]


def _quizzes(nb) -> list[tuple[int, predictions.Prediction]]:
    """(cell index, the question it asks) for every quiz cell, its arguments read from the source."""
    out = []
    for i, cell in enumerate(nb.cells):
        for call in _calls(cell, "show_prediction_quiz"):
            args = [ast.literal_eval(a) for a in call.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
            out.append((i, predictions.prediction(*args, **kwargs)))
    return out


# A number in prose: not part of a name (float4, sm_90, 05_register_tiling) nor a chapter's number (04).
_NUMBER = re.compile(r"(?<![\w.])(?!0\d)(\d+(?:,\d{3})*(?:\.\d+)?)(?![\w])")
# ...nor an offset or a bound in index arithmetic ($t+1$, $S-1$, $K \ge 1$).
_OPERATORS = ("+", "-", "<", ">", "\\ge", "\\le", "\\geq", "\\leq")
# A given: a number named as the question names it (lane 5, k = 0, LAYOUT=1).
_GIVEN = re.compile(r"(\w+)\s*=\s*$|(\w+)\s+$")


def _normal(text: str) -> str:
    return re.sub(r"\s*=\s*", "=", re.sub(r"[$`*]", "", text))


def _stated(text: str, p: predictions.Prediction) -> list[str]:
    """The numbers in `text` equal to one of p's answers (within its tolerance), with what precedes
    each; leaving out numbers the question itself gives under the same name."""
    question = _normal(p.question)
    hits = []
    for m in _NUMBER.finditer(text):
        value = float(m.group(1).replace(",", ""))
        if text[:m.start()].rstrip().endswith(_OPERATORS):
            continue
        if not any(b.accepts(value) or round(b.answer, 1) == value for b in p.blanks):
            continue
        before = _normal(text[max(0, m.start() - 40):m.start()])
        name = _GIVEN.search(before)
        word = name and (name.group(1) or name.group(2))
        if word and (f"{word}={m.group(1)}" in question or f"{word} {m.group(1)}" in question):
            continue
        hits.append(text[max(0, m.start() - 40):m.end() + 20])
    return hits


def test_the_quiz_chapters_are_the_ones_with_a_quiz():
    with_quiz = {p.stem for p in NOTEBOOKS.glob("*.ipynb") if _quizzes(nbformat.read(p, as_version=4))}
    assert with_quiz == set(QUIZ_CHAPTERS)


@pytest.mark.parametrize("chapter", QUIZ_CHAPTERS)
def test_a_quiz_comes_before_the_first_measurement(chapter):
    nb = nbformat.read(NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    quiz = min(i for i, _ in _quizzes(nb))
    measured = min(i for i, c in enumerate(nb.cells) if any(_calls(c, m) for m in MEASUREMENTS))
    assert quiz < measured, f"{chapter}: the first measurement (cell {measured}) comes before the quiz (cell {quiz})"
    assert "nbval-ignore-output" in nb.cells[quiz].metadata.get("tags", []), "the widget redraws on every run"


@pytest.mark.parametrize("chapter", QUIZ_CHAPTERS)
def test_no_prose_above_a_quiz_states_its_answer(chapter):
    nb = nbformat.read(NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    allowed = NOT_THE_ANSWER.get(chapter, ())
    # markdown cells, less the numbers of numbered lists, their lines joined
    prose = [" ".join(re.sub(r"(?m)^\s*\d+\.\s", "", c.source).split()) if c.cell_type == "markdown" else None
             for c in nb.cells]
    for phrase, _why in allowed:
        assert any(phrase in text for text in prose if text), f"stale exception: {phrase}"
    for index, p in _quizzes(nb):
        for text in prose[:index]:
            if text is None:
                continue
            for phrase, _why in allowed:
                text = text.replace(phrase, "")
            text = re.sub(r"<!--.*?-->", "", text, flags=re.S)   # a figure marker names a record's figure
            assert not _stated(text, p), f"{chapter}: a cell above the quiz states its answer {p.answer}: " \
                                         f"{_stated(text, p)}"


def test_the_answer_finder_finds_a_stated_answer():
    sectors, bank = predictions.prediction("sectors"), predictions.prediction("bank")
    assert _stated("that is 128 bytes: 4 sectors, one request", sectors)
    assert not _stated("32 lanes read 32 floats of float4 rows in chapter 04", sectors)
    assert not _stated("which bank lane 5 reads at step $k = 0$ with `LAYOUT=1`", bank), "the question's givens"
    assert _stated("with padding lane 5 reads bank 5", bank)
    blocks = predictions.prediction("blocks_per_sm")
    assert not _stated("tiles $t+1 \\dots t+S-1$, every $K \\ge 1$", blocks), "index arithmetic"
    assert _stated("254 registers per thread, 1 block per SM", blocks)
    bound = predictions.prediction("naive_bound")
    assert _stated(f"this kernel could not pass {bound.answer:.2f} TFLOP/s", bound)
    assert _stated(f"{predictions.prediction('dram_in_flight').answer:.1f} KB per SM",
                   predictions.prediction("dram_in_flight"))


@pytest.mark.parametrize("typed,integer,read", [("0,84", False, 0.84), ("1,5", False, 1.5), ("1,024", True, 1024),
                                                ("16,384.5", False, 16384.5), (" 32.0 ", True, 32), ("-3", True, -3)])
def test_a_typed_answer_reads_as_a_learner_means_it(typed, integer, read):
    """A decimal comma is a decimal point (0,84 was read as 84); a comma before three digits groups thousands."""
    assert predictions._number(typed, integer) == pytest.approx(read)


@pytest.mark.parametrize("typed", ["nan", "inf", "1,2,3", "abc", ""])
def test_a_typed_answer_that_is_no_number_is_named(typed):
    with pytest.raises(ValueError, match="is not a number"):
        predictions._number(typed, False)


def test_a_choice_box_starts_at_choose():
    """ipywidgets 8 shows a Dropdown made with value None as an empty box: it starts on its 'choose' entry."""
    *boxes, _ = predictions.quiz_widget(predictions.prediction("bank")).children[0].children
    assert [(box.label, box.value) for box in boxes] == [("choose", None)] * 2
