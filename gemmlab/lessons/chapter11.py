"""Chapter 11: the last partial wave and its split along K, and the final kernel's per-shape search
and table against cuBLAS."""
from __future__ import annotations

from .. import campaigns, config_plots, launch, pictures, plots, records, registry, results
from ..compile import DEFAULT_ARCH, compile_kernel
from ..compile_aside import precompile
from ..spec import Problem
from .models import waves
from .display import markdown, table


def show_last_wave(name: str, M: int = 6144, N: int = 6144, K: int = 6144, slots: int | None = None,
                   sm_count: int = 132, **params) -> None:
    """Tiles run in waves of `slots` blocks at once (SMs x blocks per SM, from the compiled build's
    occupancy unless given): the last partial wave, and how the launch splits its tiles along K
    (spec.launch, spec.split_tiles) when the configuration allows SPLIT pieces."""
    spec = registry.get(name)
    full = spec.resolve(params)
    problem = Problem(M, N, K)
    if slots is None:
        precompile([(spec.name, full, DEFAULT_ARCH)], progress=True)     # its occupancy: seconds to compile, once
        per_sm = compile_kernel(spec, full).occupancy.blocks_per_sm
        slots, how = sm_count * per_sm, f"{sm_count} SMs x {per_sm} block{'s' if per_sm > 1 else ''} per SM, the build's occupancy"
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
    lines = [f"{M} x {N} x {K} in {rows} x {cols} tiles: {wave.tiles:,} tiles, {wave.tiles_k:,} K tiles each; "
             f"{slots:,} slots ({how}): {wave.tiles / slots:.2f} waves, the last one "
             + (f"{wave.last_wave:,} tiles ({wave.last_wave / slots:.0%} of the slots busy)" if wave.last_wave
                else "full")]
    if spec.split(full) > 1:
        lines.append(f"SPLIT={spec.split(full)}: the launch splits {wave.split:,} tiles into {wave.pieces} pieces "
                     f"each: a grid of {wave.blocks:,} blocks ({wave.tiles - wave.split:,} whole tiles, then "
                     f"{wave.split * wave.pieces:,} pieces)" if wave.split else
                     f"SPLIT={spec.split(full)}: the launch splits nothing here (splitting would not save 1% of a tile)")
    elif spec.split_flags:
        lines.append("SPLIT=1: the launch never splits; pass SPLIT=4 (say) to see the last wave split along K")
    else:
        lines.append(f"{spec.name} cannot split tiles along K (no SPLIT): every tile is one block")
    for title, w in panels:
        lines.append(f"model, {title}: done after {w.makespan:.2f} tile-times")
    print("\n".join(lines))
    pictures.wave_schedule(spec, panels, "a model of the launch (spec.launch), not a measurement")


def _search(spec) -> tuple[list[dict], str]:
    rec = results.record()
    return [r for r in rec.section("final_search", "the per-shape search") if r["kernel"] == spec.name], rec.label


def show_final_search(name: str) -> None:
    """The recorded search behind the final table: every candidate configuration at every shape,
    as a share of cuBLAS in the same run; the one each shape uses is bold in the table, circled
    in the plot."""
    spec = registry.get(name)
    search, label = _search(spec)
    search_plan = registry.programme(spec).shape_search
    shapes = [tuple(s) for s in search_plan.shapes]
    picks = {s: records.fastest_at(search, s) for s in shapes}
    rows = []
    for cfg in search_plan.candidates:
        full = spec.resolve(cfg)
        cells = {records.shape_key(r): r for r in search if r["params"] == full}
        rows.append([spec.changes_label(full) or "the defaults"]
                    + [("**{:.3f}**" if picks[s] == full else "{:.3f}").format(cells[s]["ratio"])
                       if s in cells else "-" for s in shapes])
    markdown(table(["configuration (changes from the defaults)"] + [records.shape_label(s) for s in shapes], rows)
             + f"\n\nShare of cuBLAS timed in the same run; bold: the fastest at each shape, which the table "
             f"below re-measures. *{label}*")
    config_plots.final_search(spec, search, shapes, picks, label)


def show_final_table(name: str) -> None:
    """The kernel against cuBLAS over its per-shape search's shapes, each at its own configuration:
    live on a GPU (what `tune` found on this GPU for the shape's size class, else the record's
    per-shape search), else the recorded run."""
    spec = registry.get(name)
    src = results.here()
    rows = [r for r in src.campaign("final", "the final table",
                                    lambda: campaigns.measure_final(spec, lambda shape: src.config_at(spec, shape)))
            if r["kernel"] == spec.name]
    ref = {records.shape_key(r): r["ratio"] for r in src.beside_section("final", "the final table") or []
           if r["kernel"] == spec.name}
    body = [[records.shape_label(records.shape_key(r)), spec.changes_label(r["params"]) or "the defaults",
             f"{r['gflops'] / 1e3:.2f}", f"{r['spread']:.1%}", f"{r['cublas_gflops'] / 1e3:.2f}",
             f"{r['cublas_spread']:.1%}", f"{r['ratio']:.3f}", r["reps"], f"{r['rel_err']:.1e}",
             *([f"{ref[records.shape_key(r)]:.3f}" if records.shape_key(r) in ref else "-"] if ref else [])]
            for r in rows]
    markdown(table(["M x N x K", "configuration (changes from the defaults)", f"{spec.title} TFLOP/s", "spread",
                    "cuBLAS TFLOP/s", "spread", "kernel / cuBLAS", "timed runs each", "relative error",
                    *([f"{src.reference.device['name']} record: kernel / cuBLAS"] if ref else [])], body)
             + f"\n\ndefaults: {spec.config_label(spec.defaults)}; medians of interleaved runs, L2 flushed "
             f"before each; spread = interquartile range / median. *{src.label}*"
             + (f" Beside it: {src.reference.label}." if ref else ""))
    plots.versus(rows, src.label)


def show_shape_costs(name: str, shapes: list[tuple[int, int, int]]) -> None:
    """What each shape costs the kernel against a large square, from arithmetic alone (launch.launch, as
    `python -m gemmlab plan M N K --kernel NAME` prints it): waves, the copy path, the tiles' area, the roofline."""
    launches = [launch.launch(*shape, kernel=name) for shape in shapes]
    rows = [[f"{l.problem.M} x {l.problem.N} x {l.problem.K}", f"{l.tiles:,}", f"{l.slot_use:.0%}",
             f"{l.fast_tiles:,}" if l.fast_tiles is not None else "-", f"{l.covered:.0%}",
             f"{l.intensity:.3g} (ridge {l.ridge:.0f})", "<br>".join(l.findings()) or "nothing"]
            for l in launches]
    markdown(table(["M x N x K", "tiles", "slots' time busy", "tiles on the 16-byte path", "tiles' area inside C",
                    "FLOPs per DRAM byte", "what costs speed"], rows)
             + f"\n\n{launches[0].spec.name} at its defaults on {launches[0].gpu}: arithmetic from the spec and "
               f"the build, no timing. The ridge is the FP32 peak over the DRAM bandwidth the GPU reports "
               f"({results.here().device()['dram_gbs'] / 1e3:.2f} TB/s); a roofline drawn at the bandwidth a copy reaches bends a "
               f"little further right.")
