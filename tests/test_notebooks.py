"""The notebooks stay thin: prose, and code cells that are one call into gemmlab each."""
import ast
import importlib
import re
import json
from pathlib import Path

import pytest

from gemmlab import lessons, registry
from gemmlab.research.notebooks import SETUP

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_is_a_notebook_per_chapter():
    chapters = {int(p.name[:2]) for p in NOTEBOOKS}
    assert {spec.chapter for spec in registry.KERNELS.values()} | {0} <= chapters


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_cells_are_single_gemmlab_calls(path):
    """...but the first, the hosted-platform setup (notebooks.SETUP, the same in every chapter)."""
    cells = json.loads(path.read_text())["cells"]
    imported = {"gl": lessons}
    for cell in cells:
        source = "".join(cell["source"])
        assert "__global__" not in source, "notebooks display kernel files, they never copy them"
        if cell["cell_type"] != "code" or source == SETUP.rstrip("\n"):
            continue
        tree = ast.parse(source)
        assert len(tree.body) == 1, f"one statement per code cell: {source!r}"
        stmt = tree.body[0]
        if isinstance(stmt, ast.Import):
            # the course's lessons as gl, or the library's own (chapter 14: the course never imports the library): as
            # gl where a chapter calls nothing else, else under a name of its own, so that gl keeps the course's lessons
            # for the chapter's earlier cells, run again after it (chapter 15: gl14)
            name, alias = stmt.names[0].name, stmt.names[0].asname
            assert (name, alias) in (("gemmlab.lessons", "gl"), ("gemmlab.library.lessons", "gl"),
                                     ("gemmlab.library.lessons", "gl14")), source
            assert alias != "gl" or name == "gemmlab.lessons" or path.name.startswith("14_"), \
                "gl is the course's lessons wherever a chapter calls them: the library's go by gl14"
            imported[alias] = importlib.import_module(name)
            continue
        assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call), source
        func = stmt.value.func
        assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in imported, source
        module = imported[func.value.id]
        assert hasattr(module, func.attr), f"{module.__name__} has no {func.attr}()"


# A chapter is a lesson a learner reads in one sitting: at most this many words of prose.
MAX_WORDS = 1600


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_chapter_is_at_most_1600_words_of_prose(path):
    """Words of the markdown cells, the hidden markers (figures, claims) not counted."""
    cells = json.loads(path.read_text())["cells"]
    prose = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert len(re.sub(r"<!--.*?-->", " ", prose, flags=re.S).split()) <= MAX_WORDS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_mostly_prose(path):
    cells = json.loads(path.read_text())["cells"]
    prose = sum(len("".join(c["source"])) for c in cells if c["cell_type"] == "markdown")
    code = sum(len("".join(c["source"])) for c in cells
               if c["cell_type"] == "code" and "".join(c["source"]) != SETUP.rstrip("\n"))
    assert prose > 4 * code


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_outputs_carry_no_progress_bar_and_no_undated_label(path):
    """Opened before anything runs, a saved output must read sensibly: a frozen progress bar does
    not, nor a "measured now" label on a machine that is not measuring."""
    import nbformat
    from gemmlab.research.notebooks import strip_progress
    nb = nbformat.read(path, as_version=4)
    assert strip_progress(nb) == 0
    assert "measured now on" not in path.read_text()


def test_a_progress_bar_is_told_from_a_cells_output_and_nbval_compares_without_it():
    """A cell that compiles shows tqdm's bar only while something is left to build: a chapter run with an empty
    compile cache has outputs a warm run lacks. nbval (through the checkout's conftest.py) compares both without."""
    from nbformat.v4 import new_output
    from nbval.plugin import IPyNbCell
    from gemmlab.research.notebooks import is_progress
    widget = new_output("display_data", {"text/plain": "compile:   0%|          | 0/4 [00:00<?, ?it/s]",
                                         "application/vnd.jupyter.widget-view+json": {"model_id": "x"}})
    text = new_output("stream", name="stderr", text="compile: 100%|##########| 4/4 [00:06<00:00,  1.6s/it]\n")
    table = new_output("display_data", {"text/plain": "<IPython.core.display.Markdown object>",
                                        "text/markdown": "| step | TFLOP/s |\n|---|---|\n| 1 | 50% |"})
    from gemmlab.progress import SPENT
    spent = new_output("display_data", dict(SPENT))              # a bar's display once its wait is over
    assert is_progress(widget) and is_progress(text) and is_progress(spent) and not is_progress(table)
    assert getattr(IPyNbCell.compare_outputs, "drops_progress", False), "conftest.py wraps nbval's comparison"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_kernel_is_named_as_jupyterlab_names_it(path):
    """JupyterLab renames a kernelspec it does not recognise on opening, and marks the notebook
    changed (seen in tests/test_browser.py's Chromium); ipykernel's name is 'Python 3 (ipykernel)'."""
    assert json.loads(path.read_text())["metadata"]["kernelspec"] == {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_first_code_cell_is_the_hosted_setup(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert "".join(cells[0]["source"]) == SETUP.rstrip("\n"), "python -m gemmlab.research.notebooks setup rewrites it"
    assert not cells[0]["outputs"], "it prints nothing where gemmlab is installed"
    assert "".join(cells[1]["source"]) in ("import gemmlab.lessons as gl", "import gemmlab.library.lessons as gl")


class _Ran:
    def __init__(self):
        self.commands = []

    def __call__(self, cmd, **kw):
        import subprocess
        self.commands.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "| NVIDIA-SMI 550.54  Driver Version: 550.54  CUDA Version: 12.4 |", "")


def _run_setup(monkeypatch, tmp_path, platform: str, installed: bool, checkout: bool, gpu: bool = True) -> _Ran:
    """SETUP executed as a notebook would, on a pretend platform, with subprocess.run recorded."""
    import importlib.util
    import shutil
    import subprocess
    import sys
    import types
    real_find_spec = importlib.util.find_spec
    absent = set() if installed else {"gemmlab"}
    # Colab ships CuPy; the pretend Kaggle here has none
    absent |= {"cupy"} if platform == "kaggle" else set()
    present = {"cupy"} if platform == "colab" else set()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
        None if name in absent else object() if name in present else real_find_spec(name, *a)))
    monkeypatch.delenv("KAGGLE_KERNEL_RUN_TYPE", raising=False)
    if platform == "colab":
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    elif platform == "kaggle":
        monkeypatch.setenv("KAGGLE_KERNEL_RUN_TYPE", "Interactive")
    notebooks = tmp_path / "course" / "notebooks"
    notebooks.mkdir(parents=True)
    if checkout:
        (tmp_path / "course" / "pyproject.toml").write_text("[project]\nname = 'gemmlab'\n")
    monkeypatch.chdir(notebooks)
    ran = _Ran()
    monkeypatch.setattr(subprocess, "run", ran)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}" if gpu else None)
    monkeypatch.setattr(sys, "path", list(sys.path))
    exec(SETUP, {})
    return ran


@pytest.mark.parametrize("platform", ["laptop", "colab", "kaggle"])
def test_the_setup_does_nothing_where_gemmlab_is_installed_or_off_the_hosted_platforms(platform, monkeypatch, tmp_path):
    assert _run_setup(monkeypatch, tmp_path, platform, installed=True, checkout=True).commands == []
    if platform == "laptop":
        assert _run_setup(monkeypatch, tmp_path / "b", platform, installed=False, checkout=True).commands == []


@pytest.mark.parametrize("platform", ["colab", "kaggle"])
def test_on_a_hosted_platform_the_setup_installs_the_checkout_for_the_drivers_cuda(platform, monkeypatch, tmp_path):
    import sys
    ran = _run_setup(monkeypatch, tmp_path, platform, installed=False, checkout=True)
    nvidia_smi, pip = ran.commands
    assert nvidia_smi == ["nvidia-smi"]
    # a CUDA 12.4 driver: the CUDA 12 toolchain; CuPy only where the platform has none (here: "kaggle")
    extras = "cuda12,gpu12" if platform == "kaggle" else "cuda12"
    assert pip == [sys.executable, "-m", "pip", "install", "-q", "-e", f"..[{extras}]"]
    assert sys.path[0] == str(tmp_path / "course"), "importable in this session already"


def test_on_a_hosted_platform_with_no_checkout_the_setup_says_how_to_get_one(monkeypatch, tmp_path):
    with pytest.raises(SystemExit, match="git clone"):
        _run_setup(monkeypatch, tmp_path, "colab", installed=False, checkout=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_widgets_read_as_a_sentence_where_they_are_not_drawn(path):
    """JupyterLab draws saved widgets only in a notebook it trusts; elsewhere it shows their plain
    text, which must say what the widget is, not `VBox(children=(...))`."""
    for cell in json.loads(path.read_text())["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                text = "".join(data["text/plain"])
                assert text.startswith("[") and "run this cell" in text and "children=" not in text, text


def test_on_a_hosted_runtime_with_no_gpu_the_setup_installs_the_compile_only_toolchain(monkeypatch, tmp_path):
    import sys
    ran = _run_setup(monkeypatch, tmp_path, "kaggle", installed=False, checkout=True, gpu=False)
    assert ran.commands == [[sys.executable, "-m", "pip", "install", "-q", "-e", "..[cuda13]"]], "no nvidia-smi, no CuPy"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_cells_whose_output_depends_on_the_machine_are_not_compared(path):
    """nbval compares saved outputs; the exercise cells print the checkout's workspace path and the
    widgets redraw on every run, so their cells carry nbval-ignore-output."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith(("gl.exercise(", "gl.check(", "gl.show_explorer(",
                                                               "gl.show_plan_explorer(")):
            assert "nbval-ignore-output" in cell["metadata"].get("tags", []), f"{path.name}: {source}"


# An absolute path: /a/b... not inside a word, a URL or a relative path (TFLOP/s, https://x/y, ../a/b), or a
# Windows drive path.
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~\-\]])/(?:[\w.+\-]+/)+[\w.+\-]*|\b[A-Za-z]:\\[\w.\\\-]+")


def _output_texts(output: dict):
    if "text" in output:
        yield "".join(output["text"])
    for mime, value in output.get("data", {}).items():
        if mime.startswith("text/") or mime.endswith("json"):
            yield "".join(value) if isinstance(value, list) else value if isinstance(value, str) else json.dumps(value)
    yield from output.get("traceback", [])


def test_the_absolute_path_pattern_finds_paths_and_only_paths():
    found = [ABSOLUTE_PATH.search(t) is not None for t in (
        "FAIL: 06 exercise, /home/ana/gemmlab/notebooks/workspace/06.cu", "(`/work/main/workspace`)",
        "C:\\Users\\ana\\gemmlab", "51.6 TFLOP/s", "https://jupyter.org/a/b", "workspace/06.cu", "../workspace/06.cu",
        "~/gemmlab-workspace/06.cu", "$T/\\text{OUTPUTS}$", "1/4 of the tile")]
    assert found == [True, True, True, False, False, False, False, False, False, False]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_outputs_hold_no_absolute_path_of_the_machine_they_were_made_on(path):
    """A learner's clone shows the author's folders nowhere (the exercise and check cells print paths
    relative to the notebook's folder)."""
    nb = json.loads(path.read_text())
    for n, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            for text in _output_texts(output):
                hit = ABSOLUTE_PATH.search(text)
                assert hit is None, f"{path.name} cell {n}: {text[max(0, hit.start() - 40):hit.end() + 10]!r}"


def test_a_notebook_is_executed_against_an_empty_workspace_and_the_learners_copies_come_back(tmp_path, monkeypatch):
    """A saved check's output must be what a learner's first run prints, not what an old copy of a starter in the
    executing checkout's workspace printed; and that copy is set aside, not lost."""
    from gemmlab.research import notebooks as runner
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "12_skinny.cu").write_text("a learner's own attempt")
    monkeypatch.setenv("GEMMLAB_WORKSPACE", str(folder))
    with runner._fresh_workspace():
        assert not folder.exists()
        folder.mkdir()
        (folder / "12_skinny.cu").write_text("the starter, copied by the notebook's run")
    assert (folder / "12_skinny.cu").read_text() == "a learner's own attempt"
    assert [p.name for p in tmp_path.iterdir()] == ["workspace"]


def test_a_bar_is_displayed_with_an_id_to_empty_it_by_under_ipywidgets_7_and_8():
    """ipywidgets 7 displays a widget itself (_ipython_display_), and that display has no id: a bar shown that way
    stayed in the cell, frozen, after the work (the browser test of the learner's loop saw it under ipywidgets 7)."""
    from gemmlab import progress

    class Seven:                    # what ipywidgets 7's widgets have: a model id, no mimebundle of their own
        model_id = "m7"

        def __repr__(self):
            return "HBox()"
    bundle = progress._bundle(Seven())
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == "m7" and bundle["text/plain"] == "HBox()"

    class Eight(Seven):
        def _repr_mimebundle_(self, **kwargs):
            return {"text/plain": "HBox()", "application/vnd.jupyter.widget-view+json": {"model_id": "m8"}}
    assert progress._bundle(Eight())["application/vnd.jupyter.widget-view+json"]["model_id"] == "m8"
