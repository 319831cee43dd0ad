"""Execute the course notebooks in place (used on a GPU box, so committed outputs are real).

    python -m gemmlab.notebooks execute notebooks/*.ipynb
"""
from __future__ import annotations

import sys
import time
from pathlib import Path


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
        nbformat.write(nb, path)
        print(f"executed {path} in {time.time() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "execute":
        raise SystemExit(__doc__)
    sys.exit(execute(sys.argv[2:]))
