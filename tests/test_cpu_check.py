"""The check without a GPU: the learner's CUDA file compiled for the CPU (gemmlab/cpu) and run with CUDA's
semantics, then validated against float64. What the runner does with races, shuffles, misaligned and
out-of-bounds accesses, barriers, cp.async and waits (a kernel of twists, tests/data/cpu_semantics.cu);
how a verdict reads. Every chapter's kernel at its extreme configurations, and the planted bugs, are the heavy
tier's (test_cpu_check_configs.py, test_cpu_planted_bugs.py)."""
from pathlib import Path

import pytest

from gemmlab import cpu, exercises, registry
from gemmlab.spec import Problem

import sys
sys.path.insert(0, str(Path(__file__).resolve().parent))

HERE = Path(__file__).resolve().parent
TWISTS = HERE / "data" / "cpu_semantics.cu"
SHAPE = Problem(67, 13, 9)           # 3 block rows, 4 block columns of chapter 01's 32 x 4 blocks


def _run(mode: int, problem: Problem = SHAPE):
    spec = registry.get("01")
    params = spec.resolve({})
    program = cpu.build(spec, {**params, "MODE": mode}, TWISTS)
    return cpu.run(program, spec, params, problem, 1, TWISTS, TWISTS.name)


def test_a_right_kernel_is_right_in_both_orders():
    assert _run(0) == {"forward": None, "reverse": None}
    assert _run(10) == {"forward": None, "reverse": None}, "a value through a neighbour, with barriers"
    assert _run(9) == {"forward": None, "reverse": None}, "shuffles there and back"


def test_a_missing_barrier_gives_a_wrong_answer_not_a_lucky_one():
    outcome = _run(1)
    assert all(isinstance(r, cpu.Wrong) for r in outcome.values()), outcome
    wrong = outcome["forward"]
    assert (wrong.row, wrong.col) == (0, 0) and "elements wrong" in wrong.where


def test_a_shuffle_mask_that_leaves_the_lane_out_is_named_with_thread_block_and_line():
    fault = _run(2)["forward"]
    assert isinstance(fault, cpu.Fault) and "leaves itself out" in fault.what
    line = _line("MODE == 2") + 1
    assert fault.where == f"thread (16, 0, 0) of block (0, 0, 0), {TWISTS.name} line {line}"


def test_a_misaligned_vector_load_is_an_error_as_on_the_gpu():
    fault = _run(3)["forward"]
    assert isinstance(fault, cpu.Fault) and "misaligned address" in fault.what and "float4" in fault.what
    assert fault.where.endswith(f"{TWISTS.name} line {_line('MODE == 3') + 1}")
    assert "thread (0, 0, 0) of block (0, 0, 0)" in fault.where


def test_a_read_past_a_is_named_with_thread_block_and_line():
    fault = _run(4)["forward"]
    assert isinstance(fault, cpu.Fault) and fault.what == "read of 4 bytes outside A, B or C"
    assert fault.where == f"thread (0, 0, 0) of block (0, 0, 0), {TWISTS.name} line {_line('MODE == 4') + 1}"


def test_threads_at_two_different_barriers_are_an_error():
    fault = _run(5)["forward"]
    assert isinstance(fault, cpu.Fault) and "different barriers" in fault.what


def test_a_cp_async_copy_lands_at_its_wait_and_not_before():
    before = _run(6)["forward"]
    assert isinstance(before, cpu.Wrong), "read before the wait: the shared memory still holds what it held"
    assert _run(7) == {"forward": None, "reverse": None}


def test_a_wait_that_never_ends_is_an_error_not_a_hang():
    fault = _run(8, Problem(1, 1, 1))["forward"]
    assert isinstance(fault, cpu.Fault) and "never ends" in fault.what and f"line {_line('MODE == 8') + 1}" in fault.where


def _line(marker: str) -> int:
    return next(n for n, text in enumerate(TWISTS.read_text().splitlines(), 1) if marker in text)


# --- the verdict ----------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_WORKSPACE", str(tmp_path / "ws"))
    return tmp_path / "ws"


def _planted(chapter: str, old: str, new: str, folder: Path) -> Path:
    from planted_bugs import planted
    return planted(chapter, old, new, folder)


def test_without_a_gpu_the_solution_passes_on_the_cpu_and_speed_is_not_measured():
    verdict = exercises.check("02", which="solution", gpu=False)
    assert verdict.passed and verdict.on_cpu and verdict.summary == "PASS on the CPU", str(verdict)
    assert any(ok and text.startswith("correct on the CPU at 5 shapes") for ok, text in verdict.lines)
    assert [t.split(":")[0] for t in verdict.not_run] == ["speed"]
    assert "not run: speed: not measured, it needs a GPU" in str(verdict)


def test_an_off_by_one_names_the_first_wrong_element(tmp_path):
    verdict = exercises.check("02", _planted("02", "ak = k0 + c;", "ak = k0 + c + 1;", tmp_path), gpu=False)
    failed = [text for ok, text in verdict.lines if not ok]
    assert len(failed) == 1 and failed[0].startswith("wrong results on the CPU at 131 x 137 x 263")
    assert "C[0, 0] is " in failed[0] and ", expected " in failed[0]
    assert verdict.summary == "FAIL" and verdict.exit_status == 1


def test_a_number_that_holds_only_for_the_exercises_tunables_fails(tmp_path):
    verdict = exercises.check("04", _planted("04", "TILE + 1 : TILE", "33 : TILE", tmp_path), gpu=False)
    failed = [text for ok, text in verdict.lines if not ok]
    assert len(failed) == 1 and failed[0].startswith("wrong at TILE=64"), failed


def test_with_no_compiler_the_check_is_not_verified_and_never_passes(monkeypatch, capsys):
    def none():
        raise cpu.NoCompiler("no C++ compiler here (g++ or clang++, or `pip install ziglang`)")
    monkeypatch.setattr(cpu, "compiler", none)
    verdict = exercises.check("02", which="solution", gpu=False)
    assert not verdict.passed and verdict.summary == "NOT VERIFIED" and verdict.exit_status == 3
    assert "not run: correctness: no C++ compiler here" in str(verdict)
    from gemmlab import device
    from gemmlab.__main__ import main
    monkeypatch.setattr(device, "available", lambda: False)     # the command line, as on a machine with no GPU
    assert main(["check", "02", "--solution"]) == 3
    assert capsys.readouterr().out.startswith("NOT VERIFIED")


# --- the runner's build ---------------------------------------------------------------------------

def test_the_runtime_is_compiled_once_for_every_kernels_runner(tmp_path, monkeypatch):
    """A runner compiles the kernel and links the runtime's object, which is compiled once (by its code and
    the compiler) for every kernel; a changed runtime is compiled anew."""
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path / "cache"))
    compiles = []
    real = cpu.subprocess.run

    def run(argv, *args, **kwargs):
        compiles.extend(Path(a).name for a in argv if a.endswith(".cpp"))
        return real(argv, *args, **kwargs)
    monkeypatch.setattr(cpu.subprocess, "run", run)
    for name in ("01", "02"):
        spec = registry.get(name)
        cpu.build(spec, spec.resolve({}))
    assert compiles.count("runtime.cpp") == 1 and len(list((tmp_path / "cache").rglob("runtime.o"))) == 1
    assert _run(0) == {"forward": None, "reverse": None}, "a runner linked to the kept object runs"
    changed = tmp_path / "runtime.cpp"
    changed.write_text(cpu.RUNTIME[1].read_text() + "\n// changed\n")
    monkeypatch.setattr(cpu, "RUNTIME", (cpu.RUNTIME[0], changed))

    def pretend(argv, *args, **kwargs):          # the compile asked for, not made (the key is what is tested)
        compiles.extend(Path(a).name for a in argv if a.endswith(".cpp"))
        Path(argv[argv.index("-o") + 1]).write_bytes(b"")
        return cpu.subprocess.CompletedProcess(argv, 0, "", "")
    monkeypatch.setattr(cpu.subprocess, "run", pretend)
    cpu._runtime_object(cpu.compiler(), [*cpu.FLAGS, *cpu.sanitizers(tuple(cpu.compiler()))])
    assert compiles.count("runtime.cpp") == 2 and len(list((tmp_path / "cache").rglob("runtime.o"))) == 2
