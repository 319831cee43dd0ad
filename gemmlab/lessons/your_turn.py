"""Your turn: the exercise cells of every kernel chapter (gemmlab/exercises.py does the work). The `*_of`
functions take an exercise's spec, so that chapter 14's (gemmlab/library/lessons.py) uses them too."""
from __future__ import annotations

import difflib
import sys

from .. import exercises
from ..verdict import shown_path
from ..files import UnusableDirectory
from .display import markdown, table

_hints_shown: dict[str, int] = {}


def _spec(chapter):
    try:
        return exercises.spec_of(chapter)
    except (exercises.NoExercise, LookupError) as exc:
        print(exc)
        return None


def _where_to_click(path) -> str:
    """How to open the learner's copy in the front end at hand (the link serves JupyterLab and VS Code)."""
    if "google.colab" in sys.modules:
        return (f"On Colab: open the Files panel (the folder icon on the left), go to `{path.parent}` and "
                f"double-click `{path.name}`; it opens in Colab's editor, and Ctrl+S saves it.")
    return ("Click the link: JupyterLab opens it in its editor (Ctrl+S saves it); it is also in the file browser, "
            "in the `workspace` folder beside the chapters. In VS Code, open it from the Explorer: "
            "`notebooks/workspace/`.")


def exercise(chapter: str, fresh: bool = False) -> None:
    """The task, and the learner's copy of the starter (made on first use) with a link that opens it
    in JupyterLab's editor. fresh=True starts over from the starter, keeping the old copy beside it."""
    spec = _spec(chapter)
    if spec is not None:
        exercise_of(spec, fresh)


def exercise_of(spec, fresh: bool = False) -> None:
    try:
        path = exercises.start_spec(spec, fresh=fresh)
    except UnusableDirectory as exc:
        print(exc)
        return
    link = shown_path(path)
    kept = exercises.attempts(spec)
    again = (f" Your earlier attempts are kept beside it: {', '.join(f'`{p.name}`' for p in kept)}." if kept else "")
    if fresh and kept:      # an editor tab still open on the old copy would save it over the new one
        again += (" If your copy is open in an editor tab, close the tab without saving (or File > Reload File from "
                  "Disk) before you edit the new one.")
    short = spec.name[:2]
    markdown(f"**Your turn.** {spec.exercise.task}\n\nYour copy of the starter: **[{link}]({link})**. "
             f"{_where_to_click(path)} The TODOs mark where the change goes. Edit it, save, then run "
             f"`gl.check(\"{short}\")` below (or `python -m gemmlab check {short}` in a terminal). "
             f"`gl.hint(\"{short}\")` gives one hint at a time; `gl.solution(\"{short}\")` shows the answer. "
             f"To start over: `gl.exercise(\"{short}\", fresh=True)`.{again}")


def check(chapter: str, file: str | None = None) -> None:
    """Check the learner's file: with a GPU, correctness over awkward shapes and speed against the
    chapter's kernel and cuBLAS; without one, what can be checked without it."""
    if _spec(chapter) is None:
        return
    print(exercises.check(chapter, file))


def hint(chapter: str) -> None:
    """The next hint (one more each call; they start again after the last)."""
    spec = _spec(chapter)
    if spec is not None:
        hint_of(spec)


def hint_of(spec) -> None:
    hints = spec.exercise.hints
    n = _hints_shown.get(spec.name, 0) % len(hints)
    _hints_shown[spec.name] = n + 1
    print(f"hint {n + 1} of {len(hints)}: {hints[n]}")


def solution(chapter: str) -> None:
    """The answer: the diff from the starter to the chapter's own kernel."""
    spec = _spec(chapter)
    if spec is not None:
        solution_of(spec)


def solution_of(spec) -> None:
    diff = difflib.unified_diff(exercises.starter_text(spec).splitlines(), spec.path.read_text().splitlines(),
                                f"starter ({spec.path.name})", getattr(spec, "source_label", f"kernels/{spec.path.name}"),
                                lineterm="", n=1)
    markdown("```diff\n" + "\n".join(diff) + "\n```")


def progress_of(extra=()) -> None:
    """Which exercises pass on this machine: each learner's file that exists, checked now. The kernel
    chapters' exercises, then `extra`: (spec, check) pairs of exercises kept elsewhere (chapter 14's, which
    gemmlab.library.lessons.progress adds), `check()` giving the verdict on the learner's file."""
    rows = []
    kernels = [(spec, lambda spec=spec: exercises.check(spec.name[:2])) for spec in exercises.chapters()]
    for spec, check_it in [*kernels, *extra]:
        path = exercises.learner_file(spec)
        if not path.exists():
            rows.append([spec.title, "not started", "-"])
            continue
        verdict = check_it()
        failed = next((text for ok, text in verdict.lines if not ok), "")
        rows.append([spec.title, verdict.summary, failed.splitlines()[0] if failed else "-"])
    markdown(table(["chapter", "verdict", "first problem"], rows)
             + f"\n\nworkspace: `{shown_path(exercises.workspace())}`")
