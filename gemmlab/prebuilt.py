"""Cubins shipped with gemmlab, so that gemmlab.matmul's first call in a new process need not compile.

A first call spent nearly all of its time in NVRTC (1.7 of 1.9 s for 4096^3 on the H100: cicc 1.0 s,
ptxas 0.8 s). The configurations the plan picks on the fitted GPU's architecture are compiled ahead
(`python -m gemmlab.research.prebuild`, no GPU needed), compressed into gemmlab/cubins/, and named in
its manifest with the compiler that built them, their resources and log.

An entry is found by the bytes that decide a cubin, the compiler aside: the kernel's source, the
headers it includes, and the options (architecture and tunables). A kernel edited since (even a
comment) finds no entry and is compiled as before. A shipped cubin is unpacked into the compile
cache under the key its own compiler gives it, so the cache says truthfully what built it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import lzma
from pathlib import Path

DIR = Path(__file__).parent / "cubins"
MANIFEST = DIR / "manifest.json"


def source_key(text: bytes, headers: dict[str, bytes], options: list[str]) -> str:
    """24 hex digits over what decides a cubin but the compiler: source, included headers, options."""
    return hashlib.sha256(json.dumps([text.hex(), {n: h.hex() for n, h in headers.items()}, options])
                          .encode()).hexdigest()[:24]


def entry_name(kernel: str, arch: str, key: str) -> str:
    return f"{kernel}-{arch}-{key}"


@functools.lru_cache(maxsize=1)
def manifest() -> dict[str, dict]:
    """The shipped entries by name: kernel, params, arch, nvrtc (the build that compiled it), log and
    resources. Empty where there is none (a checkout before its first prebuild)."""
    try:
        data = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}
    return data.get("entries", {}) if isinstance(data, dict) else {}


def find(kernel: str, arch: str, key: str) -> dict | None:
    return manifest().get(entry_name(kernel, arch, key))


def cubin_of(name: str) -> bytes:
    """A shipped entry's cubin, decompressed."""
    return lzma.decompress((DIR / f"{name}.cubin.xz").read_bytes())
