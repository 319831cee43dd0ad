"""The command line, as a reader types it."""
import subprocess
import sys

from gemmlab import device


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
    assert "03_coalescing [TILE=16 OUTPUTS=2] for sm_80" in out.stdout
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
