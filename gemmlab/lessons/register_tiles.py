"""Chapters 05-10: register tiles, unrolling, warp tiles, and a chapter's steps one at a time."""
from __future__ import annotations

import json

from .. import plots, registry, sass, source
from ..compile import compile_kernel
from .display import markdown, table


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
    rows = []
    for value in spec.tunable(tunable).offered:
        cfg = {**params, tunable: value}
        if not spec.is_legal(cfg):
            continue
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
    plots.warp_tiling(spec, full, spec.geometry(full), "drawn from the registry's parameters")


def show_steps(name: str, size: int = 4096) -> None:
    """The chapter's additions switched on one at a time (the spec's steps): time against cuBLAS
    (live, else recorded), how the hot loop's FFMAs get their operands (from the SASS), and the
    recorded Nsight Compute issue rate and dispatch / wait stalls where the record has them."""
    spec = registry.get(name)
    src = source.here()
    stalls = {json.dumps(r["params"], sort_keys=True): r for r in source.record().stalls() if r["kernel"] == spec.name}
    rows = []
    for (caption, _), full in zip(spec.steps, spec.step_configs()):
        row = src.result(spec, full, size)
        reads = sass.operand_reads(compile_kernel(spec, full))
        prof = stalls.get(json.dumps(full, sort_keys=True))
        issue, dispatch, wait = ((f"{prof['issued_per_scheduler']:.2f}", f"{prof['stalls']['dispatch_stall']:.2f}",
                                  f"{prof['stalls']['wait']:.2f}") if prof else ("-", "-", "-"))
        rows.append([caption, f"{row['gflops'] / 1e3:.2f}", f"{row['ratio']:.1%}",
                     f"{reads['from_cache'] / reads['ffma']:.2f}", f"{reads['same_bank'] / reads['ffma']:.1%}",
                     issue, dispatch, wait])
    markdown(table(["step", "TFLOP/s", "of cuBLAS (same run)", "FFMA operands from the reuse cache",
                    "FFMAs with two reads in one bank", "issued per cycle per scheduler",
                    "dispatch stalls", "wait stalls"], rows)
             + f"\n\n{spec.name} [{spec.config_label(spec.step_configs()[-1])}] at {size}^3, "
             f"each step validated before timing. *{src.label}*. Operand columns: static counts over the hot "
             f"loop's FFMAs in the sm_90 SASS. Stalls: cycles per issued instruction, from the record's "
             f"Nsight Compute profiles ('-' where the record has none).")
