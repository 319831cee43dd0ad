"""NVRTC and nvdisasm from NVIDIA's pip wheels (never a system CUDA toolkit).

NVRTC is called through NVIDIA's cuda-bindings (`cuda.bindings.nvrtc`), whose cuda-pathfinder
loads libnvrtc from the nvidia-cuda-nvrtc wheel; nvdisasm is the nvidia-cuda-nvdisasm wheel's.
The wheels put them under site-packages/nvidia/<cu13|cuda_nvrtc|cuda_nvdisasm|...>/{lib,bin}.
docs/toolchain.md says why these and not a hand-written ctypes binding.
"""
from __future__ import annotations

import ctypes
import functools
import re
import subprocess
import sys
from pathlib import Path

_INSTALL = ("Install the course environment (`make test`, or `pip install -e .[cuda13]` for a CUDA 13 "
            "driver or no GPU, `pip install -e .[cuda12]` for a CUDA 12 driver); gemmlab uses NVIDIA's "
            "pip wheels (cuda-bindings, nvidia-cuda-nvrtc), not a system CUDA.")


class ToolchainMissing(RuntimeError):
    pass


def _nvidia_roots() -> list[Path]:
    roots = []
    for entry in sys.path:
        candidate = Path(entry or ".") / "nvidia"
        if candidate.is_dir() and candidate not in roots:
            roots.append(candidate)
    return roots


def _find(pattern: str) -> list[Path]:
    found = []
    for root in _nvidia_roots():
        found.extend(sorted(root.glob(pattern)))
    return found


@functools.lru_cache(maxsize=None)
def preload_nvrtc() -> None:
    """Load the wheel's libnvrtc (for cuda-bindings' CUDA major) before cuda-pathfinder looks: it
    then takes the library already loaded, and so does CuPy (device.py calls this before importing
    it). Without this, on a GPU box whose venv sees the system's packages (make REUSE_SYSTEM=1),
    pathfinder picked the system CUDA's libnvrtc."""
    try:
        major = cuda_bindings_version().split(".")[0]
    except ImportError:
        return
    libs = [p for p in _find(f"*/lib/libnvrtc.so.{major}*") if ".alt." not in p.name]
    if not libs:
        return
    for builtin in sorted(libs[0].parent.glob("libnvrtc-builtins.so.*")):
        if ".alt." not in builtin.name:
            ctypes.CDLL(str(builtin), mode=ctypes.RTLD_GLOBAL)
    ctypes.CDLL(str(libs[0]), mode=ctypes.RTLD_GLOBAL)


@functools.lru_cache(maxsize=None)
def _libnvrtc():
    """cuda-pathfinder's LoadedDL for libnvrtc (the same cached handle cuda.bindings uses)."""
    try:
        from cuda import pathfinder
        import cuda.bindings
    except ImportError as exc:
        raise ToolchainMissing(f"cuda-bindings, NVIDIA's Python binding of NVRTC, is not installed "
                               f"({exc}). {_INSTALL}") from None
    preload_nvrtc()
    try:
        lib = pathfinder.load_nvidia_dynamic_lib("nvrtc")
    except pathfinder.DynamicLibNotFoundError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ToolchainMissing(f"NVRTC was not found: {first}. {_INSTALL}") from None
    return lib


@functools.lru_cache(maxsize=None)
def nvrtc():
    """The `cuda.bindings.nvrtc` module, with libnvrtc loaded from its pip wheel."""
    _libnvrtc()
    from cuda.bindings import nvrtc as binding
    err, major, _ = binding.nvrtcVersion()
    if err != binding.nvrtcResult.NVRTC_SUCCESS:
        raise ToolchainMissing(f"NVRTC did not answer nvrtcVersion ({err.name}). {_INSTALL}")
    bindings_major = int(cuda_bindings_version().split(".")[0])
    if major != bindings_major:
        raise ToolchainMissing(f"cuda-bindings {cuda_bindings_version()} is for CUDA {bindings_major} but "
                               f"loaded NVRTC {major} ({_libnvrtc().abs_path}). {_INSTALL}")
    return binding


def cuda_bindings_version() -> str:
    from importlib import metadata
    try:
        return metadata.version("cuda-bindings")
    except metadata.PackageNotFoundError:
        import cuda.bindings
        return cuda.bindings.__version__


def nvrtc_location() -> str:
    """Where libnvrtc was loaded from, and through what (for `python -m gemmlab info`)."""
    nvrtc()
    return f"{_libnvrtc().abs_path}, through cuda-bindings {cuda_bindings_version()}"


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> str:
    err, major, minor = nvrtc().nvrtcVersion()
    return f"{major}.{minor}"


@functools.lru_cache(maxsize=None)
def nvrtc_build() -> str:
    """The full version (e.g. 13.0.88) of the wheel the loaded libnvrtc came from, or the version
    and path of another NVRTC something loaded first (a CuPy imported before gemmlab): part of the
    compile-cache key and of every compile report."""
    from importlib import metadata
    loaded = Path(_libnvrtc().abs_path).resolve()
    for dist in ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12"):
        try:
            files = metadata.files(dist) or []
        except metadata.PackageNotFoundError:
            continue
        if any(Path(f.locate()).resolve() == loaded for f in files if f.name.startswith("libnvrtc.so")):
            return metadata.version(dist)
    return f"{nvrtc_version()} ({loaded})"


@functools.lru_cache(maxsize=None)
def nvdisasm() -> Path:
    tools = _find("*/bin/nvdisasm")
    if not tools:
        raise ToolchainMissing(
            "nvdisasm was not found in site-packages; install the nvidia-cuda-nvdisasm wheel "
            "(part of the course environment).")
    return tools[-1]


@functools.lru_cache(maxsize=None)
def nvdisasm_version() -> str:
    out = subprocess.run([str(nvdisasm()), "--version"], capture_output=True, text=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else "unknown"
