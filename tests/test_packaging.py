"""gemmlab as a library: a wheel built from the checkout carries the kernels and the records, and,
installed into a fresh virtual environment outside the checkout, compiles a kernel and answers
`gemmlab info` from any directory. No GPU and no network needed (no build isolation; the new
environment borrows this one's dependencies, not its gemmlab)."""
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow    # builds a wheel and a virtual environment (the heavy tier)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(ROOT)], capture_output=True, text=True, cwd=out)
    assert done.returncode == 0, done.stderr[-2000:]
    return next(out.glob("gemmlab-*.whl"))


def test_the_wheel_carries_the_kernels_and_the_records(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    kernels = {p.name for p in (ROOT / "kernels").glob("*.cu")}
    assert kernels and {f"gemmlab/kernels/{k}" for k in kernels} <= names
    assert "gemmlab/kernels/ptx.cuh" in names, "the header of the kernels' PTX"
    assert "gemmlab/kernels/probes/memory.cu" in names
    records = {p.name for p in (ROOT / "gemmlab" / "data").glob("*.json")}
    assert records and {f"gemmlab/data/{r}" for r in records} <= names
    fitted = {p.name for p in (ROOT / "gemmlab" / "fitted").glob("*.json")}
    assert fitted and {f"gemmlab/fitted/{f}" for f in fitted} <= names, "gemmlab.matmul's model travels too"


def test_installed_outside_the_checkout_it_compiles_and_reports(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # This environment's packages behind the new one's, then the wheel itself. Path lines: their .pth files,
    # among them the editable gemmlab's finder, are not run, so every site folder this interpreter sees is
    # named (a GPU box's environment borrows its system's NumPy and CuPy through one of those .pth files).
    borrowed = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (site / "borrowed.pth").write_text("\n".join(dict.fromkeys([sysconfig.get_paths()["purelib"], *borrowed])) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GEMMLAB_CACHE": str(tmp_path / "cache")}

    def run(*args):
        done = subprocess.run([str(python), *args], capture_output=True, text=True, cwd=elsewhere, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    where = run("-c", "import gemmlab, gemmlab.spec as s, gemmlab.records as r; "
                      "print(gemmlab.__file__); print(s.KERNEL_DIR); print(r.latest().device['name'])")
    module, kernels, device = where.splitlines()
    assert module.startswith(str(site)) and kernels.startswith(str(site)), "the installed copy, not the checkout"
    assert device, "the shipped record loads"
    assert "registers/thread" in run("-m", "gemmlab", "compile", "03", "--arch", "sm_75")
    assert "registers/thread" in run("-m", "gemmlab", "compile", "09", "--arch", "sm_90"), "it finds ptx.cuh"
    assert "NVRTC" in run("-m", "gemmlab", "info")
    assert "predicted" in run("-m", "gemmlab", "plan", "1000", "1000", "1000"), "the plan reads the installed model"
