"""Find NVRTC and nvdisasm in their pip wheels (never a system CUDA toolkit).

The wheels put them under site-packages/nvidia/<cu13|cu12|cuda_nvrtc|...>/{lib,bin}.
"""
from __future__ import annotations

import ctypes
import functools
import re
import subprocess
import sys
from pathlib import Path


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


def _major(path: Path) -> int:
    m = re.search(r"\.so\.(\d+)", path.name)
    return int(m.group(1)) if m else 0


@functools.lru_cache(maxsize=None)
def nvrtc() -> ctypes.CDLL:
    """Load libnvrtc from the newest pip wheel found, builtins first (NVRTC dlopens them)."""
    libs = [p for p in _find("*/lib/libnvrtc.so.*") if ".alt." not in p.name]
    if not libs:
        raise ToolchainMissing(
            "NVRTC was not found in site-packages. Install the course environment (`make test` "
            "or `pip install -e .[cuda13]`); gemmlab uses the nvidia-cuda-nvrtc wheel, not a system CUDA.")
    lib = max(libs, key=_major)
    for builtin in sorted(lib.parent.glob("libnvrtc-builtins.so.*")):
        if ".alt." not in builtin.name:
            ctypes.CDLL(str(builtin), mode=ctypes.RTLD_GLOBAL)
    handle = ctypes.CDLL(str(lib))
    handle._gemmlab_path = str(lib)
    return handle


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> str:
    lib = nvrtc()
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


@functools.lru_cache(maxsize=None)
def nvrtc_build() -> str:
    """The wheel's full version (e.g. 13.0.88): part of the compile-cache key."""
    from importlib import metadata
    for dist in ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return nvrtc_version()


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
