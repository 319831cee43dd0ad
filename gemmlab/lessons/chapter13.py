"""Chapter 13: every shape. Small tiles split along K, edges moved inside C; and gemmlab.matmul's plan per
shape among every chapter's kernels."""
from __future__ import annotations

from .. import dispatch, library, plan, plots, records, registry, source, widgets
from .chapter12 import fastest_at_regime_shapes
from .display import markdown, table


def _split_kernel():
    """The course's kernel for shapes between the two sides: the tiled one with shapes of its own to be
    recorded at (spec.regime_shapes; the streaming kernel has some too)."""
    return next(spec for spec in registry.KERNELS.values() if spec.regime_shapes and not spec.streams)


def show_split_regime() -> None:
    """This chapter's kernel at each of its regime shapes (small grids, ragged edges; none of them in the
    suite): its fastest recorded configuration there, how many blocks that launches (tiles times pieces),
    how it copies B, its speed, and cuBLAS's in the same run."""
    spec = _split_kernel()
    rec = source.record()
    rows = []
    for shape, best in fastest_at_regime_shapes(rec, spec).items():
        launch = plan.launch(*shape, kernel=spec, params=best["params"])
        rows.append([records.shape_label(shape), spec.changes_label(best["params"]) or "defaults",
                     f"{launch.tiles:,} x {launch.k_split}",
                     "16 bytes" if launch.fast_tiles == launch.tiles else "4 bytes",
                     f"{best['gflops'] / 1e3:.2f}", f"{best['cublas_gflops'] / 1e3:.2f}", f"{best['ratio']:.2f}"])
    markdown(table(["M x N x K", "fastest configuration (against the defaults)", "tiles x pieces along K",
                    "copies of B", "TFLOP/s", "cuBLAS TFLOP/s", "ratio"], rows)
             + f"\n\n{spec.name}'s fastest of the configurations the sliders offer at each shape, validated, then "
               f"timed interleaved with cuBLAS FP32 in the same run. *{rec.label}*")


def show_plans(shapes: list[tuple[int, int, int]]) -> None:
    """gemmlab.matmul's plan for each shape (dispatch.plan: the model fitted to the record): which
    kernel, configuration and split, how many SMs get a block, and what the model predicts. No timing."""
    plans = [dispatch.plan(*shape) for shape in shapes]
    m = dispatch.model(dispatch.device_facts()[0]["name"])     # the model the plans came from
    rows = []
    for p in plans:
        launch = p.choice.launch
        split = (f"{launch.split_tiles:,} of {launch.tiles:,} tiles in {launch.pieces}" if launch.split_tiles else
                 f"all {launch.tiles:,} in {launch.k_split}" if launch.k_split > 1 else "none")
        rows.append([f"{p.problem.M} x {p.problem.N} x {p.problem.K}", launch.spec.name,
                     launch.spec.changes_label(launch.params) or "defaults", split,
                     f"{min(launch.blocks, launch.sm_count)} of {launch.sm_count}", p.reshaping or "no",
                     f"{p.predicted_us:,.1f}", f"{p.problem.flops / p.predicted_us / 1e6:.1f}"])
    markdown(table(["M x N x K", "kernel", "configuration (against its defaults)", "tiles split along K",
                    "SMs with a block", "reshaped", "predicted us", "predicted TFLOP/s"], rows)
             + f"\n\nPredicted by the {plans[0].basis}: a model, not a measurement. Its fitted constants: a launch "
               f"{m.launch_us:.1f} us; a split tile's chain, per piece: "
               + ", ".join(f"{name}'s {c:.1f} us" for name, c in sorted(m.chain_by_kernel.items()))
               + " (chapter 11's pieces add into C one after another, chapter 13's last piece reads the others' "
                 "partial tiles); a tile on a kernel's slow copy path (rows not 16-byte multiples, or a ragged "
                 f"edge) takes {1 + m.ragged:.2f} times as long"
               + "".join(f", {name}'s {1 + r:.2f}" for name, r in sorted(m.ragged_by_kernel.items()))
               + ". `python -m gemmlab bench matmul --size M N K` times a plan against cuBLAS on a GPU.")


def show_matmul_suite() -> None:
    """gemmlab.matmul against cuBLAS FP32 over the course's shape suite, as recorded (`record --matmul`):
    the table with its geometric mean and smallest ratio, then the ratio over (M, N) for a few K, one
    kernel at its defaults beside the plan per shape."""
    rec = next((r for r in records.load_all() if r.data.get("matmul_suite")), None)
    if rec is None:
        markdown("No record holds gemmlab.matmul's suite yet: on a GPU, `python -m gemmlab record --matmul` "
                 "measures it.")
        return
    rows = rec.data["matmul_suite"]
    markdown(f"```\n{library.suite_table(rows)}\n```\n\nMeasured on {rec.device['name']}, {rows[0]['date']}: "
             f"each shape validated against a float64 product first, then timed interleaved with cuBLAS FP32 in "
             f"the same run, the L2 flushed before every launch, {rows[0]['reps']} runs each (ratio: cuBLAS's time "
             f"over gemmlab.matmul's, above 1 is faster; spread: the timings' interquartile range over their "
             f"median). The whole call is timed, as a user makes it. A plan marked +edges ran peeled (whole tiles, "
             f"then the rows or columns past them by plans of their own), one marked +copyB on a copy of B in 16-byte "
             f"rows.")
    heat = rec.data.get("matmul_heatmap")
    if heat:
        plots.dispatch_heatmaps(heat, heat[0]["kernel"], f"measured on {rec.device['name']}, {heat[0]['date']}")


def show_plan_explorer():
    """The plan, with its reasons, for any M, N and K the reader types."""
    return widgets.plan_explorer()
