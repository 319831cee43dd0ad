"""Chapter 15, the ladder: every kernel against cuBLAS over sizes and shapes."""
from __future__ import annotations

import statistics

from .. import campaigns, course, plots, records, registry, results
from .display import markdown, table


def show_ladder_over_shapes() -> None:
    """Every kernel at its best configuration at course.LADDER_PICK_SIZE, against cuBLAS over the
    ladder's sizes and shapes (live on a GPU, else recorded)."""
    src = results.here()
    rows = src.campaign("ladder", "the ladder over sizes",
                        lambda: campaigns.measure_ladder(results.record().data["results"]))
    # a configuration the chapter showed already at a size (the ladder at 4096, the search) keeps that figure
    rows = [src.same_as_shown(r) for r in rows]
    shapes = [tuple(s) for s in course.LADDER_SHAPES]
    text = _ladder_table(rows, shapes) + "\n\nTFLOP/s (share of cuBLAS timed in the same run). *" + src.label + "*"
    beside = src.beside_section("ladder", "the ladder over sizes")   # a GPU with no record of its own
    if beside:     # with the record's figures as its other tables show them (chapter 08's at 4096, say)
        beside = [results.Recorded(src.reference, "beside").same_as_shown(r) for r in beside]
        text += f"\n\nBeside it, {src.reference.label}:\n\n" + _ladder_table(beside, shapes)
    markdown(text)
    plots.ladder(rows, shapes, src.label, {name: spec.title for name, spec in registry.KERNELS.items()})


def _ladder_table(rows: list[dict], shapes: list[tuple]) -> str:
    by = {(r["kernel"], records.shape_key(r)): r for r in rows}
    # narrow enough for a notebook's page: cubes as 4096³, configurations as their changes from the defaults
    header = ["kernel", "configuration (changes from the defaults)"] + [
        f"{s[0]}³" if s[0] == s[1] == s[2] else records.shape_label(s) for s in shapes]
    body = []
    for name, spec in registry.KERNELS.items():
        cells = [by.get((name, s)) for s in shapes]
        params = next((c["params"] for c in cells if c), None)
        body.append([spec.title, (spec.changes_label(params) or "defaults") if params else "-"] +
                    [f"{c['gflops'] / 1e3:.1f} ({c['ratio']:.0%})" if c else "-" for c in cells])
    cublas = [statistics.median(at) if (at := [r["cublas_gflops"] for r in rows if records.shape_key(r) == s]) else None
              for s in shapes]
    body.append(["cuBLAS FP32", "median over the runs"] + [f"{c / 1e3:.1f}" if c else "-" for c in cublas])
    return table(header, body)
