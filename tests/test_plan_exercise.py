"""Chapter 14's exercise (gemmlab/plan_exercise.py): the learner's round_time against the plan's own arithmetic.
The starter fails, the solution passes, and wrong attempts fail with the launch they get wrong."""
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab import exercises
from gemmlab.library import dispatch, time_model
from gemmlab.library import exercise as plan_exercise
from gemmlab.library import round_time as solution
from gemmlab.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_WORKSPACE", str(tmp_path / "ws"))
    return tmp_path / "ws"


def _attempt(workspace, text: str) -> Verdict:
    workspace.mkdir(exist_ok=True)
    path = workspace / "attempt.py"
    path.write_text(text)
    return plan_exercise.check(str(path))


def test_the_solution_passes_and_the_starter_fails(workspace):
    assert plan_exercise.check(which="solution").passed
    starter = plan_exercise.check(which="starter")
    assert starter.failed and starter.exit_status == 1


def test_the_solution_is_the_plans_arithmetic():
    """The reference is dispatch's own code, not the solution file: the two agree on every case."""
    assert all(solution.round_time(*case) == pytest.approx(plan_exercise.reference(*case), abs=1e-12)
               for case in plan_exercise.cases())
    # and the reference is what a plan uses: _features' rounds through waves
    spec = next(s for s in dispatch.registry.KERNELS.values() if s.name == "11_last_wave")
    w, _, lone, _, _, rest = time_model.features(spec, {**spec.defaults, "SPLIT": 1}, dispatch.Problem(4096, 4096, 4096),
                                                132, 2)
    assert float(time_model.waves(w, lone, rest, 0.4, 2)) == pytest.approx(plan_exercise.reference(512, 132, 2, 0.4))


@pytest.mark.parametrize("wrong, where", [
    ("return float(-(-blocks // sm_count) // per_sm)", "last round"),                      # drops the last round
    ("return -(-blocks // sm_count) / per_sm", "share"),                                    # a round in proportion
    ("import math\n    return math.ceil(blocks / (sm_count * per_sm))", "whole rounds"),  # every round full
])
def test_a_wrong_attempt_fails_and_names_a_launch(workspace, wrong, where):
    text = solution.__file__ and Path(solution.__file__).read_text()
    start, stop = exercises._region(text, "round_time.py")
    verdict = _attempt(workspace, text[:start] + "    " + wrong + "\n" + text[stop:])
    assert verdict.failed
    message = verdict.lines[-1][1]
    assert message.startswith("round_time(blocks=") and "the plan's arithmetic gives" in message


def test_a_file_that_does_not_load_says_where(workspace):
    verdict = _attempt(workspace, "def round_time(blocks, sm_count, per_sm, alone:\n    return 1\n")
    assert verdict.failed and "does not load (line 1)" in verdict.lines[-1][1]
    verdict = _attempt(workspace, "def something_else():\n    return 1\n")
    assert verdict.failed and "no function round_time" in verdict.lines[-1][1]
    verdict = _attempt(workspace, "def round_time(blocks, sm_count, per_sm, alone):\n    return 'two'\n")
    assert verdict.failed and "gave 'two'" in verdict.lines[-1][1]


def test_start_copies_the_starter_and_keeps_attempts(workspace):
    path = plan_exercise.start()
    assert path.name == "14_round_time.py" and "TODO" in path.read_text()
    path.write_text(path.read_text() + "# mine\n")
    plan_exercise.start(fresh=True)
    assert (workspace / "14_round_time.attempt1.py").read_text().endswith("# mine\n")


def test_the_command_line_checks_it(workspace):
    ok = subprocess.run([sys.executable, "-m", "gemmlab", "check", "14", "--solution"], capture_output=True, text=True,
                        cwd=ROOT)
    assert ok.returncode == 0 and ok.stdout.startswith("PASS")
    bad = subprocess.run([sys.executable, "-m", "gemmlab", "check", "14", "--starter"], capture_output=True, text=True,
                         cwd=ROOT)
    assert bad.returncode == 1 and "FAIL" in bad.stdout


@pytest.mark.slow
def test_an_endless_loop_ends_at_the_timeout(workspace):
    verdict = _attempt(workspace, "def round_time(blocks, sm_count, per_sm, alone):\n    while True:\n        pass\n")
    assert verdict.failed and "did not return" in verdict.lines[-1][1]
