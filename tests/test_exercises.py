"""The exercises: every starter fails its check and every chapter's kernel passes it, without a GPU
(static checks) and on one (correctness and speed); planted bugs fail with a message that points at
them; the learner's copy lives in the workspace; the command line and the notebook cells work."""
import pytest

from gemmlab import exercises, registry
from gemmlab.__main__ import main

CHAPTERS = [spec.name for spec in exercises.chapters()]


@pytest.fixture(autouse=True)
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_WORKSPACE", str(tmp_path / "ws"))
    return tmp_path / "ws"


def test_every_kernel_chapter_has_an_exercise():
    assert CHAPTERS == list(registry.KERNELS), "every kernel chapter, in order"


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_starter_is_the_kernel_with_only_the_exercise_taken_out(name):
    spec = registry.get(name)
    kernel, starter = spec.path.read_text(), exercises.starter_text(spec)
    begin, end = kernel.index(exercises.BEGIN), kernel.index(exercises.END)
    assert starter.startswith(kernel[:begin]) and starter.endswith(kernel[end:]), "nothing outside the region changes"
    assert "TODO" in starter[begin:len(starter) - len(kernel) + end]
    assert exercises.solution_region(spec).strip() and exercises.solution_region(spec) not in starter


# Chapters 09-11's builds take seconds each where the compile cache is empty: theirs are the heavy tier's.
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow)
                                  if name.startswith(("09", "10", "11")) else name for name in CHAPTERS])
def test_the_starter_fails_and_the_solution_passes_the_static_checks(name):
    """The static checks alone (cpu=False; tests/test_cpu_check.py runs the CPU check): the solution fails
    none of them, yet it is not verified, and says what did not run."""
    starter = exercises.check(name, which="starter", gpu=False, cpu=False)
    assert not starter.passed and "TODO still in the code at line" in str(starter)
    solution = exercises.check(name, which="solution", gpu=False, cpu=False)
    assert not solution.failed and not solution.passed, str(solution)
    assert solution.summary == "NOT VERIFIED" and solution.exit_status == 3
    # a check that did not run says so, and is never an "ok" line
    assert [text.split(":")[0] for text in solution.not_run] == ["correctness", "speed"]
    assert "  not run: speed: not measured, it needs a GPU" in str(solution)
    assert not any("correct" in text for ok, text in solution.lines)


def _planted(name: str, old: str, new: str, tmp_path):
    """The chapter's kernel with one planted change inside the exercise region, as a learner's file."""
    spec = registry.get(name)
    region = exercises.solution_region(spec)
    assert old in region, f"{old!r} is not in {name}'s exercise"
    text = spec.path.read_text().replace(region, region.replace(old, new, 1))
    path = tmp_path / spec.path.name
    path.write_text(text)
    return path


def test_a_missing_barrier_is_named(tmp_path):
    path = _planted("02_smem_tiling", "__syncthreads();", "", tmp_path)
    verdict = exercises.check("02", path, gpu=False, cpu=False)
    assert not verdict.passed
    failed = [text for ok, text in verdict.lines if not ok]
    assert len(failed) == 1 and failed[0].startswith("1 BAR in the hot loop (the chapter's kernel has 2)")


@pytest.mark.parametrize("padding", ["TILE + 0", "TILE + 2"])
def test_a_wrong_bank_padding_is_named(padding, tmp_path):
    path = _planted("04_bank_conflicts", "TILE + 1", padding, tmp_path)
    verdict = exercises.check("04", path, gpu=False, cpu=False)
    failed = [text for ok, text in verdict.lines if not ok]
    assert len(failed) == 1 and "B of shared memory per block" in failed[0] and "one word per row" in failed[0]


def test_a_compile_error_names_the_learners_file_and_line(tmp_path):
    path = _planted("01_naive", "acc += A", "acc += A_", tmp_path)
    verdict = exercises.check("01", path, gpu=False, cpu=False)
    failed = [text for ok, text in verdict.lines if not ok]
    assert len(failed) == 1 and "does not compile" in failed[0]
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "A_[" in text)
    assert f"{path}({line})" in failed[0] and "A_" in failed[0]


class _Bar:
    def __init__(self, total, desc):
        self.total, self.desc, self.n = total, desc, 0

    def update(self, n=1):
        self.n += n


def test_one_bar_covers_a_check_from_its_compile_on(monkeypatch):
    """The compile and the SASS take seconds before any run: they are steps of the check's one bar, which a
    passing check fills; the CPU run moves the same bar on (no second one)."""
    import contextlib
    bars, handed = [], []

    @contextlib.contextmanager
    def recorded(total, desc, enabled=True):
        bars.append(_Bar(total, desc))
        yield bars[-1]

    monkeypatch.setattr(exercises, "transient", recorded)
    assert exercises.check("01", which="solution", gpu=False, cpu=False).lines[-1][0]
    assert [(b.desc, b.total, b.n) for b in bars] == [("checking", 2, 2)]
    monkeypatch.setattr(exercises.cpu_check, "on_cpu", lambda spec, full, path, verdict, bar: handed.append(bar))
    exercises.check("01", which="solution", gpu=False)
    assert bars[-1].desc == "checking on the CPU" and handed == [bars[-1]]
    spec = registry.KERNELS["01_naive"]
    assert bars[-1].total == 2 + exercises.cpu_check.steps(spec, spec.resolve(spec.exercise.params))
    assert bars[-1].n == 2, "the compile and the SASS, before the CPU run"


def test_the_learners_copy_is_made_once_and_kept(workspace):
    path = exercises.start("03")
    assert path.parent == workspace and path.read_text() == exercises.starter_text(registry.get("03"))
    path.write_text("my work")
    assert exercises.start("03").read_text() == "my work", "never overwritten"
    exercises.start("03", fresh=True)
    assert "TODO" in path.read_text()
    path.write_text("my second try")
    exercises.start("03", fresh=True)
    kept = exercises.attempts(registry.get("03"))
    assert [p.name for p in kept] == ["03_coalescing.attempt1.cu", "03_coalescing.attempt2.cu"]
    assert [p.read_text() for p in kept] == ["my work", "my second try"], "every attempt kept, oldest first"
    assert path.read_text() == exercises.starter_text(registry.get("03"))


def test_in_a_checkout_the_workspace_sits_beside_the_chapters(monkeypatch):
    """Where JupyterLab (serving notebooks/) and a chapter's relative link reach it."""
    monkeypatch.delenv("GEMMLAB_WORKSPACE")
    assert exercises.workspace() == registry.get("03").path.parent.parent / "notebooks" / "workspace"


def test_the_workspace_refuses_links_and_folders_others_may_write(workspace, tmp_path):
    from gemmlab.files import UnusableDirectory
    outside = tmp_path / "outside.cu"
    outside.write_text("not yours")
    workspace.mkdir()
    (workspace / "03_coalescing.cu").symlink_to(outside)
    with pytest.raises(UnusableDirectory, match="symbolic link"):
        exercises.start("03")
    assert outside.read_text() == "not yours", "nothing written through the link"
    (workspace / "03_coalescing.cu").unlink()
    workspace.chmod(0o777)
    with pytest.raises(UnusableDirectory, match="can be written by other users"):
        exercises.start("03")
    workspace.chmod(0o700)
    assert exercises.start("03").exists()


def test_the_exercise_cell_links_the_copy_relative_to_the_notebook(workspace, monkeypatch, capsys):
    """No absolute path in what a saved notebook keeps; the link is one JupyterLab resolves from the
    notebook's folder; starting over is offered and earlier attempts are named."""
    import gemmlab.lessons as gl
    monkeypatch.chdir(workspace.parent)
    gl.exercise("04")
    gl.exercise("04", fresh=True)
    out = capsys.readouterr().out
    assert "(ws/04_bank_conflicts.cu)" in out and str(workspace.parent) not in out
    assert 'gl.exercise("04", fresh=True)' in out and "`04_bank_conflicts.attempt1.cu`" in out


def test_the_command_line_starts_over_and_keeps_the_old_copy(workspace, capsys):
    assert main(["check", "04", "--start"]) == 0
    (workspace / "04_bank_conflicts.cu").write_text("mine")
    assert main(["check", "04", "--fresh"]) == 0
    out = capsys.readouterr().out
    assert "04_bank_conflicts.attempt1.cu" in out and (workspace / "04_bank_conflicts.attempt1.cu").read_text() == "mine"


@pytest.mark.alone       # it times the solution against the chapter's kernel: the GPU to itself
def test_the_command_line_checks_with_exit_status(capsys):
    assert main(["check", "03", "--solution"]) == 0
    assert main(["check", "03", "--starter"]) == 1
    assert "TODO still in the code" in capsys.readouterr().out
    assert main(["check", "03"]) == 1, "no copy yet"
    assert "makes your copy of the starter" in capsys.readouterr().out
    assert main(["check", "03", "--start"]) == 0
    assert main(["check", "99"]) == 2


def test_the_notebook_cells_show_the_task_hints_solution_and_progress(capsys):
    import gemmlab.lessons as gl
    gl.exercise("05")
    gl.hint("05")
    gl.hint("05")
    gl.solution("05")
    gl.check("05")
    import gemmlab.library.lessons as gl14
    gl14.progress()
    gl.check("no-such-chapter")
    out = capsys.readouterr().out
    assert "Your turn" in out and "hint 1 of 3" in out and "hint 2 of 3" in out
    assert "+" in out and "acc[i][j] += a[i] * b[j]" in out, "the solution is a diff to the kernel's lines"
    assert "FAIL" in out and "not started" in out and "no kernel 'no-such-chapter'" in out
    assert "14 · One plan per shape" in out, "the progress table counts chapter 14's exercise too"


@pytest.mark.gpu
@pytest.mark.alone
@pytest.mark.parametrize("name", CHAPTERS)
def test_on_a_gpu_the_solution_passes_correctness_and_speed(name):
    starter = exercises.check(name, which="starter")
    assert not starter.passed
    solution = exercises.check(name, which="solution")
    assert solution.passed, str(solution)
    assert solution.gpu and solution.tflops and solution.cublas_tflops


@pytest.mark.gpu
def test_an_off_by_one_edge_predicate_fails_at_the_edges_only(tmp_path):
    path = _planted("02_smem_tiling", "(ar < M && ak < K)", "(ar < M - 1 && ak < K)", tmp_path)
    verdict = exercises.check("02", path)
    failed = [text for ok, text in verdict.lines if not ok]
    assert len(failed) == 1 and "edge predicates" in failed[0] and "509x515x130" in failed[0]
    assert "in row 508 (the last) and every column" in failed[0], "the wrong elements are located"


def test_where_the_wrong_elements_lie_is_said_in_words():
    """A wrong result's pattern in C (the last row, a band of columns) is what points at its cause."""
    import numpy as np
    from gemmlab.bench import span
    assert span(np.array([508]), 509, "row") == ("row 508 (the last)", True)
    assert span(np.array([496, 497, 498]), 499, "row") == ("rows 496-498 (the last 3)", True)
    assert span(np.arange(515), 515, "column") == ("every column", False)
    assert span(np.array([3, 9]), 515, "column") == ("2 columns between 3 and 9", False)
    assert span(np.array([0]), 64, "row") == ("row 0", False)

    class Wrong:
        where, at_edge = "515 of 262,135 elements wrong, in row 508 (the last) and every column", True
    text = exercises._wrong_shapes_message(["509x515x130", "1x1x1"], [], "509x515x130", Wrong())
    assert text.startswith("wrong results at 509x515x130, 1x1x1; at 509x515x130: 515 of")
    assert "edge predicates" in text
    Wrong.at_edge = False
    assert "edge predicates" not in exercises._wrong_shapes_message(["1x1x1"], [], "1x1x1", Wrong())
    # right only where K is 1 (a sum of one product) says nothing about the edges; right at a longer K does
    Wrong.where = "17,943 of 17,947 elements wrong, in every row and every column"
    wrong_sum = exercises._wrong_shapes_message(["131x137x263"], ["1x1x1"], "131x137x263", Wrong(), summed=False)
    assert "edge predicates" not in wrong_sum and "right at 1x1x1" in wrong_sum
    assert "edge predicates" in exercises._wrong_shapes_message(["131x137x263"], ["64x80x72"], "131x137x263", Wrong(),
                                                               summed=True)


def test_a_fault_is_named_in_words():
    from gemmlab import device
    assert "outside A, B, C" in device.cuda_error_words(
        Exception("cudaErrorIllegalAddress: an illegal memory access was encountered"))
    assert "not a multiple of its width" in device.cuda_error_words(
        Exception("CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address"))
    assert device.cuda_error_words(Exception("something else")) == "something else"


class _Facts:
    name = "a test GPU"


@pytest.mark.parametrize("outcome", ["hang", "crash", "result"])
def test_the_gpu_half_runs_apart_and_survives_a_hang_or_a_crash(outcome, monkeypatch):
    """A kernel that never ends or faults cannot take the checker's process down: the GPU half runs
    in a child process, and its fate becomes a verdict line."""
    import json
    import subprocess
    from gemmlab import device

    real_run = subprocess.run

    def fake_run(cmd, **kw):
        if cmd[-1] != "--gpu-part":                        # nvdisasm, for the static checks
            return real_run(cmd, **kw)
        assert kw["timeout"] == exercises.GPU_TIMEOUT_S
        if outcome == "hang":
            raise subprocess.TimeoutExpired(cmd, kw["timeout"])
        if outcome == "crash":
            return subprocess.CompletedProcess(cmd, 1, "", "cupy.cuda.driver.CUDADriverError: "
                                                            "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access")
        part = {"gpu": "a test GPU", "lines": [[True, "correct at 6 shapes"], [True, "40.0 TFLOP/s"]],
                "tflops": 40.0, "solution_tflops": 41.0, "cublas_tflops": 50.0}
        return subprocess.CompletedProcess(cmd, 0, "progress...\n" + json.dumps(part) + "\n", "")
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(device, "facts", lambda: _Facts())
    verdict = exercises.check("03", which="solution", gpu=True)
    text = str(verdict)
    if outcome == "hang":
        assert not verdict.passed and "did not finish within" in text
    elif outcome == "crash":
        assert not verdict.passed and "ILLEGAL_ADDRESS" in text and "compute-sanitizer" in text
    else:
        assert verdict.passed and verdict.summary == "PASS on a test GPU" and verdict.tflops == 40.0


@pytest.mark.gpu
def test_a_warp_tile_index_mistake_shows_only_on_the_gpu(tmp_path):
    """08's lane-to-patch mapping transposed: the SASS has the same instructions, so the static checks
    pass; the GPU check finds it: wrong results, or a fault (lanes then reach past their warp's tile)
    named with the shape it happened at."""
    path = _planted("08_warp_tiling", "lr = lane / (WSUBN / TN), lc = lane % (WSUBN / TN)",
                    "lr = lane % (WSUBN / TN), lc = lane / (WSUBN / TN)", tmp_path)
    assert not exercises.check("08", path, gpu=False, cpu=False).failed, "nothing a static check can see"
    verdict = exercises.check("08", path)
    failed = [text for ok, text in verdict.lines if not ok]
    assert len(failed) == 1 and failed[0].startswith(("wrong results at", "your kernel crashed at"))


@pytest.mark.gpu
def test_a_shuffle_that_stops_one_level_early_shows_only_on_the_gpu(tmp_path):
    """12's butterfly stopping before STRIDE (offset > STRIDE): the partial sums of two k-lanes are never
    added, the SASS still shuffles, and only the GPU check finds the wrong results."""
    path = _planted("12_skinny", "offset >= STRIDE", "offset > STRIDE", tmp_path)
    assert not exercises.check("12", path, gpu=False, cpu=False).failed, "nothing a static check can see"
    verdict = exercises.check("12", path)
    failed = [text for ok, text in verdict.lines if not ok]
    assert len(failed) == 1 and failed[0].startswith("wrong results at")
