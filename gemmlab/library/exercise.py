"""Chapter 14's exercise: the round arithmetic of gemmlab.matmul's plan, written in Python.

The kernel chapters' exercises are CUDA; the dispatcher's chapter changes Python. The learner writes
`round_time` (gemmlab/library/round_time.py is the solution, between its `# exercise:` lines) in a
copy in the workspace, and the checker runs it in a child process (a learner's endless loop ends at
a timeout) over launches of many sizes, and compares it with the plan's own arithmetic
(time_model.features and time_model.waves). The lessons and the command line route chapter 14 here; the
workspace and the starter are exercises.py's, the verdict verdict.py's.
"""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import exercises
from ..verdict import Verdict, shown_path
from . import time_model
from ..spec import Exercise

SOLUTION = Path(__file__).resolve().parent / "round_time.py"
BEGIN, END = "# exercise: begin", "# exercise: end"
TIMEOUT_S = 10
# Launches that cross every edge of the arithmetic: one block, a few, one SM's worth, one past a round,
# many rounds; GPUs of 16 to 132 SMs; 1 to 8 blocks an SM; a block alone from a tenth of a round to all.
BLOCKS = (1, 2, 25, 64, 131, 132, 133, 263, 264, 265, 397, 500, 1000, 4096)
SM_COUNTS = (132, 108, 80, 46, 16)
PER_SM = (1, 2, 3, 4, 8)
ALONE = (0.1, 0.3, 0.6, 1.0)

STARTER = """\
    # TODO: the busiest SM's blocks (the launch lasts as long as it takes), in whole rounds of per_sm
    #       blocks and a last round of fewer
    # TODO: a last round of j blocks takes alone + (1 - alone) (j - 1) / (per_sm - 1) of a round
    return 0.0
"""


@dataclass(frozen=True)
class PlanExercise:
    """What exercises.py and the lessons ask of a chapter's exercise, for a Python one."""
    name: str = "14_dispatch"
    title: str = "14 · One plan per shape"
    path: Path = SOLUTION
    learner_name: str = "14_round_time.py"
    source_label: str = "gemmlab/library/round_time.py"
    exercise: Exercise = Exercise(
        task="Write `round_time`, the plan's count of how long the busiest SM takes over a launch's blocks, in "
             "rounds: whole rounds of `per_sm` blocks, then a last round of fewer, which takes between `alone` "
             "(one block alone) and a whole round. The checker compares it with the plan's own arithmetic over "
             f"{len(BLOCKS) * len(SM_COUNTS) * len(PER_SM) * len(ALONE):,} launches.",
        starter=STARTER,
        hints=("The launch waits for its busiest SM, which gets ceil(blocks / sm_count) blocks: "
               "`-(-blocks // sm_count)` in Python.",
               "`rounds, last = divmod(busiest, per_sm)`: `last` blocks are left for a last round (none if 0).",
               "A last round of `last` blocks takes `alone + (1 - alone) * (last - 1) / (per_sm - 1)` of a round, "
               "with `alone` no less than 1 / per_sm, and per_sm - 1 no less than 1."))


SPEC = PlanExercise()


def is_it(chapter) -> bool:
    return str(chapter) in ("14", SPEC.name)


def reference(blocks: int, sm_count: int, per_sm: int, alone: float) -> float:
    """The plan's own arithmetic for an unsplit launch (time_model.features, then time_model.waves)."""
    rounds, last = divmod(-(-blocks // sm_count), per_sm)
    return float(time_model.waves(float(rounds), False, last / per_sm, alone, per_sm))


def cases() -> list[tuple[int, int, int, float]]:
    return list(itertools.product(BLOCKS, SM_COUNTS, PER_SM, ALONE))


_CHILD = """\
import json, runpy, sys, traceback
out = []
try:
    fn = runpy.run_path(sys.argv[1]).get("round_time")
except BaseException as e:
    tb = traceback.extract_tb(e.__traceback__)
    line = next((f.lineno for f in reversed(tb) if f.filename == sys.argv[1]), getattr(e, "lineno", None))
    print(json.dumps({"load": f"{type(e).__name__}: {e}", "line": line})); sys.exit()
if not callable(fn):
    print(json.dumps({"load": "it defines no function round_time(blocks, sm_count, per_sm, alone)", "line": None}))
    sys.exit()
for case in json.loads(sys.argv[2]):
    try:
        value = fn(*case)
        out.append(float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value))
    except BaseException as e:
        out.append(f"raised {type(e).__name__}: {e}")
print(json.dumps({"values": out}))
"""


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


def start(fresh: bool = False) -> Path:
    return exercises.start_spec(SPEC, fresh)


def check(file: str | Path | None = None, which: str = "learner") -> Verdict:
    """The verdict on the learner's file (or `file`, or the starter with which="starter", or the solution)."""
    verdict = exercises.start_verdict(SPEC, file, which)
    if not verdict.lines:
        _check(Path(verdict.file), verdict)
    return verdict


def _check(path: Path, verdict: Verdict) -> None:
    all_cases = cases()
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(path), json.dumps(all_cases)],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        verdict.add(False, f"round_time did not return within {TIMEOUT_S} s over {len(all_cases):,} launches: "
                           f"is there a loop that never ends?")
        return
    except (ValueError, IndexError):
        verdict.add(False, f"{shown_path(path)} could not be run: {done.stderr.strip().splitlines()[-1:] or '?'}")
        return
    if "load" in found:
        where = f" (line {found['line']})" if found.get("line") else ""
        verdict.add(False, f"{shown_path(path)} does not load{where}: {found['load']}")
        return
    verdict.add(True, "defines round_time(blocks, sm_count, per_sm, alone)")
    wrong = []
    for case, got in zip(all_cases, found["values"]):
        want = reference(*case)
        if isinstance(got, str) or abs(got - want) > 1e-9 * max(1.0, abs(want)):
            wrong.append((case, got, want))
    verdict.on_cpu = True
    if wrong:
        (blocks, sms, per_sm, alone), got, want = wrong[0]
        busiest = -(-blocks // sms)
        verdict.add(False, f"round_time(blocks={blocks}, sm_count={sms}, per_sm={per_sm}, alone={alone}) gave "
                           f"{got if isinstance(got, str) else f'{got:g}'}; the plan's arithmetic gives {want:g} (the "
                           f"busiest SM runs {_count(busiest, 'block')}: {_count(busiest // per_sm, 'whole round')} "
                           f"and a last round of {_count(busiest % per_sm, 'block')}). Wrong at {len(wrong):,} of "
                           f"{len(all_cases):,} launches.")
        return
    verdict.add(True, f"the plan's arithmetic at all {len(all_cases):,} launches ({BLOCKS[0]} to {BLOCKS[-1]:,} "
                      f"blocks, {min(SM_COUNTS)} to {max(SM_COUNTS)} SMs, {min(PER_SM)} to {max(PER_SM)} blocks an SM)")
