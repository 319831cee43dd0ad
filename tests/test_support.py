"""Chapter 00's cross-architecture table ships precomputed (gemmlab/precomputed/support.json): it
holds for the kernels' code as they are, covers every kernel and architecture, and is read without
compiling; a kernel changed since is compiled now and said so. The slow test compiles it all anew
and finds the shipped table. No GPU needed."""
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import pytest

from gemmlab import __main__ as cli, arch, records, registry, support, toolchain
from gemmlab.lessons import chapter00
from gemmlab.spec import IllegalConfig

ROOT = Path(__file__).resolve().parent.parent
FIX = f"write it anew: {support.REGENERATE}"


@pytest.fixture
def no_compiling(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled, where the shipped table holds")
    monkeypatch.setattr(support, "compile_kernel", refuse)
    monkeypatch.setattr(support, "precompile", refuse)


def _shipped_with(tmp_path, monkeypatch, change) -> dict:
    """A copy of the shipped table, changed by `change(data)`, read in its place; the original."""
    original = json.loads(support.PRECOMPUTED.read_text())
    data = json.loads(support.PRECOMPUTED.read_text())
    change(data)
    path = tmp_path / "support.json"
    path.write_text(json.dumps(data))
    monkeypatch.setattr(support, "PRECOMPUTED", path)
    return original


def test_the_shipped_table_holds_for_the_kernels_code_and_covers_every_kernel_and_architecture():
    data = support.shipped()
    assert data is not None, FIX
    assert list(data["kernels"]) == list(registry.KERNELS), FIX
    for name, made in data["kernels"].items():
        assert made == support.made_from(name), f"{name} changed since the table was compiled; {FIX}"
    assert list(data["archs"]) == list(arch.ARCHS), FIX
    every = [(k, a) for k in registry.KERNELS for a in arch.ARCHS]
    assert [(c.kernel, c.arch) for c in data["cells"]] == every, FIX
    assert set(support.current(data)) == set(every)


def test_its_refusals_are_the_rules_as_they_are_now():
    """The rules are checked before compiling, so they are checked here at no cost."""
    for cell in support.shipped()["cells"]:
        spec = registry.get(cell.kernel)
        try:
            spec.check_arch(spec.resolve(None), arch.get(cell.arch))
            assert cell.runs and "regs" in cell.text, (cell, FIX)
        except IllegalConfig as exc:
            assert (cell.runs, cell.text) == (False, f"refused: {exc.rule}"), (cell, FIX)
            assert cell.detail in str(exc), (cell, FIX)


def test_chapter_00_reads_it_without_compiling(no_compiling, monkeypatch):
    shown = []
    monkeypatch.setattr(chapter00, "markdown", shown.append)
    chapter00.show_architectures()
    text, = shown
    data = support.shipped()
    assert f"Precomputed with NVRTC {data['nvrtc']} for this code" in text and support.REGENERATE in text
    assert "compiled now" not in text.lower()
    for cell in data["cells"]:
        assert f"| {cell.text} |" in text
    assert str(ROOT) not in text, "no path of this machine in the notebook's output"


def test_the_command_line_prints_it_without_compiling(no_compiling, capsys):
    assert cli.main(["archs", "09", "--arch", "sm_75", "--arch", "sm_90"]) == 0
    out = capsys.readouterr().out
    assert "refused: cp-async" in out and "regs, 1/SM" in out and "Precomputed with NVRTC" in out


def test_write_takes_no_selection(capsys):
    assert cli.main(["archs", "01", "--write"]) == 2
    assert "--write compiles the whole table" in capsys.readouterr().err


def test_a_kernel_changed_since_is_compiled_now_with_a_progress_bar_and_said_so(tmp_path, monkeypatch, capsys):
    def edit(data):
        data["kernels"]["01_naive"]["source"] = "0" * 16      # as if 01_naive.cu had been edited since
    original = _shipped_with(tmp_path, monkeypatch, edit)
    found = support.table(["01", "02"], ["sm_90"], progress=True)
    assert found.compiled == ["01_naive"]
    note = found.note()
    assert note.startswith(f"Compiled now with NVRTC {toolchain.nvrtc_build()}: 01_naive, changed")
    assert f"the rest precomputed with NVRTC {original['nvrtc']} for this code" in note
    assert "compile" in capsys.readouterr().err, "a progress bar while it compiles"
    if toolchain.nvrtc_build() == original["nvrtc"]:     # the code did not really change
        assert asdict(found.rows[0][0]) == original["cells"][list(arch.ARCHS).index("sm_90")]


def test_a_damaged_table_is_said_and_every_cell_compiled(tmp_path, monkeypatch, capsys):
    def damage(data):
        del data["cells"]
    _shipped_with(tmp_path, monkeypatch, damage)
    found = support.table(["01"], ["sm_90"])
    assert found.nvrtc is None and found.note() == f"Compiled now with NVRTC {toolchain.nvrtc_build()}."
    assert "is unusable" in capsys.readouterr().err


def test_it_ships_in_the_package_and_is_no_gpu_record():
    try:
        import tomllib
    except ImportError:       # Python 3.10
        import tomli as tomllib
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    where = support.PRECOMPUTED.relative_to(ROOT / "gemmlab").as_posix()
    assert any(fnmatch.fnmatch(where, pattern) for pattern in package_data["gemmlab"])
    assert support.PRECOMPUTED not in [r.path for r in records.load_all()]


@pytest.mark.slow
def test_compiled_anew_the_whole_table_is_the_shipped_one():
    """Minutes: every kernel for every architecture, into this session's fresh compile cache."""
    shipped, fresh = support.shipped(), support.compute()
    assert (fresh["kernels"], fresh["archs"]) == (shipped["kernels"], shipped["archs"]), FIX
    now = [support.Cell(**c) for c in fresh["cells"]]
    same = fresh["nvrtc"] == shipped["nvrtc"]
    # another NVRTC (make test-cuda12) allocates registers its own way: there the same cells run or are refused
    differ = [(old, new) for old, new in zip(shipped["cells"], now)
              if (old if same else (old.runs, old.detail)) != (new if same else (new.runs, new.detail))]
    # ptxas in a long test session now and then allocates a few more registers than a process of its own does
    # (docs/toolchain.md): a cell that differs is compiled once more in a fresh process, and must match there
    differ = [(old, again) for old, new in differ
              if (again := _cell_alone(new.kernel, new.arch)) != old or not same]
    assert len(now) == len(shipped["cells"]) and not differ, f"{len(differ)} cells differ, first {differ[:3]}; {FIX}"


def _cell_alone(kernel: str, arch: str) -> support.Cell:
    """One cell of the table compiled by a fresh Python process, into a compile cache of its own."""
    code = ("import json, sys; from dataclasses import asdict; from gemmlab import support; "
            "print(json.dumps(asdict(support.cells([(sys.argv[1], sys.argv[2])])[0])))")
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run([sys.executable, "-c", code, kernel, arch], capture_output=True, text=True, check=True,
                              env={**os.environ, "GEMMLAB_CACHE": cache})
    return support.Cell(**json.loads(done.stdout.strip().splitlines()[-1]))
