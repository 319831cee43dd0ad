"""Chapters 05-10: register tiles, unrolling, warp tiles, and a chapter's steps one at a time; pictures
of a thread's outer product, of a warp's 128-bit shared loads and their banks, and of the order of
its FFMAs (drawn from the spec, no GPU needed)."""
from __future__ import annotations

import json

from .. import pictures, registry, sass, results
from ..compile import DEFAULT_ARCH, compile_kernel
from ..compile_aside import precompile
from .models import ffma_order, owned, owner_grid, reused_operands, shared_loads, shared_supported
from .display import beside_cells, beside_header, beside_note, markdown, table


def show_reuse(name: str, **params) -> None:
    """The arithmetic a thread does per value it loads from shared memory, for these tunables."""
    spec = registry.get(name)
    p = spec.resolve(params)
    tm, tn = spec.thread_tile(p)
    threads = spec.threads(p)
    rows, cols = spec.tile(p)
    markdown(table(["per step of k, per thread", spec.config_label(p)], [
        ["values loaded from shared memory (A + B)", f"{tm} + {tn} = {tm + tn}"],
        ["multiply-adds", f"{tm} x {tn} = {tm * tn}"],
        ["FMAs per shared-memory value", f"{tm * tn / (tm + tn):.2f}"],
        ["inner product (chapters 02-04) for comparison", "1 FMA per 2 values (0.5), or OUTPUTS/(OUTPUTS+1)"],
        ["block tile / threads", f"{rows} x {cols} / {threads} threads = {rows * cols // threads} outputs each"],
        ["global FLOP per byte of the staged tiles", f"{2 * rows * cols / (4 * (rows + cols)):.1f}"],
    ]))


def show_unroll_study(name: str, tunable: str = "UNROLL", **params) -> None:
    """What #pragma unroll does to the code, compiled for every value of the unroll tunable the
    sliders offer (no GPU needed). The 'inner loop' columns count the innermost loop that holds
    the FFMAs (sass.hot_region)."""
    spec = registry.get(name)
    configs = [cfg for cfg in ({**params, tunable: value} for value in spec.tunable(tunable).offered) if spec.is_legal(cfg)]
    precompile([(spec.name, cfg, DEFAULT_ARCH) for cfg in configs], progress=True, disassemble=True)
    rows = []
    for cfg in configs:
        value = cfg[tunable]
        build = compile_kernel(spec, cfg)
        hot = sass.hot_region(build)
        ffma = sum(op.startswith("FFMA") for op in hot)
        lds = sum(op.startswith("LDS") for op in hot)
        rows.append([value, build.resources.registers, len(sass.instructions(build)), len(hot), ffma,
                     f"{ffma / len(hot):.0%}", lds])
    base = spec.resolve({**params, tunable: rows[0][0]})
    markdown(table([tunable, "registers", "SASS instructions (kernel)", "inner loop: instructions",
                    "FFMA", "FFMA share", "shared loads"], rows)
             + f"\n\n{spec.name}, other tunables {spec.config_label({k: v for k, v in base.items() if k != tunable})}, "
             f"sm_90, static counts from the SASS")


def show_warp_tiling(name: str, **params) -> None:
    spec = registry.get(name)
    full = spec.resolve(params)
    pictures.warp_tiling(spec, full, registry.model(spec).geometry(full), "drawn from the registry's parameters")


STEP_PROFILE = ("issued_per_scheduler", "dispatch_stall", "wait")
_PROFILE_HEADERS = {"issued_per_scheduler": "issued per cycle per scheduler", "warps_per_scheduler": "warps per scheduler"}


def show_steps(name: str, size: int = 4096, operands: bool = True, profile: tuple = STEP_PROFILE) -> None:
    """The chapter's additions switched on one at a time (the spec's steps): time against cuBLAS
    (live, else recorded), how the hot loop's FFMAs get their operands (from the SASS; `operands`),
    and the recorded Nsight Compute figures named in `profile` (issued_per_scheduler,
    warps_per_scheduler or a stall reason of records.STALL_REASONS) where the record has them."""
    spec = registry.get(name)
    src = results.here()
    profiled = results.record()                 # the record whose Nsight Compute profiles fill the profile columns
    stalls = {json.dumps(r["params"], sort_keys=True): r for r in profiled.stalls() if r["kernel"] == spec.name}
    if operands:        # the steps' builds and their SASS, side by side, with a bar where any is still to make
        precompile([(spec.name, full, DEFAULT_ARCH) for full in spec.step_configs()], progress=True, disassemble=True)
    rows = []
    for (caption, _), full in zip(spec.steps, spec.step_configs()):
        row = src.result(spec, full, size)
        prof = stalls.get(json.dumps(full, sort_keys=True))
        measured = [("-" if not prof else f"{prof[f]:.1f}" if f == "warps_per_scheduler" else
                     f"{prof[f] if f in prof else prof['stalls'][f]:.2f}") for f in profile]
        reads = sass.operand_reads(compile_kernel(spec, full)) if operands else None
        rows.append([caption, spec.changes_label(full) or "defaults", f"{row['gflops'] / 1e3:.2f}", f"{row['ratio']:.1%}",
                     *beside_cells(src, src.beside(spec, full, size)),
                     *([f"{reads['from_cache'] / reads['ffma']:.2f}", f"{reads['same_bank'] / reads['ffma']:.1%}"]
                       if operands else []), *measured])
    # live, the profile columns sit beside this GPU's timings: each header says they are the record's
    whose = f" ({profiled.device['name'].removeprefix('NVIDIA ')} record)" if isinstance(src, results.Live) else ""
    headers = [_PROFILE_HEADERS.get(f, f"{f.removesuffix('_stall').replace('_', ' ')} stalls") + whose
               for f in profile]
    notes = ((" Operand columns: static counts over the hot loop's FFMAs in the sm_90 SASS." if operands else "")
             + (f" Profile columns: Nsight Compute profiles {profiled.label} ('-' where it has none)" if whose else
                " Profile columns: the record's Nsight Compute profiles ('-' where it has none)")
             + ("; stalls in cycles per issued instruction." if set(profile) - set(_PROFILE_HEADERS) else "."))
    markdown(table(["step", "configuration (changes from the defaults)", "TFLOP/s", "of cuBLAS (same run)",
                    *beside_header(src),
                    *(["FFMA operands from the reuse cache", "FFMAs with two reads in one bank"] if operands else []),
                    *headers], rows)
             + f"\n\n{spec.name} at {size}³, each step validated before timing. *{src.label}*.{notes}{beside_note(src)}")


def show_outer_product(name: str, thread: int = 0, k: int = 0, **params) -> None:
    """A thread's accumulators updated at step k: its values of A's column k times its values of B's
    row k, every product added into its patch of C (several patches for warp-tiled kernels)."""
    spec = registry.get(name)
    full = spec.resolve(params)
    if spec.thread_tile is None or registry.model(spec).owner is None or spec.k_tile is None:
        print(f"{spec.name} computes inner products (each thread a few elements of C, one FMA per value of B "
              f"it reads): no outer product to draw; chapters 05 on have one")
        return
    if not 0 <= thread < spec.threads(full) or not 0 <= k < spec.k_tile(full):
        print(f"thread must be below {spec.threads(full)} and k below {spec.k_tile(full)} for {spec.config_label(full)}")
        return
    cells = owned(owner_grid(spec, full), thread)
    rows, cols = sorted({r for r, _ in cells}), sorted({c for _, c in cells})
    tm, tn = spec.thread_tile(full)
    print(f"{spec.config_label(full)}: at each k, thread {thread} reads {tm} values of A (rows "
          f"{_spans(rows)}) and {tn} of B (columns {_spans(cols)}) and does {tm} x {tn} = {tm * tn} FMAs")
    pictures.outer_product(spec, full, thread, k, rows, cols, "drawn from the registry's model of the kernel's indexing")


def _spans(values: list[int]) -> str:
    """[0, 1, 2, 3, 32, 33, 34, 35] -> '0-3, 32-35'."""
    runs, start = [], values[0]
    for a, b in zip(values, values[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}-{a}" if a > start else f"{start}")
            start = b
    return ", ".join(runs)


def show_shared_loads(name: str, operand: str = "B", load: int = 0, **params) -> None:
    """A warp's vector loads from shared memory over one tile: how wide (LDS.128: 16 bytes a lane),
    how many per tile, and the passes they take. A 128-bit load is served a quarter-warp at a time
    (8 lanes x 16 bytes = all 32 banks); lanes of one phase that need different 16-byte vectors in
    the same banks take a pass each. Draws load number `load` of `operand` ("A" or "B")."""
    spec = registry.get(name)
    full = spec.resolve(params)
    why = shared_supported(spec)
    if why:
        print(why)
        return
    rows, picked = [], None
    for op in ("A", "B"):
        loads = shared_loads(spec, full, op)
        passes = [ld.wavefronts(ph) for ld in loads for ph in ld.phases()]
        kind = {4: "LDS.128", 2: "LDS.64", 1: "LDS (32-bit)"}[loads[0].width]
        rows.append([op, kind, len(loads), len(loads[0].phases()), sum(passes), len(passes),
                     "none" if sum(passes) == len(passes) else f"{max(passes)}-way"])
        if op == operand:
            picked = loads
    if picked is None:
        print(f"operand must be 'A' or 'B', not {operand!r}")
        return
    markdown(table(["operand", "instruction", "per tile", "phases each", "passes per tile",
                    "passes if conflict-free", "bank conflicts"], rows)
             + f"\n\n{spec.name} [{spec.config_label(full)}], warp 0; a model of the kernel's indexing "
             f"(written beside its spec in gemmlab/specs/), no GPU involved.")
    if not 0 <= load < len(picked):
        print(f"load must be below {len(picked)}")
        return
    ld = picked[load]
    k = ld.elements[0][0][0]
    what = "its rows of A" if operand == "A" else "its columns of B"
    phases = len(ld.phases())
    pictures.shared_phases(f"{spec.title} [{spec.config_label(full)}]\nwarp 0's shared load {load} of {operand} (k={k}): "
                        f"{4 * ld.width} bytes a lane, {phases} phase{'s' if phases > 1 else ''} of {ld.phase_lanes} "
                        f"lanes", ld, what, "drawn from the registry's model of the kernel's indexing")


def show_ffma_order(name: str, **params) -> None:
    """The order of a thread's FFMAs in one k step: row by row, or snaking (odd rows backwards).
    Two FFMAs in a row that share an operand let the hardware's operand reuse cache serve it."""
    spec = registry.get(name)
    full = spec.resolve(params)
    if spec.thread_tile is None:
        print(f"{spec.name} has no register patch of accumulators (thread_tile): no FFMA order to draw")
        return
    rows, cols = spec.thread_tile(full)
    panels = []
    for snake in (False, True):
        order = ffma_order(rows, cols, snake)
        used = " (this configuration)" if full.get("SNAKE", 0) == snake else ""
        panels.append((("snake: odd rows backwards" if snake else "row by row") + used, order,
                       reused_operands(order)))
    for title, order, reused in panels:
        print(f"{title}: of {len(order) - 1} consecutive pairs, {reused.count('a')} share a[i], "
              f"{reused.count('b')} share b[j], {reused.count('')} share nothing")
    pictures.ffma_order(spec, full, rows, cols, panels, "the order of the kernel's inner loop (source), no GPU involved")


def show_occupancy(name: str, arch: str = "sm_90", **params) -> None:
    """How many blocks fit on one SM of `arch`, resource by resource, for these tunables: the budget the
    occupancy in the compile report comes from (registers are allocated per warp, in units of 256;
    from sm_80 on each block's shared memory carries a 1 KiB system reserve). From the compiled build,
    no GPU."""
    spec = registry.get(name)
    build = compile_kernel(spec, params, arch)
    occ, b = build.occupancy, build.occupancy.budget
    threads, warps = spec.threads(build.params), b["warps_per_block"]
    regs = build.resources.registers
    rows = [["threads", f"{threads} ({warps} warps)", f"{b['threads_per_sm']}", occ.limits["threads"]],
            ["registers", f"{regs} per thread -> {b['registers_per_warp']} per warp (units of 256) x {warps} warps "
                          f"= {b['registers_per_warp'] * warps}", f"{b['registers_per_sm']}", occ.limits["registers"]],
            ["blocks", "1", f"{b['blocks_per_sm']}", occ.limits["blocks"]]]
    if "shared memory" in occ.limits:
        rows.insert(2, ["shared memory", occ.shared_need(),
                        f"{b['shared_per_sm']} B", occ.limits["shared memory"]])
    rows = [[r[0], r[1], r[2], f"**{r[3]}**" if r[0] == occ.limited_by else r[3]] for r in rows]
    markdown(table(["resource", "one block needs", f"one SM ({arch}) has", "blocks it allows"], rows)
             + f"\n\n{spec.name} [{spec.config_label(build.params)}]: **{occ.blocks_per_sm} block(s) per SM**, limited by "
             f"{occ.limited_by}: {occ.warps_per_sm} of {occ.max_warps_per_sm} warps ({occ.fraction:.0%} occupancy), "
             f"{occ.warps_per_sm / b['schedulers_per_sm']:g} warps for each of the SM's {b['schedulers_per_sm']} "
             f"schedulers to choose from.")
