"""The command line, as a reader types it."""
import contextlib
import io
import re
import subprocess
import sys

import pytest

from gemmlab import device
from gemmlab.__main__ import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "gemmlab", *args], capture_output=True, text=True)


def test_info_names_the_gpu_or_says_there_is_none():
    out = run("info")
    assert out.returncode == 0, out.stderr
    assert "NVRTC: " in out.stdout and "nvdisasm: " in out.stdout
    first = out.stdout.splitlines()[0]
    assert first.startswith("GPU: ") and (("no GPU" in first) != device.available())


def test_compile_prints_the_resource_report():
    out = run("compile", "03", "--arch", "sm_80", "-D", "TILE=16", "-D", "OUTPUTS=2")
    assert out.returncode == 0, out.stderr
    first, built = out.stdout.splitlines()[:2]
    assert first == "03_coalescing [TILE=16 OUTPUTS=2]" and built.split(",")[0].strip() == "for sm_80"
    assert "registers/thread" in out.stdout and "occupancy" in out.stdout


def test_compile_refuses_an_illegal_config_with_its_rule():
    out = run("compile", "02", "-D", "TILE=64", "-D", "OUTPUTS=1")
    assert out.returncode == 2
    assert "rule 'block-size' violated" in out.stderr and "4096 threads" in out.stderr


def test_compile_rejects_malformed_defines_and_unknown_kernels():
    assert "NAME=INTEGER" in run("compile", "02", "-D", "TILE").stderr
    assert "known kernels" in run("compile", "nope").stderr


def test_bench_validates_and_compares_with_cublas_or_says_why_not():
    out = run("bench", "01", "--size", "64", "64", "64", "--reps", "3")
    if device.available():
        assert out.returncode == 0, out.stderr
        assert "01_naive" in out.stdout and "PASS" in out.stdout and "cuBLAS FP32 timed interleaved" in out.stdout
    else:
        assert out.returncode == 2 and "needs a GPU" in out.stderr


def test_tune_searches_and_remembers_or_says_why_not(tmp_path):
    import os
    env = {**os.environ, "GEMMLAB_CACHE": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "gemmlab", "tune", "03", "--size", "256", "256", "256"],
                         capture_output=True, text=True, env=env)
    if device.available():
        assert out.returncode == 0, out.stderr
        assert "best of 12 for 03_coalescing at 256x256x256" in out.stdout and (tmp_path / "tuned.json").exists()
    else:
        assert out.returncode == 2 and "tune needs a GPU" in out.stderr


def _subcommands() -> list[str]:
    """Every subcommand, as `python -m gemmlab --help` lists them ({info,archs,...})."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["--help"])
    return re.search(r"\{([a-z,-]+)\}", out.getvalue()).group(1).split(",")


def test_every_subcommand_prints_its_help(capsys):
    names = _subcommands()
    assert {"info", "plan", "fit", "check", "archs"} <= set(names)
    for name in names:
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        out = capsys.readouterr()
        assert done.value.code == 0, (name, out.err)
        assert out.out.startswith(f"usage: python -m gemmlab {name}"), name


def test_plan_says_which_sizes_are_missing_or_not_whole():
    """plan's sizes were one positional of nargs=3 with a tuple metavar: argparse failed on it (issue 32)."""
    for argv, said in ((["plan"], "required: M, N, K"), (["plan", "1", "2"], "required: K"),
                       (["plan", "1.5", "2", "3"], "argument M: '1.5' is not a whole number"),
                       (["plan", "1", "0", "3"], "argument N: 0 must be at least 1")):
        out = run(*argv)
        assert out.returncode == 2 and said in out.stderr, (argv, out.stderr)
        assert "Traceback" not in out.stderr and "M N K" in out.stderr


def test_output_cut_short_by_its_reader_ends_quietly():
    """`python -m gemmlab plan ... | head -1`: the reader closes the pipe after one line, and the command ends
    without a traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "gemmlab", "plan", "3000", "3000", "3000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()            # no reader at all: the first write breaks the pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err
