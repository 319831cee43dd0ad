"""The notebooks stay thin: prose, and code cells that are one call into gemmlab each."""
import ast
import json
from pathlib import Path

import pytest

from gemmlab import lessons, registry

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_is_a_notebook_per_chapter():
    chapters = {int(p.name[:2]) for p in NOTEBOOKS}
    assert {spec.chapter for spec in registry.KERNELS.values()} | {0} <= chapters


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_cells_are_single_gemmlab_calls(path):
    cells = json.loads(path.read_text())["cells"]
    for cell in cells:
        source = "".join(cell["source"])
        assert "__global__" not in source, "notebooks display kernel files, they never copy them"
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse(source)
        assert len(tree.body) == 1, f"one statement per code cell: {source!r}"
        stmt = tree.body[0]
        if isinstance(stmt, ast.Import):
            assert stmt.names[0].name.startswith("gemmlab")
            continue
        assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call), source
        func = stmt.value.func
        assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "gl", source
        assert hasattr(lessons, func.attr), f"gemmlab.lessons has no {func.attr}()"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_mostly_prose(path):
    cells = json.loads(path.read_text())["cells"]
    prose = sum(len("".join(c["source"])) for c in cells if c["cell_type"] == "markdown")
    code = sum(len("".join(c["source"])) for c in cells if c["cell_type"] == "code")
    assert prose > 4 * code


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_outputs_carry_no_progress_bar_and_no_undated_label(path):
    """Opened before anything runs, a saved output must read sensibly: a frozen progress bar does
    not, nor a "measured now" label on a machine that is not measuring."""
    import nbformat
    from gemmlab.notebooks import strip_progress
    nb = nbformat.read(path, as_version=4)
    assert strip_progress(nb) == 0
    assert "measured now on" not in path.read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_kernel_is_named_as_jupyterlab_names_it(path):
    """JupyterLab renames a kernelspec it does not recognise on opening, and marks the notebook
    changed (seen in tests/test_browser.py's Chromium); ipykernel's name is 'Python 3 (ipykernel)'."""
    assert json.loads(path.read_text())["metadata"]["kernelspec"] == {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
