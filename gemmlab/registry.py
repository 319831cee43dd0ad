"""The registry: the one place where gemmlab's kernels are listed.

Sliders, the compile cache, tests, the CLI, the record sweep and the plots all read `KERNELS`;
nothing else lists kernel names or legal values. Each spec is written in `gemmlab/specs/`; the
types are in `gemmlab/spec.py`. Beside each spec, `model` finds the models of its kernel's code
(kernel_model.py) and `programme` what the course measures of it (course.py).
"""
from __future__ import annotations

from .course import Programme
from .kernel_model import KernelModel
from .spec import KernelSpec
from .specs import ALL, MODELS, PROGRAMMES

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


def _key(spec_or_name: KernelSpec | str) -> str:
    return spec_or_name.name if isinstance(spec_or_name, KernelSpec) else get(spec_or_name).name


def model(spec_or_name: KernelSpec | str) -> KernelModel:
    """The models of a kernel's code (who owns what, shared words, fast tiles, streaming), by spec or name."""
    return MODELS[_key(spec_or_name)]


def programme(spec_or_name: KernelSpec | str) -> Programme:
    """What the course measures of a kernel (counters, regime shapes, a shape search), by spec or name."""
    return PROGRAMMES[_key(spec_or_name)]


def with_shape_search() -> list[KernelSpec]:
    """The kernels whose programme carries a per-shape search (the final chapter's table)."""
    return [spec for spec in KERNELS.values() if programme(spec).shape_search is not None]
