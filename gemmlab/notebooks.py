"""Execute the course notebooks in place (used on a GPU box, so committed outputs are real).

    python -m gemmlab.notebooks execute notebooks/*.ipynb
    python -m gemmlab.notebooks strip notebooks/*.ipynb     # drop saved progress bars only

Saved progress bars are dropped: opened later, a bar reads as a frozen "0%| | 0/12".
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

# tqdm's text: "desc:  40%|####      | 24/60 [00:12<00:18, 2.0it/s]"
_PROGRESS = re.compile(r"\d+%\|.*\| *\d+/\d+ \[")


def strip_progress(nb) -> int:
    """Remove progress-bar outputs (tqdm's widget or text) from a notebook; how many went."""
    removed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else out.get("data", {}).get("text/plain", "")
            if _PROGRESS.search("".join(text) if isinstance(text, list) else text):
                removed += 1
                continue
            kept.append(out)
        cell.outputs = kept
    return removed


def execute(paths: list[str], timeout: int = 1800) -> int:
    import nbformat
    from nbclient import NotebookClient

    failures = 0
    for path in map(Path, paths):
        nb = nbformat.read(path, as_version=4)
        started = time.time()
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}})
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


def strip(paths: list[str]) -> int:
    import nbformat
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if strip_progress(nb):
            nbformat.write(nb, path)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("execute", "strip"):
        raise SystemExit(__doc__)
    sys.exit((execute if sys.argv[1] == "execute" else strip)(sys.argv[2:]))
