"""Execute the course notebooks in place (used on a GPU box, so committed outputs are real).

    python -m gemmlab.research.notebooks execute notebooks/*.ipynb
    python -m gemmlab.research.notebooks strip notebooks/*.ipynb     # drop saved progress bars only
    python -m gemmlab.research.notebooks setup notebooks/*.ipynb     # (re)write the first cell: SETUP

Saved progress bars are dropped: opened later, a bar reads as a frozen "0%| | 0/12".
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import time
from pathlib import Path

from ..progress import SPENT

# tqdm's text: "desc:  40%|####      | 24/60 [00:12<00:18, 2.0it/s]"
_PROGRESS = re.compile(r"\d+%\|.*\| *\d+/\d+ \[")


# Every chapter's first code cell. On Colab and Kaggle gemmlab is not installed when a chapter opens:
# the cell installs it from the course's checkout with the CUDA toolchain that matches the driver
# (CUDA 13's where there is no GPU; CuPy too where there is a GPU and the platform has no CuPy; its
# own CuPy and ipywidgets are kept), and makes it importable at once. Anywhere else it does nothing
# and prints nothing. It cannot call gemmlab (not importable yet), so it is the one cell that is not
# a call into the package; a test keeps every notebook's copy the same as this.
SETUP = """\
# Colab or Kaggle: install the course from its checkout once (README: "Colab and Kaggle"). Elsewhere: nothing.
import importlib.util, os, shutil, subprocess, sys
if importlib.util.find_spec("gemmlab") is None and ("google.colab" in sys.modules or "KAGGLE_KERNEL_RUN_TYPE" in os.environ):
    course = next((d for d in ("..", "/content/gemmlab", "/kaggle/working/gemmlab") if os.path.isfile(f"{d}/pyproject.toml")), None)
    if course is None:
        raise SystemExit("First clone the course: !git clone <the course's repository URL> /content/gemmlab  (Kaggle: /kaggle/working/gemmlab)")
    smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout if shutil.which("nvidia-smi") else ""
    cuda = "12" if "CUDA Version: 12" in smi else "13"   # no GPU: compile-only, CUDA 13's NVRTC
    extras = f"cuda{cuda}" + (f",gpu{cuda}" if smi and not importlib.util.find_spec("cupy") else "")   # a CuPy already there stays
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", f"{course}[{extras}]"], check=True)
    sys.path.insert(0, os.path.abspath(course))   # importable now; the next session finds the install
"""


def setup_cell(nb) -> bool:
    """Make SETUP the notebook's first code cell (inserted before the first code cell, or that
    cell rewritten if it is an older SETUP). True if the notebook changed."""
    import nbformat
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    cell = nb.cells[first]
    if cell.source == SETUP.rstrip("\n"):
        return False
    if cell.source.startswith("# Colab or Kaggle"):
        cell.source, cell.outputs = SETUP.rstrip("\n"), []
    else:
        new = nbformat.v4.new_code_cell(SETUP.rstrip("\n"))
        nb.cells.insert(first, new)
    return True


def is_progress(out) -> bool:
    """Whether a cell's output is a progress bar (tqdm's widget, or its text), or the emptied display of a spent one
    (progress.transient)."""
    if out.get("output_type") == "display_data" and dict(out.get("data", {})) == SPENT:
        return True
    text = out.get("text", "") if out.get("output_type") == "stream" else out.get("data", {}).get("text/plain", "")
    return bool(_PROGRESS.search("".join(text) if isinstance(text, list) else text))


def strip_progress(nb) -> int:
    """Remove progress-bar outputs from a notebook; how many went."""
    removed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = cell.get("outputs", [])
        cell.outputs = [out for out in outputs if not is_progress(out)]
        removed += len(outputs) - len(cell.outputs)
    return removed


@contextlib.contextmanager
def _fresh_workspace():
    """The exercises' workspace empty for the block, as a learner's first run finds it (an earlier copy of a
    starter would print its own TODO lines), and as it was again afterwards: its copies set aside, not lost."""
    from ..exercises import workspace
    folder = workspace()
    aside = folder.with_name(f".{folder.name}-aside-{os.getpid()}") if folder.exists() else None
    if aside:
        folder.rename(aside)
    try:
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if aside:
            aside.rename(folder)


def execute(paths: list[str], timeout: int = 1800) -> int:
    import nbformat
    from nbclient import NotebookClient

    failures = 0
    for path in map(Path, paths):
        nb = nbformat.read(path, as_version=4)
        started = time.time()
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}})
        # a learner's first run: a workspace of its own, where no earlier copy of an exercise's starter lingers
        with _fresh_workspace():
            try:
                client.execute()
            except Exception as exc:  # keep going: one broken notebook should not hide the others
                failures += 1
                print(f"FAILED {path}: {type(exc).__name__}: {str(exc)[-2000:]}")
        strip_progress(nb)
        # what JupyterLab writes for ipykernel: another name would mark the notebook changed on opening
        nb.metadata.setdefault("kernelspec", {})["display_name"] = "Python 3 (ipykernel)"
        nbformat.write(nb, path)
        print(f"executed {path} in {time.time() - started:.0f} s")
    return 1 if failures else 0


def rewrite(paths: list[str], change) -> int:
    """Apply `change(nb)` to each notebook, writing back those it changed (it returns truthy)."""
    import nbformat
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if change(nb):
            nbformat.write(nb, path)
    return 0


if __name__ == "__main__":
    commands = {"execute": execute,
                "strip": lambda paths: rewrite(paths, strip_progress),
                "setup": lambda paths: rewrite(paths, setup_cell)}
    if len(sys.argv) < 3 or sys.argv[1] not in commands:
        raise SystemExit(__doc__)
    sys.exit(commands[sys.argv[1]](sys.argv[2:]))
