"""The registry: the one place where gemmlab's kernels are listed.

Sliders, the compile cache, tests, the CLI, the record sweep and the plots all read `KERNELS`;
nothing else lists kernel names or legal values. Each spec is written in `gemmlab/specs/`; the
types are in `gemmlab/spec.py`.
"""
from __future__ import annotations

from .spec import KernelSpec
from .specs import ALL

KERNELS: dict[str, KernelSpec] = {spec.name: spec for spec in ALL}


class UnknownKernel(KeyError):
    """A name that matches no kernel, or more than one."""

    def __str__(self) -> str:
        return self.args[0]


def get(name: str) -> KernelSpec:
    """A spec by name; a unique prefix or chapter number ("02", "2") works too."""
    if name in KERNELS:
        return KERNELS[name]
    key = str(name)
    # a chapter number first ("1", "01" and "10" name one kernel each), else a prefix
    matches = [k for k in KERNELS if key.isdigit() and k.split("_", 1)[0] == key.zfill(2)]
    matches = matches or [k for k in KERNELS if k.startswith(key)]
    if len(matches) == 1:
        return KERNELS[matches[0]]
    if matches:
        raise UnknownKernel(f"'{name}' matches several kernels: {', '.join(matches)}")
    raise UnknownKernel(f"no kernel '{name}'; known kernels: {', '.join(KERNELS)}")


def by_chapter(chapter: int) -> KernelSpec:
    return next(spec for spec in KERNELS.values() if spec.chapter == chapter)


def with_shape_search() -> list[KernelSpec]:
    """The kernels whose spec carries a per-shape search (the final chapter's table)."""
    return [spec for spec in KERNELS.values() if spec.shape_search is not None]
