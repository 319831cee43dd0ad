"""The learner's predictions: each question's right answer comes from the course's models, is judged
right (a wrong one wrong), and the quiz cell runs without a front end."""
import matplotlib
import pytest

from gemmlab import registry, source
from gemmlab.compile import compile_kernel
from gemmlab.lessons import predictions, show_prediction_quiz
from gemmlab.lessons.models import sectors_per_request, warp_requests
from gemmlab.spec import Problem

matplotlib.use("Agg")   # no front end, as under nbval or CI


def _sectors_of_b(chapter: int) -> float:
    spec = registry.by_chapter(chapter)
    return sectors_per_request(warp_requests(spec, spec.resolve({}), Problem(*source.shape(4096))), "B")


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
    expected = tuple(spec.bank_words(spec.resolve({"LAYOUT": layout}), 0)[5] % 32 for layout in (0, 1))
    assert p.answer == expected == (0, 5)
    assert p.answer[0] != p.answer[1]
    assert p.is_right([0, 5]) and p.is_right((0, 5))
    assert not p.is_right([5, 0]) and not p.is_right([0, 0]) and not p.is_right(0) and not p.is_right([0, None])
    assert "32-way" in p.explanation and "conflict-free" in p.explanation


def test_one_layout_may_be_asked_alone():
    spec = registry.by_chapter(4)
    p = predictions.prediction("bank", LAYOUT=2, k=5, lane=3)
    assert p.answer == spec.bank_words(spec.resolve({"LAYOUT": 2}), 5)[3] % 32
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
    p = predictions.prediction("bank")
    box = predictions.quiz_widget(p)
    row, _ = box.children
    *inputs, button = row.children
    button.click()
    assert "Choose an answer" in _said(capsys)
    for widget, value in zip(inputs, p.answer):
        widget.value = value
    button.click()
    out = _said(capsys)
    assert out.startswith("Right") and "bank 160 mod 32 = 0" in out
    inputs[1].value = 0
    button.click()
    assert _said(capsys).startswith("Not quite")

    q = predictions.prediction("ffma_per_load")
    *inputs, button = predictions.quiz_widget(q).children[0].children
    inputs[0].value = 4.0
    button.click()
    assert _said(capsys).startswith("Right")
