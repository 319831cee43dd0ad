"""Chapter 12: skinny products on the memory-bound side of the roofline, and gemmlab.matmul's plan per
shape among every chapter's kernels."""
from __future__ import annotations

from .. import dispatch, library, plots, records, registry, source, widgets
from ..spec import Problem
from .display import markdown, table


def _streaming_kernel():
    """The course's kernel for the memory-bound side (the spec that streams an operand)."""
    return next(spec for spec in registry.KERNELS.values() if spec.streams)


def _dram_gbs(row: dict) -> float:
    """What a timed row moved through DRAM at least (every operand once), per second."""
    return Problem(*records.shape_key(row)).operand_bytes / (row["ms"] * 1e-3) / 1e9


def _fastest_at_regime_shapes(rec, spec) -> dict[tuple, dict]:
    """The spec's fastest recorded configuration at each of its regime shapes the record holds."""
    rows = rec.results(spec.name)
    fastest = {}
    for shape in spec.regime_shapes:
        timed = [r for r in rows if records.shape_key(r) == tuple(shape)]
        if timed:
            fastest[tuple(shape)] = max(timed, key=lambda r: r["gflops"])
    return fastest


def show_skinny_regime() -> None:
    """The streaming kernel at each of its regime shapes (skinny, none of them in the suite): its fastest
    configuration there as recorded, its speed, the DRAM bandwidth that speed implies (every operand read
    once) against what a plain copy reached on the same GPU, and cuBLAS in the same run."""
    spec = _streaming_kernel()
    rec = source.record()
    copy = rec.device.get("measured_copy_gbs")
    rows = []
    for shape, best in _fastest_at_regime_shapes(rec, spec).items():
        rows.append([records.shape_label(shape), spec.changes_label(best["params"]) or "defaults",
                     f"{Problem(*shape).intensity:.2g}", f"{best['gflops'] / 1e3:.2f}", f"{best['cublas_gflops'] / 1e3:.2f}",
                     f"{best['ratio']:.2f}", f"{_dram_gbs(best):,.0f}" + (f" ({_dram_gbs(best) / copy:.0%})" if copy else "")])
    markdown(table(["M x N x K", "fastest configuration (against the defaults)", "FLOPs per byte", "TFLOP/s",
                    "cuBLAS TFLOP/s", "ratio", "DRAM GB/s (of a copy's)"], rows)
             + f"\n\n{spec.name}'s fastest of the configurations the sliders offer at each shape, validated, then "
               f"timed interleaved with cuBLAS FP32 in the same run. DRAM GB/s counts every operand once, the least "
               f"any kernel must move; a plain device-to-device copy reached {copy:,.0f} GB/s on this GPU. "
               f"*{rec.label}*")


def show_skinny_roofline() -> None:
    """The roofline with skinny shapes on it: the streaming kernel's fastest configuration and cuBLAS at
    each regime shape, at the compulsory intensity (every operand once)."""
    spec = _streaming_kernel()
    rec = source.record()
    peak, bandwidth = source.ceilings()
    points = []
    for shape, best in _fastest_at_regime_shapes(rec, spec).items():
        x = Problem(*shape).intensity
        points += [(records.shape_label(shape), x, best["gflops"]),
                   (f"cuBLAS {records.shape_label(shape)}", x, best["cublas_gflops"])]
    plots.roofline(points, peak, bandwidth, rec.label,
                   note=f"{spec.name} (fastest recorded configuration) and cuBLAS FP32, at the compulsory intensity")


def show_plans(shapes: list[tuple[int, int, int]]) -> None:
    """gemmlab.matmul's plan for each shape (dispatch.plan: the model fitted to the record): which
    kernel, configuration and split, how many SMs get a block, and what the model predicts. No timing."""
    plans = [dispatch.plan(*shape) for shape in shapes]
    m = dispatch.model(dispatch.device_facts()[0]["name"])     # the model the plans came from
    rows = []
    for p in plans:
        launch = p.choice.launch
        split = (f"{launch.split_tiles:,} of {launch.tiles:,} tiles in {launch.pieces}" if launch.split_tiles else "none")
        rows.append([f"{p.problem.M} x {p.problem.N} x {p.problem.K}", launch.spec.name,
                     launch.spec.changes_label(launch.params) or "defaults", split,
                     f"{min(launch.blocks, launch.sm_count)} of {launch.sm_count}",
                     f"{p.choice.predicted_us:,.1f}", f"{p.problem.flops / p.choice.predicted_us / 1e6:.1f}"])
    markdown(table(["M x N x K", "kernel", "configuration (against its defaults)", "tiles split along K",
                    "SMs with a block", "predicted us", "predicted TFLOP/s"], rows)
             + f"\n\nPredicted by the {plans[0].basis}: a model, not a measurement. Its fitted constants: a launch "
               f"{m.launch_us:.1f} us; the pieces of a split tile add into C one after another, {m.chain_us:.1f} us "
               f"each; a tile on the checked copy path (rows not 16-byte multiples, or a ragged edge) takes "
               f"{1 + m.ragged:.2f} times as long. `python -m gemmlab bench matmul --size M N K` times a plan against "
               f"cuBLAS on a GPU.")


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
             f"median). The whole call is timed, as a user makes it.")
    heat = rec.data.get("matmul_heatmap")
    if heat:
        plots.dispatch_heatmaps(heat, heat[0]["kernel"], f"measured on {rec.device['name']}, {heat[0]['date']}")


def show_plan_explorer():
    """The plan, with its reasons, for any M, N and K the reader types."""
    return widgets.plan_explorer()
