"""What the tests that hold a chapter's words to the record read: a markdown cell of a notebook."""
import json
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def chapter_prose(notebook: str, heading: str) -> str:
    """The cell of notebooks/<notebook>.ipynb that starts with `heading`, its lines joined by spaces."""
    nb = json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text())
    return " ".join("".join(next(c["source"] for c in nb["cells"] if "".join(c["source"]).startswith(heading))).split())
