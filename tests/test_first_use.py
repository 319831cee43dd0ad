"""gemmlab.matmul on a GPU with no fitted model: its first call of a shape's class times the model's best few
options once, keeps the fastest that is right, remembers it and says so (gemmlab/library/first_use.py).
The timing is faked here; on a GPU, .ci/matmul-first-use measures the whole of it."""
import pytest

from gemmlab.library import dispatch, first_use
from gemmlab.spec import Problem


@pytest.fixture
def no_model(tmp_path, monkeypatch):
    """A GPU with no model of its own (the plans still come from the H100's, scaled), a store in tmp_path."""
    monkeypatch.setattr(first_use, "has_model", lambda gpu: False)
    monkeypatch.setattr(first_use, "_gpu_key", lambda: "Some GPU|driver 13000|gemmlab 0.1.0")
    monkeypatch.setattr(first_use, "_store_path", lambda: tmp_path / first_use.STORE_NAME)
    monkeypatch.setattr(first_use, "_adjusted", {})
    return tmp_path / first_use.STORE_NAME


def test_a_class_is_the_sizes_rounded_up_and_the_rows_alignment():
    assert first_use.class_key(Problem(3000, 4096, 1000), True) == "3072x4096x1024"
    assert [first_use._bucket(n) for n in (1, 3, 5, 6, 7, 5000, 6144, 8192)] == [1, 3, 6, 6, 8, 6144, 6144, 8192]
    assert first_use.class_key(Problem(1, 2, 3), True) == "1x2x3 N%4 K%4"
    assert first_use.class_key(Problem(4096, 4095, 4096), False) == "4096x4096x4096 unaligned N%4"


def test_a_gpu_with_a_model_of_its_own_keeps_the_plan():
    plan = dispatch.plan(4096, 4096, 4096)          # no GPU here: the record's GPU, which has a model
    assert first_use.adjusted(plan, timer=lambda options: pytest.fail("timed")) is plan


def test_the_first_call_times_the_best_options_keeps_the_fastest_right_one_and_says_so(no_model, capsys):
    plan = dispatch.plan(2048, 2048, 2048)
    timed = []

    def timer(options):
        timed.append([o.label for o in options])
        return [float(len(options) - i) for i in range(len(options))]      # the model's last option is fastest
    wrong = set()
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: o.label not in wrong)
    assert len(timed) == 1 and len(timed[0]) == first_use.CANDIDATES
    assert chosen.choice.label == timed[0][-1] and chosen.choice.label != plan.choice.label
    assert "tuned on first use" in chosen.basis
    said = capsys.readouterr().err
    assert "has no fitted model" in said and "2048x2048x2048" in said and chosen.choice.label in said
    # remembered: a new process (memo emptied) at another shape of the class times nothing and says nothing
    first_use._adjusted.clear()
    again = first_use.adjusted(dispatch.plan(2000, 2000, 2040), timer=lambda options: pytest.fail("timed again"))
    assert first_use._config(again.choice) == first_use._config(chosen.choice)
    assert capsys.readouterr().err == ""


def test_a_fast_option_that_is_wrong_is_not_kept(no_model):
    plan = dispatch.plan(2048, 2048, 2048)
    options = []

    def timer(found):
        options.extend(found)
        return [1.0, 0.5, 2.0, 3.0][:len(found)]
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: o is not options[1], say=False)
    assert chosen.choice.label == options[0].label, "the fastest is wrong: the next fastest"


def test_a_damaged_store_is_tuned_anew(no_model):
    no_model.write_text("{ not json")
    plan = dispatch.plan(1024, 1024, 1024)
    chosen = first_use.adjusted(plan, timer=lambda options: [1.0] * len(options), checker=lambda o: True, say=False)
    assert chosen.choice.label == plan.choice.label and "1024x1024x1024" in no_model.read_text()


def test_a_reshaped_plan_is_kept_as_it_is(no_model):
    plan = dispatch.plan(4095, 4095, 4095)          # B copied into 16-byte rows
    assert plan.stage_ldb
    assert first_use.adjusted(plan, timer=lambda options: pytest.fail("timed")) is plan
