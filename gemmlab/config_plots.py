"""Charts of one kernel's configurations measured: every configuration at one size (bars, or a
heatmap over the tunables that matter most), a tuner's search, the final chapter's per-shape
search, and the explorer's bars (one configuration against cuBLAS and the peak, as PNG bytes)."""
from __future__ import annotations

import io

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .plots import finish


def config_bars(spec, rows, label: str):
    """TFLOP/s of each configuration at one size, cuBLAS from the same runs as a line. Up to 16
    configurations: a bar each (on a log axis where cuBLAS is more than 5x the best, so that the
    bars and the gap both show); more: a heatmap over the two tunables that move the best result
    most (config_heatmap)."""
    if not rows:
        return
    if len(rows) > 16 and len(_varying(spec, rows)) >= 2:
        config_heatmap(spec, rows, label)
        return
    rows = sorted(rows, key=lambda r: r["gflops"])
    ys = np.array([r["gflops"] for r in rows]) / 1e3
    err = ys * np.array([r.get("spread", 0.0) for r in rows]) / 2
    cublas = np.median([r["cublas_gflops"] for r in rows]) / 1e3
    fig, ax = plt.subplots(figsize=(7.5, 0.3 * len(rows) + 1.5))
    names = [spec.config_label(r["params"]) for r in rows]
    left = 0.0
    if cublas > 5 * ys.max():
        ax.set_xscale("log")
        left = 10 ** np.floor(np.log10(ys.min() / 1.5))
    ax.barh(names, ys - left, left=left, xerr=err, color="C0", error_kw={"lw": 0.8, "capsize": 2})
    for y, (v, r) in enumerate(zip(ys, rows)):   # on white, above cuBLAS's line where they reach it
        ax.annotate(f"{v:.2f} ({r['ratio']:.1%} of cuBLAS)", (v, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=6.5, zorder=3, bbox=dict(fc="white", ec="none", pad=0.3, alpha=0.85))
    ax.axvline(cublas, color="C3", ls="--", lw=1, zorder=2)
    ax.set_xlim(left or 0, cublas * (1.6 if left else 1.12))
    ax.set_xlabel("TFLOP/s" + (" (log scale)" if left else "") + "; error bars: interquartile range of the runs")
    # the line is named in the title: a legend box in the axes sat on a bar's figures
    ax.set_title(f"{spec.title}: every configuration offered, at {_shape(rows[0])}\n"
                 f"best / worst = {ys.max() / ys.min():.2f}x; red dashed line: cuBLAS (median over these runs), "
                 f"{cublas:.1f}", fontsize=9)
    ax.tick_params(axis="y", labelsize=7)
    finish(fig, label)


def _shape(row) -> str:
    return "x".join(str(row[k]) for k in ("M", "N", "K"))


def _varying(spec, rows) -> list[str]:
    """The tunables that take several values among rows, those that move the best TFLOP/s most
    first (the range of the best per value), then those with more values."""
    def best_per_value(name):
        best: dict[int, float] = {}
        for r in rows:
            v = r["params"][name]
            best[v] = max(best.get(v, 0.0), r["gflops"])
        return best
    best = {p.name: best_per_value(p.name) for p in spec.params if len({r["params"][p.name] for r in rows}) > 1}
    return sorted(best, key=lambda n: (-(max(best[n].values()) - min(best[n].values())), -len(best[n])))


def config_heatmap(spec, rows, label: str, cells: int = 48):
    """Many configurations at one size. Left: the configurations the sliders offer as a matrix, the
    tunables that move the best result most on its axes (the first and third down, the second and
    fourth across, as many as fit in `cells` cells); each cell the best TFLOP/s over any tunables
    left out, with its share of cuBLAS; the best outlined. Right: every configuration as a dot,
    fastest first."""
    from matplotlib.patches import Rectangle
    offered = [r for r in rows if all(r["params"][p.name] in p.offered for p in spec.params)] or rows
    order, count = [], 1
    for name in _varying(spec, offered):
        values = len({r["params"][name] for r in offered})
        if len(order) < 2 or (len(order) < 4 and count * values <= cells):
            order.append(name)
            count *= values
    down, across = order[0::2], order[1::2]
    left_out = [n for n in _varying(spec, offered) if n not in order]
    key = lambda r, names: tuple(r["params"][n] for n in names)
    ys = sorted({key(r, down) for r in offered})
    xs = sorted({key(r, across) for r in offered})
    grid = np.full((len(ys), len(xs)), np.nan)
    share = np.full_like(grid, np.nan)
    for r in offered:
        i, j = ys.index(key(r, down)), xs.index(key(r, across))
        if np.isnan(grid[i, j]) or r["gflops"] / 1e3 > grid[i, j]:
            grid[i, j], share[i, j] = r["gflops"] / 1e3, r["ratio"]
    best = max(offered, key=lambda r: r["gflops"])
    cublas = np.median([r["cublas_gflops"] for r in rows]) / 1e3
    fig, (ax, az) = plt.subplots(1, 2, figsize=(max(10, 0.9 * len(xs) + 6.5), max(3.6, 0.5 * len(ys) + 2.3)),
                                 gridspec_kw={"width_ratios": [max(len(xs), 3), 3.2]})
    top = np.nanmax(grid)
    im = ax.imshow(grid, cmap="viridis", vmin=top / 2, vmax=top, aspect="auto")
    for (i, j), v in np.ndenumerate(grid):
        if np.isnan(v):
            ax.text(j, i, "-", ha="center", va="center", fontsize=8, color="0.5")
        else:
            ax.text(j, i, (f"{v:.1f}" if v >= 10 else f"{v:.3g}") + (f"\n{share[i, j]:.1%}" if share[i, j] < 0.1
                                                                    else f"\n{share[i, j]:.0%}"),
                    ha="center", va="center", fontsize=7,
                    color="white" if v < top * 0.8 else "black")
    ax.add_patch(Rectangle((xs.index(key(best, across)) - 0.5, ys.index(key(best, down)) - 0.5), 1, 1,
                           fill=False, ec="C3", lw=2.5))
    tick = lambda names, values: "\n".join(f"{n}={v}" for n, v in zip(names, values))
    ax.set_xticks(range(len(xs)), [tick(across, x) for x in xs], fontsize=7)
    ax.set_yticks(range(len(ys)), [tick(down, y).replace("\n", " ") for y in ys], fontsize=7)
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02).set_label("TFLOP/s", fontsize=8)
    ax.set_title(f"TFLOP/s and share of cuBLAS" + (f", the best over {', '.join(left_out)}" if left_out else "")
                 + f"\nred: the best, {spec.changes_label(best['params']) or 'the defaults'}; -: no legal configuration",
                 fontsize=8)
    ranked = sorted((r["gflops"] / 1e3 for r in rows), reverse=True)
    az.plot(range(1, len(ranked) + 1), ranked, "o", ms=3, color="C0")
    az.axhline(cublas, color="C3", ls="--", lw=1, label=f"cuBLAS, {cublas:.1f}")
    if cublas > 5 * ranked[0]:
        az.set_yscale("log")
    else:
        az.set_ylim(0, cublas * 1.1)
    az.set_xlabel("configuration, fastest first")
    az.xaxis.get_major_locator().set_params(integer=True)
    az.set_ylabel("TFLOP/s" + (" (log scale)" if cublas > 5 * ranked[0] else ""))
    az.set_title(f"all {len(rows)} configurations measured", fontsize=8)
    az.legend(fontsize=7, loc="best")           # where no dot is (a fixed corner covered the slowest ones)
    az.grid(alpha=0.2)
    fig.suptitle(f"{spec.title}: every configuration at {_shape(rows[0])} (best / worst = "
                 f"{ranked[0] / ranked[-1]:.2f}x)", fontsize=9)
    finish(fig, label)


# The explorer's chart is redrawn by a slider's callback, outside any cell: there pyplot's figure manager
# and the inline backend's display hooks are not to be relied on (under ipykernel 7 a redraw from the
# browser came out half drawn). So it is a Figure of its own, in matplotlib's default style at a fixed
# resolution, rendered to PNG here: the same bytes in any kernel, whatever its backend or settings.
EXPLORER_DPI = 100


def _default_style():
    return matplotlib.rc_context({k: v for k, v in matplotlib.rcParamsDefault.items() if k != "backend"})


def explorer_bars(title: str, kernel_gflops: float, cublas_gflops: float, peak_gflops: float, label: str) -> Figure:
    """The kernel, cuBLAS and the FP32 peak; on a log axis where the kernel is under a fifth of
    cuBLAS, so that a kernel at 1% of it is still a bar."""
    with _default_style():
        fig = Figure(figsize=(6.5, 1.9), dpi=EXPLORER_DPI)
        ax = fig.subplots()
        values = np.array([peak_gflops, cublas_gflops, kernel_gflops]) / 1e3
        left = 0.0
        if cublas_gflops > 5 * kernel_gflops:
            ax.set_xscale("log")
            left = 10 ** np.floor(np.log10(values.min() / 1.5))
        ax.barh(["FP32 peak", "cuBLAS", title], values - left, left=left, color=["0.8", "C3", "C0"])
        ax.set_xlabel("TFLOP/s" + (" (log scale)" if left else ""))
        ax.set_xlim(left or 0, values.max() * (2.5 if left else 1.18))
        for y, v in enumerate(values):
            ax.annotate(f"{v:.2f}" + (f" ({kernel_gflops / cublas_gflops:.1%} of cuBLAS)" if y == 2 else ""), (v, y),
                        xytext=(3, 0), textcoords="offset points", fontsize=8, va="center")
        fig.text(0.99, 0.01, label, ha="right", va="bottom", fontsize=7, color="0.4")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def explorer_bars_png(title: str, kernel_gflops: float, cublas_gflops: float, peak_gflops: float,
                      label: str) -> bytes:
    """explorer_bars as PNG bytes, the same in any kernel."""
    with _default_style():
        out = io.BytesIO()
        explorer_bars(title, kernel_gflops, cublas_gflops, peak_gflops, label).savefig(
            out, format="png", dpi=EXPLORER_DPI, metadata={"Software": None})
    return out.getvalue()


TUNING_COLUMNS = 4


def tuning(spec, rows, label: str):
    """Every configuration of a search: GFLOP/s against each tunable, the best circled."""
    varying = [p.name for p in spec.params if len({r["params"][p.name] for r in rows}) > 1]
    # at most TUNING_COLUMNS panels a row: eight in one row made a figure twice a notebook's width, whose text
    # the page then shrank to a few pixels
    cols = min(max(len(varying), 1), TUNING_COLUMNS)
    lines = -(-max(len(varying), 1) // cols)
    fig, grid = plt.subplots(lines, cols, figsize=(2.2 * cols + 1, 2.7 * lines + 0.3), sharey=True, squeeze=False)
    for ax in grid.flat[len(varying):]:
        ax.set_visible(False)
    axes = grid.flat[:max(len(varying), 1)]
    best = max(rows, key=lambda r: r["gflops"])
    rng = np.random.default_rng(0)
    for ax, name in zip(axes, varying):
        values = sorted({r["params"][name] for r in rows})
        xs = [values.index(r["params"][name]) + rng.uniform(-0.15, 0.15) for r in rows]
        ax.scatter(xs, [r["gflops"] / 1e3 for r in rows], s=12, alpha=0.7)
        ax.scatter([values.index(best["params"][name])], [best["gflops"] / 1e3], s=80, facecolors="none",
                   edgecolors="C3")
        ax.set_xticks(range(len(values)), [str(v) for v in values])
        ax.set_xlabel(name)
        ax.grid(alpha=0.2)
    for row in grid:
        row[0].set_ylabel("TFLOP/s")
    for ax in axes:
        ax.axhline(np.median([r["cublas_gflops"] for r in rows]) / 1e3, color="C3", ls="--", lw=1)
    fig.suptitle(f"{spec.title}: {len(rows)} configurations at {rows[0]['M']}x{rows[0]['N']}x{rows[0]['K']} "
                 f"(dashed: cuBLAS)", fontsize=9)
    finish(fig, label)


def final_search(spec, search, shapes, picks, label: str):
    """Every candidate configuration (rows) at every shape (columns) as a share of cuBLAS in the
    same run, white at 1.0; the pick at each shape (`picks`: shape -> params) outlined."""
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle
    configs = []
    for r in search:
        if r["params"] not in configs:
            configs.append(r["params"])
    grid = np.full((len(configs), len(shapes)), np.nan)
    for r in search:
        shape = (r["M"], r["N"], r["K"])
        if shape in shapes:
            grid[configs.index(r["params"]), shapes.index(shape)] = r["ratio"]
    fig, ax = plt.subplots(figsize=(2.2 + 1.25 * len(shapes) + 2.6, 0.3 * len(configs) + 1.9))
    spread = max(np.nanmax(np.abs(grid - 1)), 0.01)
    im = ax.imshow(grid, cmap="RdBu", norm=TwoSlopeNorm(1.0, 1 - spread, 1 + spread), aspect="auto")
    for (i, j), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=6.5,
                    color="white" if abs(v - 1) > 0.7 * spread else "black")
    for j, shape in enumerate(shapes):
        if shape in picks:
            ax.add_patch(Rectangle((j - 0.5, configs.index(picks[shape]) - 0.5), 1, 1, fill=False, ec="k", lw=2.5))
    ax.set_xticks(range(len(shapes)), ["x".join(map(str, s)) for s in shapes], fontsize=7, rotation=20, ha="right")
    ax.set_yticks(range(len(configs)), [spec.changes_label(c) or "the defaults" for c in configs], fontsize=6.5)
    ax.set_xlabel("M x N x K")
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02).set_label("share of cuBLAS (same run)", fontsize=8)
    ax.set_title(f"{spec.title}: every candidate configuration at every shape, as a share of cuBLAS\n"
                 f"outlined: the pick at each shape; blue: faster than cuBLAS, red: slower", fontsize=9)
    finish(fig, label)
