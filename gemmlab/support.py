"""Which kernel runs on which architecture: each kernel's default configuration compiled for every
architecture in arch.py, or refused before compiling by the rule that names the requirement. No GPU
needed (NVRTC from pip).

Compiling every kernel for every architecture takes minutes on a laptop's cores, so the table at the
defaults ships precomputed (PRECOMPUTED), with what each cell was made from: its kernel's code
identity (identity.code_hash, what records are judged by) and defaults, its architecture's limits,
and the NVRTC build. A cell whose kernel or architecture changed since is compiled anew; `python -m
gemmlab archs --write` recompiles the whole table and writes it.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from . import arch as archs, files, identity, registry, toolchain
from .compile import compile_kernel
from .compile_aside import precompile
from .spec import IllegalConfig

# Not under gemmlab/data/: every JSON file there is read as a GPU's record.
PRECOMPUTED = Path(__file__).resolve().parent / "precomputed" / "support.json"
REGENERATE = "python -m gemmlab archs --write"


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


def cells(jobs: list[tuple[str, str]], params: dict | None = None, progress: bool = False) -> list[Cell]:
    """Each (kernel, arch) compiled now, or refused; with a progress bar if `progress`: a full table
    is minutes of compiling, never to be waited through in silence."""
    if not jobs:
        return []
    parallel = min(os.cpu_count() or 1, len(jobs)) > 1
    if parallel:   # a process per core, with its own bar (compile_aside.precompile); the cells below read the cache
        precompile([(k, params, a) for k, a in jobs], progress=progress)
    from .progress import transient
    out = []
    with transient(len(jobs), "compile", enabled=progress and not parallel) as bar:
        for k, a in jobs:
            out.append(_cell(k, a, params))
            bar.update()
    return out


def _names(kernels: list[str] | None, arch_names: list[str] | None) -> tuple[list[str], list[str]]:
    names = [registry.get(k).name for k in kernels] if kernels else list(registry.KERNELS)
    return names, [archs.get(a).name for a in arch_names] if arch_names else list(archs.ARCHS)


def matrix(kernels: list[str] | None = None, arch_names: list[str] | None = None,
           params: dict | None = None, progress: bool = False) -> list[list[Cell]]:
    """One row per kernel, one cell per architecture, all compiled now."""
    names, arch_names = _names(kernels, arch_names)
    found = cells([(k, a) for k in names for a in arch_names], params, progress)
    return [found[i:i + len(arch_names)] for i in range(0, len(found), len(arch_names))]


def made_from(kernel: str) -> dict:
    """What a kernel's cells depend on: its code's identity (comments do not count) and its defaults."""
    spec = registry.get(kernel)
    return {"source": identity.code_hash(spec.path), "params": spec.resolve(None)}


def _limits(arch: str) -> dict:
    return asdict(archs.get(arch))


def compute() -> dict:
    """The whole table at the defaults, compiled now, as plain data with what it was made from."""
    names, arch_names = _names(None, None)
    found = cells([(k, a) for k in names for a in arch_names], progress=True)
    return {"about": f"chapter 00's table (gemmlab/support.py); `{REGENERATE}` writes it anew",
            "nvrtc": toolchain.nvrtc_build(),
            "kernels": {k: made_from(k) for k in names},
            "archs": {a: _limits(a) for a in arch_names},
            "cells": [asdict(c) for c in found]}


def _dumps(data: dict) -> str:
    """JSON with a line per kernel, architecture and cell: a cell compiled anew is a one-line diff."""
    def inner(value) -> str:
        if isinstance(value, dict):
            return "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()) + "\n }"
        if isinstance(value, list):
            return "[\n" + ",\n".join(f"  {json.dumps(v)}" for v in value) + "\n ]"
        return json.dumps(value)
    return "{\n" + ",\n".join(f" {json.dumps(k)}: {inner(v)}" for k, v in data.items()) + "\n}\n"


def write(path: Path = PRECOMPUTED) -> Path:
    """Compile the whole table now and write it where it ships (`python -m gemmlab archs --write`)."""
    files.write_atomic(path, _dumps(compute()))
    return path


def shipped() -> dict | None:
    """The precomputed table, its cells as Cells; None where it is missing or damaged (said on
    stderr: then every cell is compiled now)."""
    try:
        data = json.loads(PRECOMPUTED.read_text())
        if not all(isinstance(data[k], kind) for k, kind in (("nvrtc", str), ("kernels", dict), ("archs", dict))):
            raise ValueError("nvrtc, kernels or archs malformed")
        return data | {"cells": [Cell(**c) for c in data["cells"]]}
    except (OSError, ValueError, KeyError, TypeError) as exc:     # JSON, UTF-8 and missing fields included
        print(f"gemmlab: the precomputed table {PRECOMPUTED} is unusable ({type(exc).__name__}: {exc}); compiling "
              f"every cell now. Restore it (git checkout -- gemmlab/precomputed) or write it anew: {REGENERATE}",
              file=sys.stderr)
        return None


def current(data: dict) -> dict[tuple[str, str], Cell]:
    """The shipped cells that still hold: their kernel's code and defaults, and their architecture's
    limits, are as they were when they were compiled."""
    kernels = {k for k, made in data["kernels"].items() if k in registry.KERNELS and made == made_from(k)}
    arch_names = {a for a, limits in data["archs"].items() if a in archs.ARCHS and limits == _limits(a)}
    return {(c.kernel, c.arch): c for c in data["cells"] if c.kernel in kernels and c.arch in arch_names}


@dataclass(frozen=True)
class Table:
    rows: list[list[Cell]]
    nvrtc: str | None       # the NVRTC build of the shipped cells shown; None if every cell was compiled now
    compiled: list[str]     # the kernels compiled now

    def note(self) -> str:
        """Where the cells come from, in a sentence."""
        kept = f"precomputed with NVRTC {self.nvrtc} for this code"
        if not self.compiled:
            return f"{kept[0].upper()}{kept[1:]} (`{REGENERATE}` compiles it anew)."
        now = f"compiled now with NVRTC {toolchain.nvrtc_build()}"
        if self.nvrtc is None:
            return f"{now[0].upper()}{now[1:]}."
        return (f"{now[0].upper()}{now[1:]}: {', '.join(self.compiled)}, changed (code, defaults or an "
                f"architecture's limits) since the table was precomputed; the rest {kept} "
                f"(`{REGENERATE}` compiles it all anew).")


def table(kernels: list[str] | None = None, arch_names: list[str] | None = None, progress: bool = False) -> Table:
    """The matrix at the kernels' defaults: the shipped cells where they still hold, the others
    compiled now (with a progress bar if `progress`)."""
    names, arch_names = _names(kernels, arch_names)
    data = shipped()
    kept = current(data) if data else {}
    stale = [(k, a) for k in names for a in arch_names if (k, a) not in kept]
    found = kept | dict(zip(stale, cells(stale, progress=progress)))
    rows = [[found[k, a] for a in arch_names] for k in names]
    all_stale = len(stale) == len(names) * len(arch_names)
    return Table(rows, None if all_stale else data["nvrtc"], list(dict.fromkeys(k for k, _ in stale)))
