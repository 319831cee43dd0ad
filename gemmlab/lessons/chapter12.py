"""Chapter 12: skinny products on the memory-bound side of the roofline."""
from __future__ import annotations

from .. import plots, records, registry, results
from ..spec import Problem
from .display import markdown, table


def _streaming_kernel():
    """The course's kernel for the memory-bound side (the spec that streams an operand)."""
    return next(spec for spec in registry.KERNELS.values() if registry.model(spec).streams)


def _dram_gbs(row: dict) -> float:
    """What a timed row moved through DRAM at least (every operand once), per second."""
    return Problem(*records.shape_key(row)).operand_bytes / (row["ms"] * 1e-3) / 1e9


def fastest_at_regime_shapes(rec, spec) -> dict[tuple, dict]:
    """The kernel's fastest recorded configuration at each of its regime shapes (its programme's) the
    record holds."""
    rows = rec.results(spec.name)
    fastest = {}
    for shape in registry.programme(spec).regime_shapes:
        timed = [r for r in rows if records.shape_key(r) == tuple(shape)]
        if timed:
            fastest[tuple(shape)] = max(timed, key=lambda r: r["gflops"])
    return fastest


def show_skinny_regime() -> None:
    """The streaming kernel at each of its regime shapes (skinny, none of them in the suite): its fastest
    configuration there as recorded, its speed, the DRAM bandwidth that speed implies (every operand read
    once) against what a plain copy reached on the same GPU, and cuBLAS in the same run."""
    spec = _streaming_kernel()
    rec = results.record()
    copy = rec.device.get("measured_copy_gbs")
    rows = []
    for shape, best in fastest_at_regime_shapes(rec, spec).items():
        rows.append([records.shape_label(shape), spec.changes_label(best["params"]) or "defaults",
                     f"{Problem(*shape).intensity:.2g}", f"{best['gflops'] / 1e3:.2f}", f"{best['cublas_gflops'] / 1e3:.2f}",
                     f"{best['ratio']:.2f}", f"{_dram_gbs(best):,.0f}" + (f" ({_dram_gbs(best) / copy:.0%})" if copy else "")])
    markdown(table(["M x N x K", "fastest configuration (against the defaults)", "FLOPs per byte", "TFLOP/s",
                    "cuBLAS TFLOP/s", "ratio", "DRAM GB/s (of a copy's)"], rows)
             + f"\n\n{spec.name}'s fastest of the configurations the sliders offer at each shape, validated, then "
               f"timed interleaved with cuBLAS FP32 in the same run. DRAM GB/s counts every operand once, the least "
               f"any kernel must move; a plain device-to-device copy reached {copy:,.0f} GB/s on the same GPU. "
               f"*{rec.label}*")


def show_skinny_roofline() -> None:
    """The roofline with skinny shapes on it: the streaming kernel's fastest configuration and cuBLAS at
    each regime shape, at the compulsory intensity (every operand once)."""
    spec = _streaming_kernel()
    rec = results.record()
    peak, bandwidth = results.ceilings(rec)          # the record's points under the record's GPU's roof
    points, theirs = [], []
    for shape, best in fastest_at_regime_shapes(rec, spec).items():
        points.append((records.shape_label(shape), Problem(*shape).intensity, best["gflops"]))
        theirs.append(best["cublas_gflops"])
    plots.roofline(points, peak, bandwidth, rec.label,
                   note=f"{spec.name} and cuBLAS FP32 at each shape, at the compulsory intensity",
                   partners=(theirs, f"{spec.name} (fastest recorded configuration)", "cuBLAS FP32, same run"))
