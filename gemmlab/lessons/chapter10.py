"""Chapter 10: where the hot loop issues its copies (from the SASS)."""
from __future__ import annotations

from .. import pictures, registry, sass
from ..compile import compile_kernel
from ..compile_aside import precompile
from .display import markdown, table


def show_copy_placement(name: str, arch: str = "sm_90") -> None:
    """Where the hot loop issues the next tile's copies, in the chapter's last two steps (SPREAD off,
    then on), from the SASS (no GPU needed): what a warp issues between the barrier and its first
    FFMA, and a strip of the whole loop, one tick per instruction."""
    spec = registry.get(name)
    rows, strips = [], []
    precompile([(spec.name, full, arch) for full in spec.step_configs()[-2:]], progress=True, disassemble=True)
    for full in spec.step_configs()[-2:]:
        ops = sass.hot_region(compile_kernel(spec, full, arch))
        barrier = next(i for i, op in enumerate(ops) if op.startswith("BAR"))
        first_ffma = ops.index("FFMA", barrier)
        between = ops[barrier + 1:first_ffma]
        copies = [i for i, op in enumerate(ops) if op.startswith("LDGSTS")]
        rows.append([f"SPREAD={full['SPREAD']}", len(ops), len(between),
                     sum(op.startswith("LDGSTS") for op in between), sum(op.startswith("LDS.128") for op in between),
                     f"{min(copies) / len(ops):.0%} to {max(copies) / len(ops):.0%}"])
        strips.append((f"SPREAD={full['SPREAD']}", ops))
    markdown(table(["build", "hot loop: instructions", "after the barrier, before the first FFMA",
                    "of them copies", "of them shared loads", "copies sit at (share of the loop)"], rows)
             + f"\n\n{spec.name} [{spec.config_label(full)}], {arch}, static counts from the SASS")
    pictures.hot_loop(strips, f"{spec.name}, {arch} SASS of the hot loop (one K tile)")
