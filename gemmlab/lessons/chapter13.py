"""Chapter 13: every shape. Small tiles split along K, edges moved inside C (chapter 14 shows the plan that
picks among every chapter's kernels)."""
from __future__ import annotations

from .. import launch, records, registry, results
from ..compile_aside import precompile
from .chapter12 import fastest_at_regime_shapes
from .display import markdown, table


def _split_kernel():
    """The course's kernel for shapes between the two sides: the tiled one with shapes of its own to be
    recorded at (its programme's regime_shapes; the streaming kernel has some too)."""
    return next(spec for spec in registry.KERNELS.values()
                if registry.programme(spec).regime_shapes and not registry.model(spec).streams)


def _stores_of_c(params: dict, shape) -> str:
    """How the kernel's epilogue stores C: 16 bytes at a time where C's rows are 16-byte multiples, else 4 bytes at a
    time from the registers, or through shared memory a row at a time (STAGE_C)."""
    if shape[1] % 4 == 0:
        return "16 bytes"
    return "a row at a time, staged" if params.get("STAGE_C") else "4 bytes"


def show_split_regime() -> None:
    """This chapter's kernel at each of its regime shapes (small grids, ragged edges; none of them in the
    suite): its fastest recorded configuration there, how many blocks that launches (tiles times pieces),
    how it copies B and stores C, its speed, and cuBLAS's in the same run."""
    spec = _split_kernel()
    rec = results.record()
    rows = []
    fastest = fastest_at_regime_shapes(rec, spec)
    arch = results.here().device()["arch"]     # what launch.launch compiles for: each build's occupancy
    precompile([(spec.name, best["params"], arch) for best in fastest.values()], progress=True)
    for shape, best in fastest.items():
        shown = launch.launch(*shape, kernel=spec, params=best["params"])
        rows.append([records.shape_label(shape), spec.changes_label(best["params"]) or "defaults",
                     f"{shown.tiles:,} x {shown.k_split}",
                     "16 bytes" if shown.fast_tiles == shown.tiles else "4 bytes", _stores_of_c(best["params"], shape),
                     f"{best['gflops'] / 1e3:.2f}", f"{best['cublas_gflops'] / 1e3:.2f}", f"{best['ratio']:.2f}"])
    markdown(table(["M x N x K", "fastest configuration (against the defaults)", "tiles x pieces along K",
                    "copies of B", "stores of C", "TFLOP/s", "cuBLAS TFLOP/s", "ratio"], rows)
             + f"\n\n{spec.name}'s fastest of the configurations the sliders offer at each shape, validated, then "
               f"timed interleaved with cuBLAS FP32 in the same run. *{rec.label}*")
