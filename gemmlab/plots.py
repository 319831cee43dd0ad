"""Matplotlib figures, drawn from real parameters and measurements. Nothing else lives here."""
from __future__ import annotations

import io

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from . import roofline as model


def _finish(fig, label: str):
    fig.text(0.99, 0.01, label, ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    plt.show()


def roofline(points, peak_gflops: float, bandwidth_gbs: float, label: str, note: str = ""):
    """points: (name, FLOP/byte, GFLOP/s). The roof is min(peak, bandwidth x intensity). The ridge's
    label stands along its line at the bottom of the plot, on the side with no point near it, and
    the peak's label above the roof, where no point can be."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = np.logspace(-1.5, 3.5, 200)
    ax.loglog(xs, [model.attainable_gflops(x, peak_gflops, bandwidth_gbs) / 1e3 for x in xs], "k-", lw=1.5)
    ridge = model.ridge_point(peak_gflops, bandwidth_gbs)
    ax.axvline(ridge, color="0.7", ls=":", lw=1)
    colours = [ax.loglog([x], [y / 1e3], "o")[0].get_color() for _, x, y in points]
    ax.set_ylim(top=peak_gflops / 1e3 * 2.2)
    low, high = ax.get_ylim()
    _point_labels(ax, [(name, x, y / 1e3, c) for (name, x, y), c in zip(points, colours)])
    # the label spans the lowest ~40% of the plot (log scale), 5-25% of a decade beside the line
    near = lambda side: sum(1 for _, x, y in points
                            if 0 < side * np.log10(x / ridge) < 0.25 and np.log10(y / 1e3 / low) < 0.45 * np.log10(high / low))
    side = 1 if near(1) <= near(-1) else -1
    ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, 0.03), xycoords=("data", "axes fraction"),
                xytext=(3 * side, 0), textcoords="offset points", rotation=90, fontsize=8, color="0.4",
                ha="left" if side > 0 else "right", va="bottom")
    ax.annotate(f"FP32 peak {peak_gflops / 1e3:.1f} TFLOP/s", (ridge, peak_gflops / 1e3), xytext=(4, 3),
                textcoords="offset points", fontsize=8, ha="left", va="bottom")
    ax.set_xlabel("arithmetic intensity (FLOP per byte of global memory)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("Roofline" + (f": {note}" if note else ""), fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    _finish(fig, label)


def _point_labels(ax, points, height: float = 0.045):
    """Names (coloured like their points) for points (name, x, y, colour) on log-log axes, top down:
    each in the first place beside its point (right, left, above, below) that covers no point and
    no label placed before it, else further down to the right, with a thin line to its point."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    frac = lambda v, lo, hi: (np.log10(v) - np.log10(lo)) / (np.log10(hi) - np.log10(lo))
    box_w = ax.get_window_extent().width or 450.0
    at = [(frac(x, x0, x1), frac(y, y0, y1)) for _, x, y, _ in points]
    boxes = [(fx - 0.012, fy - 0.02, fx + 0.012, fy + 0.02) for fx, fy in at]   # the markers

    def free(box):
        return all(box[2] <= b[0] or b[2] <= box[0] or box[3] <= b[1] or b[3] <= box[1] for b in boxes)
    for n in sorted(range(len(points)), key=lambda n: -at[n][1]):
        name, x, y, colour = points[n]
        fx, fy = at[n]
        width = len(name) * 5.0 / box_w           # ~5 points a character at fontsize 8
        spots = [(fx + 0.02, fy, "left"), (fx - 0.02, fy, "right"), (fx - width / 2, fy + 0.045, "left"),
                 (fx - width / 2, fy - 0.045, "left")]
        spots += [(fx + 0.05, fy - step * height, "left") for step in range(1, 30)]
        for tx, ty, ha in spots:
            left = tx - width if ha == "right" else tx
            box = (left, ty - height / 2, left + width, ty + height / 2)
            if free(box) and box[1] > 0:
                break
        boxes.append(box)
        moved = (tx, ty, ha) not in spots[:4]
        ax.annotate(name, (x, y), xytext=(tx, ty), textcoords="axes fraction", fontsize=8, va="center", ha=ha,
                    color=colour, arrowprops=dict(arrowstyle="-", color=colour, lw=0.6, shrinkA=0, shrinkB=3)
                    if moved else None)


def cublas_vs_size(sweep, peak_gflops: float, label: str):
    fig, ax = plt.subplots(figsize=(7, 3.6))
    sizes = [r["size"] for r in sweep]
    ax.plot(sizes, [r["gflops"] / 1e3 for r in sweep], "o-", label="cuBLAS SGEMM (FP32)")
    ax.axhline(peak_gflops / 1e3, color="k", ls="--", lw=1, label="FP32 peak")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOP/s")
    ax.set_ylim(0, peak_gflops / 1e3 * 1.1)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.2)
    _finish(fig, label)


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
    for y, (v, r) in enumerate(zip(ys, rows)):
        ax.annotate(f"{v:.2f} ({r['ratio']:.1%} of cuBLAS)", (v, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=6.5)
    ax.axvline(cublas, color="C3", ls="--", lw=1, label=f"cuBLAS (median over these runs), {cublas:.1f}")
    ax.set_xlim(left or 0, cublas * (1.6 if left else 1.12))
    ax.set_xlabel("TFLOP/s" + (" (log scale)" if left else "") + "; error bars: interquartile range of the runs")
    ax.set_title(f"{spec.title}: every configuration offered, at {_shape(rows[0])}\n"
                 f"best / worst = {ys.max() / ys.min():.2f}x", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.tick_params(axis="y", labelsize=7)
    _finish(fig, label)


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
    az.legend(fontsize=7, loc="center right")
    az.grid(alpha=0.2)
    fig.suptitle(f"{spec.title}: every configuration at {_shape(rows[0])} (best / worst = "
                 f"{ranked[0] / ranked[-1]:.2f}x)", fontsize=9)
    _finish(fig, label)


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


def thread_map(spec, params, label: str = ""):
    """The block's tile of C, coloured by warp; warp 0's lanes numbered. Consecutive lanes side by
    side in a row of C means their loads and stores touch consecutive addresses (row-major)."""
    rows, cols = spec.tile(params)
    show_r, show_c = min(rows, 32), min(cols, 32)
    owner = np.array([[spec.owner(params, r, c) for c in range(show_c)] for r in range(show_r)])
    fig, ax = plt.subplots(figsize=(5.2, 5.2 * show_r / max(show_c, 1) + 0.6))
    ax.imshow(owner // 32 % 8, cmap="Pastel2", vmin=0, vmax=7)
    first = {}
    for (r, c), t in np.ndenumerate(owner):
        if t < 32 and t not in first:
            first[t] = (r, c)
    for t, (r, c) in first.items():
        ax.text(c, r, str(t), ha="center", va="center", fontsize=6)
    ax.set_xlabel("column of C within the tile (consecutive addresses in memory)")
    ax.set_ylabel("row of C within the tile")
    cut = "" if (show_r, show_c) == (rows, cols) else f" (top-left {show_r}x{show_c} shown)"
    ax.set_title(f"{spec.title} [{spec.config_label(params)}]\ncolour = warp, "
                 f"numbers = lanes of warp 0 (first element each){cut}", fontsize=8)
    _finish(fig, label)


def bank_map(words: list[int], title: str, label: str = ""):
    """Which of the 32 banks each lane of a warp reads (word w lives in bank w % 32)."""
    banks = [w % 32 for w in words]
    fig, ax = plt.subplots(figsize=(7, 2.6))
    grid = np.zeros((32, 32))
    for lane, bank in enumerate(banks):
        grid[bank, lane] = 1
    ax.imshow(grid.T, cmap="Blues", aspect="auto", vmin=0, vmax=1.4)
    ax.set_xlabel("bank")
    ax.set_ylabel("lane")
    ax.set_yticks([0, 8, 16, 24, 31])
    ax.set_title(title, fontsize=9)
    _finish(fig, label)


def hot_loop(strips, label: str):
    """strips: (name, opcodes of one loop body). One row per build, one tick per instruction, coloured
    by what it does: where the copies, shared loads and the barrier sit among the FFMAs."""
    classes = (("FFMA", lambda op: op == "FFMA", "0.8"), ("shared load", lambda op: op.startswith("LDS"), "tab:blue"),
               ("copy (cp.async)", lambda op: op.startswith("LDGSTS"), "tab:orange"),
               ("barrier", lambda op: op.startswith("BAR"), "tab:red"))
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.7 * len(strips)))
    for row, (name, ops) in enumerate(strips):
        other = [i for i, op in enumerate(ops) if not any(test(op) for _, test, _ in classes)]
        ax.vlines(other, row - 0.35, row + 0.35, color="k", lw=0.6, label="other (addresses, loop)" if row == 0 else None)
        for cname, test, color in classes:
            xs = [i for i, op in enumerate(ops) if test(op)]
            ax.vlines(xs, row - 0.35, row + 0.35, color=color, lw=0.6 if cname == "FFMA" else 1.2,
                      label=cname if row == 0 else None, zorder=1 if cname == "FFMA" else 3)
    ax.set_yticks(range(len(strips)), [name for name, _ in strips])
    ax.set_ylim(len(strips) - 0.5, -0.5)
    ax.set_xlabel("instruction in the loop body, in program order")
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.35), frameon=False)
    _finish(fig, label)


def warp_tiling(spec, params, geometry: dict, label: str = ""):
    """The block tile cut into warp tiles (solid), sub-tiles (dashed), and lane 0's patches."""
    from matplotlib.patches import Rectangle
    p = {**params, **geometry}
    fig, ax = plt.subplots(figsize=(5.5, 5.5 * p["BM"] / p["BN"]))
    ax.set_xlim(0, p["BN"])
    ax.set_ylim(p["BM"], 0)
    for wr in range(p["BM"] // p["WM"]):
        for wc in range(p["BN"] // p["WN"]):
            ax.add_patch(Rectangle((wc * p["WN"], wr * p["WM"]), p["WN"], p["WM"], fill=True,
                                   color=plt.cm.Pastel1((wr * (p["BN"] // p["WN"]) + wc) % 9), lw=0))
            ax.text(wc * p["WN"] + 1, wr * p["WM"] + 3, f"warp {wr * (p['BN'] // p['WN']) + wc}", fontsize=6)
            for m in range(p["WMITER"]):
                for n in range(p["WNITER"]):
                    ax.add_patch(Rectangle((wc * p["WN"] + n * p["WSUBN"], wr * p["WM"] + m * p["WSUBM"]),
                                           p["WSUBN"], p["WSUBM"], fill=False, ls="--", lw=0.6, color="0.3"))
                    ax.add_patch(Rectangle((wc * p["WN"] + n * p["WSUBN"], wr * p["WM"] + m * p["WSUBM"]),
                                           p["TN"], p["TM"], color="C3"))
        ax.add_patch(Rectangle((0, wr * p["WM"]), p["BN"], p["WM"], fill=False, lw=1.5, color="k"))
    for wc in range(p["BN"] // p["WN"]):
        ax.add_patch(Rectangle((wc * p["WN"], 0), p["WN"], p["BM"], fill=False, lw=1.5, color="k"))
    ax.set_xlabel("column of the block's C tile")
    ax.set_ylabel("row")
    ax.set_title(f"{spec.title} [{spec.config_label(params)}]\nwarp tiles (solid), sub-tiles (dashed), "
                 f"red: the {p['WMITER'] * p['WNITER']} TM x TN patches of lane 0 of each warp", fontsize=8)
    _finish(fig, label)


def ladder(rows, shapes, label: str, titles: dict | None = None):
    """TFLOP/s of each kernel across shapes, and its share of cuBLAS: a marker per kernel and shape.
    The cubes (M = N = K) come first, joined by a thin line per kernel (one size series); the
    other shapes stand apart, unjoined."""
    titles = titles or {}
    cubes = [s for s in shapes if s[0] == s[1] == s[2]]
    others = [s for s in shapes if s not in cubes]
    order = cubes + others
    xs = {s: i + (0.8 if s in others else 0) for i, s in enumerate(order)}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.4))
    names = list(dict.fromkeys(r["kernel"] for r in rows))
    markers = "osD^v<>phX*"
    for n, name in enumerate(names):
        by = {(r["M"], r["N"], r["K"]): r for r in rows if r["kernel"] == name}
        style = dict(marker=markers[n % len(markers)], color=f"C{n % 10}", ms=5)
        for ax, value in ((ax1, lambda r: r["gflops"] / 1e3), (ax2, lambda r: r["ratio"] * 100)):
            for group in (cubes, others):
                pts = [(xs[s], value(by[s])) for s in group if s in by]
                if pts:
                    ax.plot(*zip(*pts), ls="-" if group is cubes else "none", lw=0.7, alpha=0.9, **style,
                            label=titles.get(name, name) if ax is ax1 and group is cubes else None)
    cub = {(r["M"], r["N"], r["K"]): r["cublas_gflops"] / 1e3 for r in rows}
    for group in (cubes, others):
        pts = [(xs[s], cub[s]) for s in group if s in cub]
        if pts:
            ax1.plot(*zip(*pts), "k_", ms=14, mew=2, ls="--" if group is cubes else "none", lw=0.8,
                     label="cuBLAS FP32" if group is cubes else None)
    for ax in (ax1, ax2):
        ax.set_xticks([xs[s] for s in order], ["x".join(map(str, s)) for s in order], rotation=30, fontsize=7,
                      ha="right")
        ax.set_xlabel("M x N x K")
        ax.grid(alpha=0.2)
        if others and cubes:
            sep = (xs[cubes[-1]] + xs[others[0]]) / 2
            ax.axvline(sep, color="0.6", lw=0.8)
            ax.text(sep - 0.1, 1.01, "M = N = K", transform=ax.get_xaxis_transform(), ha="right", va="bottom",
                    fontsize=7, color="0.3")
            ax.text(sep + 0.1, 1.01, "other shapes", transform=ax.get_xaxis_transform(), ha="left",
                    va="bottom", fontsize=7, color="0.3")
    ax1.set_yscale("log")
    ax1.set_ylabel("TFLOP/s (log scale)")
    ax2.set_ylabel("% of cuBLAS (same run)")
    ax2.axhline(100, color="k", lw=0.8)
    fig.legend(*ax1.get_legend_handles_labels(), fontsize=7, loc="center right", frameon=False)
    fig.text(0.99, 0.01, label, ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 0.85, 1))
    plt.show()


def tuning(spec, rows, label: str):
    """Every configuration of a search: GFLOP/s against each tunable, the best circled."""
    varying = [p.name for p in spec.params if len({r["params"][p.name] for r in rows}) > 1]
    fig, axes = plt.subplots(1, max(len(varying), 1), figsize=(2.2 * max(len(varying), 1) + 1, 3), sharey=True)
    axes = np.atleast_1d(axes)
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
    axes[0].set_ylabel("TFLOP/s")
    for ax in axes:
        ax.axhline(np.median([r["cublas_gflops"] for r in rows]) / 1e3, color="C3", ls="--", lw=1)
    fig.suptitle(f"{spec.title}: {len(rows)} configurations at {rows[0]['M']}x{rows[0]['N']}x{rows[0]['K']} "
                 f"(dashed: cuBLAS)", fontsize=9)
    _finish(fig, label)


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
    _finish(fig, label)


def versus(rows, label: str):
    """A kernel against cuBLAS shape by shape: TFLOP/s side by side (with interquartile bars)
    and the ratio."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    names = ["x".join(map(str, (r["M"], r["N"], r["K"]))) for r in rows]
    xs = np.arange(len(rows))
    for off, key, spread, what in ((-0.2, "gflops", "spread", rows[0]["kernel"]),
                                   (0.2, "cublas_gflops", "cublas_spread", "cuBLAS FP32")):
        ys = np.array([r[key] for r in rows]) / 1e3
        ax1.bar(xs + off, ys, 0.4, yerr=ys * np.array([r[spread] for r in rows]) / 2, label=what, capsize=2)
    ax1.set_ylabel("TFLOP/s")
    ax1.legend(fontsize=8)
    ax2.bar(xs, [r["ratio"] for r in rows], 0.6, color=["C2" if r["ratio"] >= 1 else "C1" for r in rows])
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set_ylabel("kernel / cuBLAS (same run)")
    ax2.set_ylim(min(0.8, min(r["ratio"] for r in rows) - 0.05), max(1.05, max(r["ratio"] for r in rows) + 0.05))
    for ax in (ax1, ax2):
        ax.set_xticks(xs, names, rotation=25, fontsize=8)
        ax.grid(alpha=0.2, axis="y")
    _finish(fig, label)


def stalls(rows, reasons, label: str):
    """Stall cycles per issued instruction, by reason, one bar group per kernel."""
    fig, ax = plt.subplots(figsize=(9, 3.6))
    shown = [r for r in reasons if r != "not_selected"]
    xs = np.arange(len(shown))
    width = 0.8 / len(rows)
    for i, row in enumerate(rows):
        name = "cuBLAS FP32" if row["kernel"] == "cublas" else row["kernel"]
        ax.bar(xs + (i - (len(rows) - 1) / 2) * width, [row["stalls"][r] for r in shown], width,
               label=f"{name} ({row['issued_per_scheduler']:.2f} issued/cycle)")
    ax.set_xticks(xs, [r.replace("_", " ") for r in shown], rotation=25, fontsize=8)
    ax.set_ylabel("stall cycles per issued instruction")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.2, axis="y")
    _finish(fig, label)


def stall_stack(captions, profiles, reasons, label: str):
    """One horizontal bar per profile: its stall cycles per issued instruction, stacked by reason,
    with the issue rate written beside it."""
    fig, ax = plt.subplots(figsize=(10, max(2.6, 0.55 * len(captions) + 1.4)))
    ys = np.arange(len(captions))[::-1]
    left = np.zeros(len(captions))
    colours = plt.get_cmap("tab10")
    for i, reason in enumerate(reasons):
        values = np.array([p["stalls"][reason] for p in profiles])
        ax.barh(ys, values, left=left, color=colours(i % 10), label=reason.replace("_", " "), height=0.6)
        left += values
    for y, total, p in zip(ys, left, profiles):
        ax.text(total, y, f"  {p['issued_per_scheduler']:.2f} issued/cycle", va="center", fontsize=8)
    ax.set_yticks(ys, captions, fontsize=8)
    ax.set_xlim(0, left.max() * 1.3)
    ax.set_xlabel("stall cycles per issued instruction (eligible-but-not-selected left out)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(alpha=0.2, axis="x")
    _finish(fig, label)


# The hierarchical roofline's points: a level whose traffic is under this share of its roof gets none.
TOUCHED = 1e-4


def hierarchical_roofline(points, roofs: dict, peak_gflops: float, label: str):
    """points: (name, {level: FLOP per byte}, GFLOP/s). One roof per memory level (bandwidth x
    intensity, capped by the peak) and, per kernel, one marker per level at the intensity measured
    there, all at the kernel's speed, joined by a line. A level the kernel hardly touches, its bytes at
    the kernel's speed under TOUCHED of its roof's bandwidth, gets no point: the naive kernel declares no
    shared memory, yet Nsight Compute counts one shared wavefront per warp for it (7e-6 of the roof;
    chapter 12's reduction through shared memory, the least real use, is at 5e-3)."""
    fig, ax = plt.subplots(figsize=(8, 4.6))
    points = [(name, {lv: x for lv, x in levels.items() if gflops / x >= TOUCHED * roofs.get(lv, 0)}, gflops)
              for name, levels, gflops in points]
    markers = {"DRAM": "o", "L2": "s", "shared": "^"}
    styles = {"DRAM": "-", "L2": "--", "shared": ":"}
    xs = np.logspace(-1.5, 3.5, 200)
    for level, gbs in roofs.items():
        ax.loglog(xs, [model.attainable_gflops(x, peak_gflops, gbs) / 1e3 for x in xs], "k", ls=styles[level], lw=1.2,
                  label=f"{level} roof, {gbs / 1e3:.1f} TB/s")
    colours = plt.get_cmap("tab10")
    for i, (name, levels, gflops) in enumerate(points):
        order = sorted(levels.items(), key=lambda kv: kv[1])
        ax.loglog([x for _, x in order], [gflops / 1e3] * len(order), "-", color=colours(i), lw=1, alpha=0.7,
                  label=name)
        for level, x in order:
            ax.loglog([x], [gflops / 1e3], markers[level], color=colours(i), ms=7)
    lowest = min(g for _, _, g in points) / 1e3
    ax.set_ylim(min(lowest / 20, 1.0), peak_gflops / 1e3 * 2.2)
    ax.annotate(f"FP32 peak {peak_gflops / 1e3:.1f} TFLOP/s", (xs[0], peak_gflops / 1e3), xytext=(4, 3),
                textcoords="offset points", fontsize=8, ha="left", va="bottom")
    for level, m in markers.items():
        if level in roofs:
            ax.plot([], [], m, color="0.4", label=f"intensity at {level}")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved at that level)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("Hierarchical roofline: one point per memory level", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="both", alpha=0.2)
    _finish(fig, label)


# --- pictures of the models (lessons/models.py): no measurement in them ---------------------------

def _rect(ax, x, y, w, h, **kw):
    from matplotlib.patches import Rectangle
    ax.add_patch(Rectangle((x, y), w, h, **kw))


def tile_walk(spec, params, k_tile: int, steps: int, total_steps: int, label: str = ""):
    """A block's C tile and the row panel of A and column panel of B it walks along K, one panel
    per step: the tiles staged at that step filled, the ones done hatched."""
    rows, cols = spec.tile(params)
    shown = steps * k_tile + k_tile / 2                 # the panels' first `steps` tiles, then "..."
    gap = max(rows, cols, k_tile) * 0.15
    fig, axes = plt.subplots(1, steps, figsize=(3.4 * steps, 3.9))
    axes = np.atleast_1d(axes)
    x0, y0 = shown + gap, shown + gap                    # where C (and B's columns, A's rows) start
    for t, ax in enumerate(axes):
        _rect(ax, 0, y0, shown, rows, fill=False, lw=1, color="0.4")                 # A row panel
        _rect(ax, x0, 0, cols, shown, fill=False, lw=1, color="0.4")                 # B column panel
        _rect(ax, x0, y0, cols, rows, color="C0", alpha=0.15 + 0.6 * (t + 1) / total_steps)
        _rect(ax, x0, y0, cols, rows, fill=False, lw=1.5, color="C0")
        for s in range(steps):
            style = (dict(color="C1", alpha=0.9) if s == t else
                     dict(fill=False, hatch="///", color="0.6", lw=0.5) if s < t else
                     dict(fill=False, color="0.75", lw=0.5, ls="--"))
            _rect(ax, s * k_tile, y0, k_tile, rows, **style)
            _rect(ax, x0, s * k_tile, cols, k_tile, **style)
        ax.text(shown - k_tile / 4, y0 + rows / 2, "...", ha="center", va="center", fontsize=9)
        ax.text(x0 + cols / 2, shown - k_tile / 4, "...", ha="center", va="center", fontsize=9)
        ax.text(shown / 2, y0 + rows + gap * 0.2, f"A: the block's {rows} rows,\nall of K",
                ha="center", va="top", fontsize=7)
        ax.text(x0 - gap * 0.2, shown / 2, f"B: all of K,\nthe block's {cols} columns", ha="right", va="center",
                fontsize=7)
        ax.text(x0 + cols / 2, y0 + rows / 2, "C", ha="center", va="center", fontsize=9, color="C0")
        ax.text(x0 + cols / 2, y0 + rows + gap * 0.2, f"C tile {rows} x {cols}\n+= A tile x B tile\n"
                f"({(t + 1) * k_tile} of K done)", ha="center", va="top", fontsize=7)
        ax.set_xlim(-gap * 0.2, x0 + cols + gap * 0.3)
        ax.set_ylim(y0 + rows + gap * 2.4, -gap * 0.2)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(f"step {t}: k0 = {t * k_tile}", fontsize=8)
    fig.suptitle(f"{spec.title} [{spec.config_label(params)}]: a block walks K in {total_steps} steps of {k_tile} "
                 f"(the first {steps} shown)\norange: the tiles in shared memory at this step; hatched: done",
                 fontsize=9)
    _finish(fig, label)


def sectors(spec, params, requests, label: str = ""):
    """Warp 0's first access of each matrix: the element each lane touches (its lane number), and
    the 32-byte sectors (8 floats of a row) the memory system must move for them."""
    fig, axes = plt.subplots(1, len(requests), figsize=(4.4 * len(requests), 4.4))
    for ax, req in zip(np.atleast_1d(axes), requests):
        rs = [r for r, _ in req.elements]
        cs = [c for _, c in req.elements]
        r0, c0 = min(rs), min(cs) // 8 * 8
        r1, c1 = max(max(rs) + 1, r0 + 32), max(-(-(max(cs) + 1) // 8) * 8, c0 + 32)   # at least 32 x 32
        grid = np.zeros((r1 - r0, c1 - c0))
        for r, c in req.elements:
            sector = slice((c - c0) // 8 * 8, (c - c0) // 8 * 8 + 8)
            grid[r - r0, sector] = np.maximum(grid[r - r0, sector], 1)
        for r, c in req.elements:
            grid[r - r0, c - c0] = 2
        from matplotlib.colors import ListedColormap
        ax.imshow(grid, cmap=ListedColormap(["white", "#fdd9a0", "#4c8fcf"]), vmin=0, vmax=2, aspect="auto",
                  extent=(c0 - 0.5, c1 - 0.5, r1 - 0.5, r0 - 0.5), interpolation="nearest")
        seen = set()
        for lane, (r, c) in enumerate(req.elements):
            if (r, c) not in seen and (r1 - r0) * (c1 - c0) <= 64 * 64:
                ax.text(c, r, str(lane), ha="center", va="center", fontsize=5 if max(c1 - c0, r1 - r0) > 32 else 5.5)
                seen.add((r, c))
        for x in range(c0, c1 + 1, 8):
            ax.axvline(x - 0.5, color="C3", lw=0.8)
        for y in range(r0, r1 + 1):
            ax.axhline(y - 0.5, color="0.85", lw=0.3)
        ax.set_xlabel("column (a sector: 8 floats, between red lines)", fontsize=7)
        ax.set_ylabel("row (each a whole row of memory apart)", fontsize=7)
        ax.tick_params(labelsize=6)
        useful = len(set(req.addresses)) * 4
        n = len(req.sectors)
        ax.set_title(f"{'store' if req.operand == 'C' else 'load'} of {req.operand}: {n} sector{'s' if n > 1 else ''} "
                     f"= {n * 32} B\nfor {useful} B the lanes use ({useful / (n * 32):.0%})",
                     fontsize=8)
    fig.suptitle(f"{spec.title} [{spec.config_label(params)}]: warp 0's first request of each matrix; "
                 f"blue: lanes' floats (lane numbers), orange: the rest of their sectors", fontsize=9)
    _finish(fig, label)


def outer_product(spec, params, thread: int, k: int, rows_of: list[int], cols_of: list[int], label: str = ""):
    """Left: the block's A tile, B tile and C tile, with what thread `thread` reads at step k (its
    rows of A's column k, its columns of B's row k) and the C elements it updates. Right: the same
    as an outer product, a column of A times a row of B into the thread's accumulators."""
    bm, bn = spec.tile(params)
    bk = spec.k_tile(params)
    fig, (ax, az) = plt.subplots(1, 2, figsize=(11, 5.2), gridspec_kw={"width_ratios": [1.25, 1]})
    ks = max(1.0, 0.25 * max(bm, bn) / bk)        # K drawn wider, so that a column of A can be seen
    gap = max(bm, bn) * 0.04
    x0, y0 = bk * ks + gap, bk * ks + gap
    _rect(ax, 0, y0, bk * ks, bm, color="0.92")
    _rect(ax, x0, 0, bn, bk * ks, color="0.92")
    _rect(ax, x0, y0, bn, bm, color="0.97")
    _rect(ax, k * ks, y0, ks, bm, color="C0", alpha=0.2)
    _rect(ax, x0, k * ks, bn, ks, color="C2", alpha=0.2)
    for r in rows_of:
        _rect(ax, k * ks, y0 + r, ks, 1, color="C0")
        for c in cols_of:
            _rect(ax, x0 + c, y0 + r, 1, 1, color="C3")
    for c in cols_of:
        _rect(ax, x0 + c, k * ks, 1, ks, color="C2")
    for x, y, w, h in ((0, y0, bk * ks, bm), (x0, 0, bn, bk * ks), (x0, y0, bn, bm)):
        _rect(ax, x, y, w, h, fill=False, lw=1, color="0.3")
    for s in range(1, bk):
        ax.plot([s * ks, s * ks], [y0, y0 + bm], color="0.8", lw=0.3)
        ax.plot([x0, x0 + bn], [s * ks, s * ks], color="0.8", lw=0.3)
    ax.text(bk * ks / 2, y0 + bm + gap / 2, f"A tile\n{bm} x {bk}", ha="center", va="top", fontsize=7)
    ax.text(x0 + bn + gap / 3, bk * ks / 2, f"B tile\n{bk} x {bn}", ha="left", va="center", fontsize=7)
    ax.text(x0 + bn / 2, y0 + bm + gap / 2, f"C tile {bm} x {bn}" + (f" (K drawn {ks:.0f}x wider)" if ks > 1 else ""),
            ha="center", va="top", fontsize=7)
    ax.set_xlim(-gap, x0 + bn + gap * 5)
    ax.set_ylim(y0 + bm + gap * 4, -gap)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"thread {thread} at k={k}: blue its {len(rows_of)} values of A's column k, green its "
                 f"{len(cols_of)} of B's row k,\nred the {len(rows_of) * len(cols_of)} elements of C it updates",
                 fontsize=8)
    tm, tn = len(rows_of), len(cols_of)
    for i, r in enumerate(rows_of):
        _rect(az, -1.4, i, 1, 1, color="C0", alpha=0.7)
        if tm <= 16:
            az.text(-0.9, i + 0.5, f"A[{r}][{k}]", ha="center", va="center", fontsize=5 if tm > 8 else 6)
    for j, c in enumerate(cols_of):
        _rect(az, j, -1.4, 1, 1, color="C2", alpha=0.7)
        az.text(j + 0.5, -0.9, f"B[{k}]\n[{c}]", ha="center", va="center", fontsize=5 if tn > 8 else 6)
    for i in range(tm):
        for j in range(tn):
            _rect(az, j, i, 1, 1, color="C3", alpha=0.3, ec="white")
            if tm * tn <= 64:
                az.text(j + 0.5, i + 0.5, f"a{i}b{j}", ha="center", va="center", fontsize=6)
    az.set_xlim(-1.6, tn + 0.2)
    az.set_ylim(tm + 0.2, -1.6)
    az.set_aspect("equal")
    az.axis("off")
    az.set_title(f"the outer product: {tm} + {tn} values loaded, {tm} x {tn} = {tm * tn} FMAs\n"
                 f"acc[i][j] += a[i] * b[j] (registers)", fontsize=8)
    fig.suptitle(f"{spec.title} [{spec.config_label(params)}]", fontsize=9)
    _finish(fig, label)


def shared_phases(title: str, load, what: str, label: str = ""):
    """One warp-wide shared load: for each lane (rows, grouped in phases), the banks (columns) its
    vector covers, coloured by vector (lanes with one colour read the same vector: a broadcast);
    the passes (wavefronts) each phase needs on the right."""
    from matplotlib.colors import ListedColormap
    fig, ax = plt.subplots(figsize=(8.5, 6.2))
    grid = np.full((32, 32), np.nan)
    for phase in load.phases():
        order = {w: n for n, w in enumerate(dict.fromkeys(load.words[lane] for lane in phase))}
        for lane in phase:
            for d in range(load.width):
                grid[lane, (load.words[lane] + d) % 32] = order[load.words[lane]]
    n = load.phase_lanes            # at most one vector per lane in a phase: n colours
    colours = (plt.cm.Set2.colors[:8] if n <= 8 else plt.cm.tab20.colors[:n] if n <= 20 else
               [plt.cm.hsv(i / n) for i in range(n)])
    cmap = ListedColormap(colours).with_extremes(bad="white")
    ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(colours) - 0.5, aspect="auto", interpolation="nearest",
              extent=(-0.5, 31.5, 31.5, -0.5))
    for lane in range(32):
        first = load.words[lane] % 32
        k, i = load.elements[lane][0]
        i_last = load.elements[lane][-1][1]
        span = f"{i}" if load.width == 1 else f"{i}-{i_last}" if load.elements[lane][-1][0] == k else f"k{k}+"
        ax.text(first + (load.width - 1) / 2, lane, span, ha="center", va="center", fontsize=5.5)
    for x in range(0, 33, 4):
        ax.axvline(x - 0.5, color="0.85", lw=0.4)
    for phase in load.phases():
        ax.axhline(phase.start - 0.5, color="k", lw=1.2)
        waves = load.wavefronts(phase)
        words = len({load.words[lane] for lane in phase})
        ax.text(32.2, phase.start + len(phase) / 2 - 0.5,
                f"phase {phase.start // len(phase)}: lanes {phase.start}-{phase.stop - 1}\n{words} distinct "
                f"{'vector' if load.width > 1 else 'word'}{'s' if words > 1 else ''}\n"
                + ("1 pass: conflict-free" if waves == 1 else f"{waves} passes: {waves}-way conflict"),
                fontsize=7, va="center", ha="left")
    ax.set_xticks(range(0, 32, 4))
    ax.set_yticks(range(0, 32, 4))
    ax.set_xlabel("bank (a 4-byte word w lives in bank w % 32)")
    ax.set_ylabel("lane of warp 0")
    ax.set_title(title + f"\ncells: the banks of the {4 * load.width}-byte vector each lane reads, text: {what}; "
                 f"one colour within a phase: one {'vector' if load.width > 1 else 'word'}", fontsize=8)
    fig.subplots_adjust(right=0.78)
    fig.text(0.99, 0.01, label, ha="right", va="bottom", fontsize=7, color="0.4")
    plt.show()


_ACTIVITY_COLOURS = {"global loads in flight": "tab:orange", "shared stores": "tab:purple",
                     "barrier": "tab:red", "compute (FFMAs)": "tab:green"}


def timeline(spec, params, panels, label: str = ""):
    """panels: (title, bars), bars (activity, start, duration, tile) from lessons/models.timeline.
    One row per activity, one panel per build, on a common time axis."""
    activities = list(_ACTIVITY_COLOURS)
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 1.9 * len(panels) + 0.6), sharex=True)
    for ax, (title, bars) in zip(np.atleast_1d(axes), panels):
        end = max(s + d for _, s, d, _ in bars)
        for what, start, dur, tile in bars:
            row = activities.index(what)
            ax.barh(row, dur, left=start, height=0.6, color=_ACTIVITY_COLOURS[what], alpha=0.85,
                    edgecolor="white", lw=0.5)
            if dur > end * 0.03:
                ax.text(start + dur / 2, row, f"tile {tile}", ha="center", va="center", fontsize=6.5, color="white")
        ax.set_yticks(range(len(activities)), activities, fontsize=7)
        ax.set_ylim(len(activities) - 0.5, -0.5)
        ax.axvline(end, color="k", lw=0.8, ls=":")
        ax.set_title(f"{title}: {end:.0f} model cycles", fontsize=8, loc="left")
        ax.grid(axis="x", alpha=0.2)
    np.atleast_1d(axes)[-1].set_xlabel("model cycles, one warp alone (a schematic, not a measurement)")
    fig.suptitle(f"{spec.title} [{spec.config_label(params)}]: a model of one warp's first tiles", fontsize=9)
    _finish(fig, label)


_STATE_COLOURS = {"computing": "tab:green", "landed or in flight": "#fdb863", "copies issued now": "#fee0b6",
                  "unused": "white"}


def stage_ring(spec, params, cells, columns, stages: int, label: str = ""):
    """cells[(column, stage)] = (state, tile): what each shared-memory buffer holds at each step of
    the main loop; columns: the steps' captions."""
    fig, ax = plt.subplots(figsize=(max(1.15 * len(columns) + 1.8, 9), 0.6 * stages + 1.9))
    for (col, stage), (state, tile) in cells.items():
        _rect(ax, col, stage, 1, 1, color=_STATE_COLOURS[state], ec="0.5", lw=0.6)
        if tile is not None:
            ax.text(col + 0.5, stage + 0.5, f"tile {tile}", ha="center", va="center", fontsize=8,
                    fontweight="bold" if state == "computing" else "normal")
    ax.set_xlim(0, len(columns))
    ax.set_ylim(stages, 0)
    ax.set_xticks(np.arange(len(columns)) + 0.5, columns, fontsize=7)
    ax.set_yticks(np.arange(stages) + 0.5, [f"buffer {s}" for s in range(stages)], fontsize=8)
    ax.tick_params(length=0)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(facecolor=c, edgecolor="0.5", label=s) for s, c in _STATE_COLOURS.items()
                       if s != "unused"], fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.22),
              frameon=False)
    ax.set_title(f"{spec.title} [{spec.config_label(params)}]\nthe {stages} shared-memory buffers while tile t is "
                 f"computed ({len(columns) - 1} tiles along K):\ntile t sits in buffer t % {stages}; the copies of "
                 f"tile t + {stages - 1} go where tile t - 1 was", fontsize=8)
    _finish(fig, label)


def ffma_order(spec, params, rows: int, cols: int, panels, label: str = ""):
    """panels: (title, order, reused). A thread's rows x cols accumulators, the FFMAs of one k step
    numbered and joined in issue order; an arrow's colour says which operand the two FFMAs share."""
    colours = {"a": "tab:blue", "b": "tab:green", "": "tab:red"}
    cell = min(0.55, 7.0 / max(rows, cols))          # inches per accumulator
    fig, axes = plt.subplots(1, len(panels), figsize=((cell * cols + 1.8) * len(panels), cell * rows + 2.3))
    for ax, (title, order, reused) in zip(np.atleast_1d(axes), panels):
        for i in range(rows):
            for j in range(cols):
                _rect(ax, j - 0.5, i - 0.5, 1, 1, fill=False, ec="0.8", lw=0.5)
        for n, (i, j) in enumerate(order):
            ax.text(j + 0.22, i - 0.22, str(n), fontsize=5, color="0.35", ha="center", va="center")
        for (p, q), what in zip(zip(order, order[1:]), reused):
            ax.annotate("", xy=(q[1], q[0]), xytext=(p[1], p[0]),
                        arrowprops=dict(arrowstyle="-|>", color=colours[what], lw=1.2 if what else 1.6,
                                        shrinkA=3, shrinkB=3, mutation_scale=7))
        counts = {w: reused.count(w) for w in colours}
        ax.set_xlim(-0.6, cols - 0.4)
        ax.set_ylim(rows - 0.4, -0.6)
        ax.set_aspect("equal")
        ax.set_xticks(range(cols))
        ax.set_yticks(range(rows))
        ax.tick_params(labelsize=6)
        ax.set_xlabel("j: b[j] (column of the patch)", fontsize=7)
        ax.set_ylabel("i: a[i] (row of the patch)", fontsize=7)
        ax.set_title(f"{title}\nshares a[i]: {counts['a']}, b[j]: {counts['b']}, nothing: {counts['']}",
                     fontsize=8)
    from matplotlib.lines import Line2D
    fig.legend(handles=[Line2D([], [], color=c, label=f"the next FFMA reuses {w}" if w else "no operand shared")
                        for w, c in (("a[i]", colours["a"]), ("b[j]", colours["b"]), ("", colours[""]))],
               fontsize=7, ncol=3, loc="lower center", frameon=False, bbox_to_anchor=(0.5, 0.03))
    fig.suptitle(f"{spec.title} [{spec.config_label(params)}]\nthe {rows * cols} FFMAs of one k step, "
                 f"acc[i][j] += a[i] * b[j], in issue order", fontsize=9)
    fig.text(0.99, 0.005, label, ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.08, 1, 0.92))
    plt.show()


def wave_schedule(spec, panels, label: str = ""):
    """panels: (title, models.Wave). Every block slot (rows) over time in tiles (columns): the
    whole tiles wave by wave, the last partial wave, and the pieces of split tiles; on the right,
    the end of the launch enlarged."""
    fig, axes = plt.subplots(len(panels), 2, figsize=(11, 2.6 * len(panels) + 0.6), squeeze=False,
                             gridspec_kw={"width_ratios": [2, 1.2]})
    span = max(w.makespan for _, w in panels)
    zoom = min(w.tiles // w.slots for _, w in panels) - 0.25
    colours = {"whole0": "#9ecae1", "whole1": "#4292c6", "last wave": "tab:orange"}
    for (ax, az), (title, wave) in zip(axes, panels):
        by_slot: dict[tuple[int, str], list] = {}
        for slot, start, dur, kind, _ in wave.runs:
            shade = f"whole{int(start + 1e-9) % 2}" if kind == "whole" else kind
            by_slot.setdefault((slot, shade), []).append((start, dur))
        for a in (ax, az):
            for (slot, shade), spans in by_slot.items():
                colour = colours.get(shade) or plt.cm.Purples(0.45 + 0.5 * int(shade.split()[1]) / max(wave.pieces - 1, 1))
                a.broken_barh(spans, (slot, 1), facecolors=colour, edgecolor="white", lw=0.15)
            a.axvline(wave.makespan, color="k", lw=1, ls=":")
            a.set_ylim(wave.slots, 0)
            a.tick_params(labelsize=7)
        ax.set_xlim(0, span * 1.02)
        az.set_xlim(zoom, span * 1.01)
        ax.set_ylabel("block slot\n(SMs x blocks/SM)", fontsize=7)
        ax.set_title(f"{title}: {wave.tiles} tiles = {wave.tiles / wave.slots:.2f} waves of {wave.slots}; done at "
                     f"{wave.makespan:.2f}", fontsize=8, loc="left")
        az.set_title("the end, enlarged" + (f": {wave.split} tiles in {wave.split * wave.pieces} pieces"
                                            if wave.split else f": the last wave, {wave.last_wave} tiles"),
                     fontsize=8, loc="left")
    axes[-1][0].set_xlabel("time, in tile-times (model: a piece takes 1/pieces of a tile plus a fixed cost)", fontsize=8)
    axes[-1][1].set_xlabel("time, in tile-times (white: an idle slot; dotted: the end)", fontsize=8)
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(color="#4292c6", label="whole tiles (waves alternate shades)"),
                        Patch(color="tab:orange", label="tiles of the last partial wave"),
                        Patch(color=plt.cm.Purples(0.7), label="pieces of split tiles (shade: piece)")],
               fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, 0.955), frameon=False)
    fig.suptitle(f"{spec.title}: tiles over the GPU's block slots", fontsize=9, y=0.995)
    fig.text(0.99, 0.005, label, ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.02, 1, 0.92))
    plt.show()


def dispatch_heatmaps(rows, kernel: str, label: str):
    """Ratio to cuBLAS over (M, N), one row of panels per K: the kernel at its defaults (before
    dispatch) and gemmlab.matmul (after). Green is faster than cuBLAS, red slower, on a log scale."""
    from matplotlib.colors import LogNorm
    ks = sorted({r["K"] for r in rows})
    ms, ns = sorted({r["M"] for r in rows}), sorted({r["N"] for r in rows})
    fig, axes = plt.subplots(len(ks), 2, figsize=(10, 4.6 * len(ks)), squeeze=False)
    fig.subplots_adjust(hspace=0.4)              # room for each row's titles under the row above
    norm = LogNorm(vmin=0.25, vmax=4.0)
    for row, k in enumerate(ks):
        for col, (key, title) in enumerate((("before_ratio", f"{kernel} at its defaults"),
                                            ("after_ratio", "gemmlab.matmul (a plan per shape)"))):
            grid = np.full((len(ms), len(ns)), np.nan)
            for r in rows:
                if r["K"] == k:
                    grid[ms.index(r["M"]), ns.index(r["N"])] = r[key]
            ax = axes[row][col]
            im = ax.imshow(np.clip(grid, 0.25, 4.0), cmap="RdYlGn", norm=norm, origin="lower")
            for (i, j), v in np.ndenumerate(grid):
                if not np.isnan(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
            ax.set_xticks(range(len(ns)), ns, fontsize=7)
            ax.set_yticks(range(len(ms)), ms, fontsize=7)
            ax.set_xlabel("N")
            ax.set_ylabel("M")
            finite = grid[~np.isnan(grid)]
            ax.set_title(f"{title}, K = {k}\ngeometric mean {np.exp(np.log(finite).mean()):.2f}, "
                         f"smallest {finite.min():.2f}", fontsize=8)
    bar = fig.colorbar(im, ax=axes, fraction=0.025, pad=0.02)
    bar.set_ticks([0.25, 0.5, 1, 2, 4], labels=["0.25", "0.5", "1", "2", "4"])
    bar.minorticks_off()
    bar.set_label("time of cuBLAS / time (same run)", fontsize=8)
    fig.suptitle("Against cuBLAS FP32 over (M, N): one kernel at one configuration, then a plan per shape", fontsize=9)
    fig.text(0.99, 0.01, label, ha="right", va="bottom", fontsize=7, color="0.4")
    plt.show()
