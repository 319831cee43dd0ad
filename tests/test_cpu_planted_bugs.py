"""The planted bugs of tests/planted_bugs.py, every one checked without a GPU: at most a tenth of them may
pass, each of those with a reason written beside it (the heavy tier: `make test-slow`)."""
import sys
from pathlib import Path

import pytest

from gemmlab import exercises

sys.path.insert(0, str(Path(__file__).resolve().parent))
from planted_bugs import BUGS, planted  # noqa: E402


@pytest.fixture(autouse=True)
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_WORKSPACE", str(tmp_path / "ws"))
    return tmp_path / "ws"


@pytest.mark.slow
def test_the_planted_bugs_fail_the_check_without_a_gpu(tmp_path):
    passed, expected = [], []
    for n, (chapter, old, new, kind, why) in enumerate(BUGS):
        folder = tmp_path / str(n)
        folder.mkdir()
        verdict = exercises.check(chapter, planted(chapter, old, new, folder), gpu=False)
        if not verdict.failed:
            passed.append(f"{chapter} {kind}")
            if not why:
                expected.append(f"{chapter} {kind}: {verdict}")
    assert not expected, "\n".join(expected)
    assert len(BUGS) >= 40 and len(passed) <= 0.1 * len(BUGS), passed


@pytest.mark.slow
def test_a_wrong_sum_everywhere_is_not_blamed_on_the_edges(tmp_path):
    """A butterfly that mixes column groups is wrong in every row and column, and right only where K is 1 (a sum
    of one product): the verdict must not send the learner to the edge predicates."""
    verdict = exercises.check("12", planted("12", "offset >= STRIDE", "offset >= 1", tmp_path), gpu=False)
    failed = [text for ok, text in verdict.lines if not ok]
    assert failed and "every row" in failed[0] and "edge predicates" not in failed[0], failed
