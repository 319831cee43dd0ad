"""Which kernel runs on which architecture: each kernel's default configuration compiled for every
architecture in arch.py, or refused before compiling by the rule that names the requirement. No GPU
needed (NVRTC from pip)."""
from __future__ import annotations

from dataclasses import dataclass

from . import arch as archs, registry
from .compile import compile_kernel, precompile
from .spec import IllegalConfig


@dataclass(frozen=True)
class Cell:
    kernel: str
    arch: str
    runs: bool
    text: str          # "<registers> regs, <blocks>/SM" or the refusal's rule
    detail: str = ""   # the refusal's message


def _cell(kernel: str, arch: str, params: dict | None) -> Cell:
    try:
        build = compile_kernel(kernel, params, arch)
    except IllegalConfig as exc:
        return Cell(kernel, arch, False, f"refused: {exc.rule}", str(exc).split(" violated: ", 1)[-1])
    r, o = build.resources, build.occupancy
    spills = f", spills {r.spill_stores} B" if r.spills else ""
    return Cell(kernel, arch, True, f"{r.registers} regs, {o.blocks_per_sm}/SM{spills}")


def matrix(kernels: list[str] | None = None, arch_names: list[str] | None = None,
           params: dict | None = None) -> list[list[Cell]]:
    """One row per kernel, one cell per architecture, compiled in parallel (compile.precompile)."""
    names = [registry.get(k).name for k in kernels] if kernels else list(registry.KERNELS)
    arch_names = [archs.get(a).name for a in arch_names] if arch_names else list(archs.ARCHS)
    jobs = [(k, a) for k in names for a in arch_names]
    precompile([(k, params, a) for k, a in jobs])     # in parallel; the cells below read the cache
    cells = [_cell(k, a, params) for k, a in jobs]
    return [cells[i:i + len(arch_names)] for i in range(0, len(cells), len(arch_names))]
