"""Chapter 10: where the hot loop issues its copies, the ring of copy buffers, the last partial wave
and its split along K, the per-shape search and table against cuBLAS, and the stall profiles."""
from __future__ import annotations

from .. import campaigns, plots, records, registry, sass, source
from ..compile import compile_kernel
from ..spec import Problem
from .models import waves
from .display import markdown, table


def show_copy_placement(name: str, arch: str = "sm_90") -> None:
    """Where the hot loop issues the next tile's copies, in the chapter's last two steps (SPREAD off,
    then on), from the SASS (no GPU needed): what a warp issues between the barrier and its first
    FFMA, and a strip of the whole loop, one tick per instruction."""
    spec = registry.get(name)
    rows, strips = [], []
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
    plots.hot_loop(strips, f"{spec.name}, {arch} SASS of the hot loop (one K tile)")


def _search(spec) -> tuple[list[dict], str]:
    rec = source.record()
    return [r for r in rec.section("final_search", "the per-shape search") if r["kernel"] == spec.name], rec.label


def show_final_search(name: str) -> None:
    """The recorded search behind the final table: every candidate configuration at every shape,
    as a share of cuBLAS in the same run; the one each shape uses is bold in the table, circled
    in the plot."""
    spec = registry.get(name)
    search, label = _search(spec)
    shapes = [tuple(s) for s in spec.shape_search.shapes]
    picks = {s: records.fastest_at(search, s) for s in shapes}
    rows = []
    for cfg in spec.shape_search.candidates:
        full = spec.resolve(cfg)
        cells = {records.shape_key(r): r for r in search if r["params"] == full}
        rows.append([spec.changes_label(full) or "the defaults"]
                    + [("**{:.3f}**" if picks[s] == full else "{:.3f}").format(cells[s]["ratio"])
                       if s in cells else "-" for s in shapes])
    markdown(table(["configuration (changes from the defaults)"] + [records.shape_label(s) for s in shapes], rows)
             + f"\n\nShare of cuBLAS timed in the same run; bold: the fastest at each shape, which the table "
             f"below re-measures. *{label}*")
    plots.final_search(spec, search, shapes, picks, label)


def show_final_table(name: str) -> None:
    """The kernel against cuBLAS over its per-shape search's shapes, each at its own configuration:
    live on a GPU (what `tune` found on this GPU for the shape's size class, else the record's
    per-shape search), else the recorded run."""
    spec = registry.get(name)
    src = source.here()
    rows = [r for r in src.campaign("final", "the final table",
                                    lambda: campaigns.measure_final(spec, lambda shape: src.config_at(spec, shape)))
            if r["kernel"] == spec.name]
    body = [[records.shape_label(records.shape_key(r)), spec.changes_label(r["params"]) or "the defaults",
             f"{r['gflops'] / 1e3:.2f}", f"{r['spread']:.1%}", f"{r['cublas_gflops'] / 1e3:.2f}",
             f"{r['cublas_spread']:.1%}", f"{r['ratio']:.3f}", r["reps"], f"{r['rel_err']:.1e}"] for r in rows]
    markdown(table(["M x N x K", "configuration (changes from the defaults)", f"{spec.title} TFLOP/s", "spread",
                    "cuBLAS TFLOP/s", "spread", "kernel / cuBLAS", "timed runs each", "relative error"], body)
             + f"\n\ndefaults: {spec.config_label(spec.defaults)}; medians of interleaved runs, L2 flushed "
             f"before each; spread = interquartile range / median. *{src.label}*")
    plots.versus(rows, src.label)


def show_stall_profile() -> None:
    """Why warps were not issuing: Nsight Compute's stall reasons per issued instruction, for the
    best configuration of every kernel the record profiles and for cuBLAS's own FP32 kernel.
    The record also profiles the chapters' steps; show_steps shows those."""
    rec = source.record()
    rows = rec.stalls()
    # the first profile of each kernel is its best configuration (the recorder's order)
    rows = [r for i, r in enumerate(rows) if r["kernel"] not in {x["kernel"] for x in rows[:i]}]
    if not rows:
        print(f"no stall profiles in the record ({rec.label}); `python -m gemmlab record --final` on a GPU with ncu")
        return
    shown = records.STALL_REASONS[:6]
    body = []
    for r in rows:
        if r["kernel"] == "cublas":
            name = "cuBLAS FP32"
        else:
            spec = registry.get(r["kernel"])
            name = f"{spec.title} [{spec.config_label(r['params'])}]"
        lost = sum(v for k, v in r["stalls"].items() if k != "not_selected")
        body.append([name, f"{r['issued_per_scheduler']:.2f}", *(f"{r['stalls'][k]:.2f}" for k in shown), f"{lost:.2f}"])
    markdown(table(["kernel", "instructions issued per cycle per scheduler",
                    *(k.replace("_", " ") for k in shown), "all stalls"], body)
             + f"\n\ncycles a warp spent stalled, per instruction it issued, by reason; 'not selected' "
             f"(eligible, but another warp issued) left out of the total. {rows[0]['size']}^3, one launch "
             f"each under `ncu --clock-control none`; {rec.label}")
    plots.stalls(rows, records.STALL_REASONS, rec.label)


def show_stage_ring(name: str, tiles: int = 7, **params) -> None:
    """The STAGES shared-memory buffers of the copy pipeline over the first `tiles` tiles of K: which
    tile each buffer holds while tile t is computed (and which copies are in flight)."""
    spec = registry.get(name)
    full = spec.resolve(params)
    if "STAGES" not in full:
        print(f"{spec.name} has no STAGES tunable: no ring of copy buffers to draw")
        return
    stages = full["STAGES"]
    cells, columns = {}, ["before the loop"]
    for s in range(stages):   # the prologue issues tiles 0 .. STAGES-2
        cells[(0, s)] = ("landed or in flight", s) if s < min(stages - 1, tiles) else ("unused", None)
    for t in range(tiles):
        columns.append(f"computing\ntile {t}")
        for s in range(stages):
            held = next((u for u in range(t, t + stages) if u % stages == s), None)
            if held == t:
                state = "computing"
            elif held >= tiles:
                state, held = "unused", None
            elif held == t + stages - 1:
                state = "copies issued now"
            else:
                state = "landed or in flight"
            cells[(t + 1, s)] = (state, held)
    print(f"{spec.config_label(full)}: tile t is computed from buffer t % {stages}; before that the block waits "
          f"for its copies (cp.async.wait_group {stages - 2}) and a barrier, after which the copies of tile "
          f"t + {stages - 1} go into the buffer tile t - 1 used: {stages - 1} tiles are in flight while one is "
          f"computed.")
    plots.stage_ring(spec, full, cells, columns, stages, "the kernel's pipeline (source), no GPU involved")


def show_last_wave(name: str, M: int = 6144, N: int = 6144, K: int = 6144, slots: int | None = None,
                   sm_count: int = 132, **params) -> None:
    """Tiles run in waves of `slots` blocks at once (SMs x blocks per SM, from the compiled build's
    occupancy unless given): the last partial wave, and how the launch splits its tiles along K
    (spec.launch, spec.split_tiles) when the configuration allows SPLIT pieces."""
    spec = registry.get(name)
    full = spec.resolve(params)
    problem = Problem(M, N, K)
    if slots is None:
        per_sm = compile_kernel(spec, full).occupancy.blocks_per_sm
        slots, how = sm_count * per_sm, f"{sm_count} SMs x {per_sm} block(s) per SM (the build's occupancy)"
    else:
        how = "as given"
    panels = []
    unsplit = {**full, **({"SPLIT": 1} if "SPLIT" in full else {})}
    if spec.split(full) > 1 and spec.is_legal(unsplit):
        panels.append(("not split", waves(spec, spec.resolve(unsplit), problem, slots)))
    panels.append((f"{spec.split(full)} pieces allowed" if spec.split(full) > 1 else "as launched",
                   waves(spec, full, problem, slots)))
    wave = panels[-1][1]
    rows, cols = spec.tile(full)
    lines = [f"{M} x {N} x {K} in {rows} x {cols} tiles: {wave.tiles} tiles, {wave.tiles_k} K tiles each; "
             f"{slots} slots ({how}): {wave.tiles / slots:.2f} waves, the last one "
             + (f"{wave.last_wave} tiles ({wave.last_wave / slots:.0%} of the slots busy)" if wave.last_wave
                else "full")]
    if spec.split(full) > 1:
        lines.append(f"SPLIT={spec.split(full)}: the launch splits {wave.split} tiles into {wave.pieces} pieces "
                     f"each: a grid of {wave.blocks} blocks ({wave.tiles - wave.split} whole tiles, then "
                     f"{wave.split * wave.pieces} pieces)" if wave.split else
                     f"SPLIT={spec.split(full)}: the launch splits nothing here (splitting would not save 1% of a tile)")
    elif spec.split_flags:
        lines.append("SPLIT=1: the launch never splits; pass SPLIT=4 (say) to see the last wave split along K")
    else:
        lines.append(f"{spec.name} cannot split tiles along K (no SPLIT): every tile is one block")
    for title, w in panels:
        lines.append(f"model, {title}: done after {w.makespan:.2f} tile-times")
    print("\n".join(lines))
    plots.wave_schedule(spec, panels, "a model of the launch (spec.launch), not a measurement")


def issue_slots(rec) -> list[dict]:
    """From the record's profiles (the best configuration of each profiled kernel, and cuBLAS): what
    share of the FP32 peak the issue rate and the FFMA share of issued instructions allow, against
    the speed measured at the same size. Every scheduler issuing one FFMA of 32 lanes every cycle
    would be the peak; `rest` is what the two counters leave unexplained (cycles an SM holds no
    work, a clock below the attribute's, lanes switched off)."""
    peak = rec.device["peak_fp32_tflops"] * 1e3
    rows, seen = [], set()
    for p in rec.stalls():
        if p["kernel"] in seen or not p.get("instructions"):
            continue
        seen.add(p["kernel"])
        size = (p["size"],) * 3
        if p["kernel"] == "cublas":
            runs = [r["cublas_gflops"] for r in rec.data["results"] if records.shape_key(r) == size]
            measured, name = sorted(runs)[len(runs) // 2], "cuBLAS FP32 (median over the record's runs)"
        else:
            spec = registry.get(p["kernel"])
            measured = rec.result(spec.name, p["params"], size)["gflops"]
            name = f"{spec.title} [{spec.changes_label(p['params']) or 'the defaults'}]"
        ffma_share = p["ffma_thread_instructions"] / 32 / p["instructions"]
        allowed = peak * p["issued_per_scheduler"] * ffma_share
        rows.append({"name": name, "size": p["size"], "issue": p["issued_per_scheduler"], "ffma_share": ffma_share,
                     "allowed": allowed, "measured": measured, "rest": measured / allowed})
    return rows


def show_issue_slots() -> None:
    """The issue-slot view, from the recorded counters: FP32 peak x issue rate x FFMA share x the
    rest = the measured speed. Past the memory roofs, this is where the distance to the peak goes."""
    rec = source.record()
    rows = issue_slots(rec)
    if not rows:
        print(f"no profiles with instruction counts in the record ({rec.label})")
        return
    peak = rec.device["peak_fp32_tflops"]
    markdown(table(["kernel", "FP32 peak TFLOP/s", "issued per cycle per scheduler", "FFMAs among them",
                    "peak x issue x FFMA share", "measured", "the rest"],
                   [[r["name"], f"{peak:.1f}", f"{r['issue']:.2f}", f"{r['ffma_share']:.2f}",
                     f"{r['allowed'] / 1e3:.1f}", f"{r['measured'] / 1e3:.1f}", f"{r['rest']:.2f}"] for r in rows])
             + f"\n\nat {rows[0]['size']}^3; issue rate and instruction counts from one launch each under "
             f"`ncu --clock-control none`, speeds from the record's timed runs; {rec.label}")
