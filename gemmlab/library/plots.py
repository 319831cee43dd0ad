"""The dispatcher's pictures: what gemmlab.matmul's plan predicted against what the call took, and the
library against cuBLAS over (M, N) before and after dispatch."""
from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np

# A prediction within this share of the call's time is "within" it: the band drawn around the diagonal, and the rule
# that names every shape outside it (one number for both, so that no point lies outside the band unnamed)
BAND = 0.1


def predicted_against_measured(rows: list[dict], label: str, worked: tuple[int, int, int] | None = None):
    """One point per shape of the suite: the time the plan predicted for the call it made (x) and the
    time the call took (y), both in microseconds on log scales, coloured by the kernel the plan chose.
    The diagonal is a perfect prediction; the band is within 10% of it. The shapes outside the band are
    named, and `worked`."""
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    pred = np.array([r["predicted_us"] for r in rows])
    took = np.array([r["ms"] * 1e3 for r in rows])
    lo, hi = min(pred.min(), took.min()) / 1.5, max(pred.max(), took.max()) * 1.5
    lower, tries = 1.6, 5                      # how far the names below may move the lower limit: each try
    line = np.array([lo / lower ** tries, hi])  # the band is drawn past the lowest it may reach
    # on log axes spanning decades the band is narrow: its edges are drawn too, so that it reads as a band
    edges = (line * (1 - BAND), line * (1 + BAND))
    ax.fill_between(line, *edges, color="0.85", label=f"within {BAND:.0%}")
    for edge in edges:
        ax.plot(line, edge, color="0.55", lw=0.7, ls="--")
    ax.plot(line, line, color="0.5", lw=0.8, label="measured = predicted")
    # a hollow marker of its own for each kernel, the kernels with fewest points drawn last: where points of two
    # kernels lie on each other, both stay in sight
    kernels = sorted({r["plan_kernel"] for r in rows})
    points = {k: [i for i, r in enumerate(rows) if r["plan_kernel"] == k] for k in kernels}
    marks = dict(zip(kernels, itertools.cycle("osD^vP*X")))
    colours = dict(zip(kernels, itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])))
    for z, kernel in enumerate(sorted(kernels, key=lambda k: -len(points[k]))):
        mine = points[kernel]
        ax.scatter(pred[mine], took[mine], s=30, marker=marks[kernel], facecolors="none", edgecolors=colours[kernel],
                   linewidths=1.3, label=kernel, zorder=3 + z)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("predicted by the plan (us)")
    ax.set_ylabel("measured, the whole call (us)")
    ratio = took / pred
    off = np.abs(ratio - 1)                     # each prediction's error, for the names and the title
    ax.set_title(f"gemmlab.matmul over {len(rows)} shapes: the plan's prediction against the call's time\n"
                 f"median error {np.median(off):.1%}, largest {off.max():.1%}", fontsize=9)
    handles, names = ax.get_legend_handles_labels()
    order = ([i for i, n in enumerate(names) if n not in kernels]          # the band and the diagonal, then by name
             + sorted((i for i, n in enumerate(names) if n in kernels), key=lambda i: names[i]))
    ax.legend([handles[i] for i in order], [names[i] for i in order], fontsize=7, loc="upper left")
    fig.text(0.99, 0.005, label, ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.02, 1, 1))      # before the names: they are placed on the axes as drawn
    # every shape off the band by name (the prose names them): above the band to the left, below it to the right,
    # each a line (12 points) past the one before it, in the order of their points' heights, so that neither two
    # names nor a leader line and a name cross, however close the points (two calls of a few microseconds lie
    # close together under the band); and the worked shape, below and to the right
    height = lambda i: ax.transData.transform((pred[i], took[i]))[1] * 72 / fig.dpi      # in points
    off_band = [i for i in range(len(rows)) if off[i] > BAND]

    def name_shapes() -> list:
        spots = {}
        for side, dx, first, step, align in ((1, -10, 10, 12, "right"), (-1, 10, -3, -12, "left")):
            group = sorted((i for i in off_band if (ratio[i] > 1) == (side > 0)), key=lambda i: side * took[i])
            last = None
            for i in group:
                at = height(i)
                y = at + first if last is None else side * max(side * (at + first), side * (last + step))
                spots[i], last = ((dx, y - at), align), y
        spots.update({i: ((8, -14), "left") for i, r in enumerate(rows)
                      if worked is not None and (r["M"], r["N"], r["K"]) == tuple(worked)})
        names = []
        for i, (offset, align) in spots.items():
            r = rows[i]
            # the leader leaves the label at its edge nearest the point, not its middle, so it crosses no other label
            names.append(ax.annotate(
                f"{r['M']} x {r['N']} x {r['K']}", (pred[i], took[i]), xytext=offset, textcoords="offset points",
                ha=align, va="center", fontsize=8,
                arrowprops={"arrowstyle": "-", "color": "0.4", "relpos": (1, 0.5) if align == "right" else (0, 0.5)}))
        return names

    # a name of a point near the lower left runs past the axes (over their lines): the limits move down until
    # every name lies inside them
    for attempt in range(tries + 1):
        names = name_shapes()
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        inside = ax.get_window_extent(renderer)
        if attempt == tries or all(b.x0 >= inside.x0 and b.y0 >= inside.y0
                                   for b in (t.get_window_extent(renderer) for t in names)):
            break                              # (the last try keeps its names, inside or not)
        for t in names:
            t.remove()
        lo /= lower
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    plt.show()


def _cut(ratio: float) -> str:
    """A ratio cut, not rounded, to 3 decimals: 0.8999 is under 0.9, as the chapter counts it, and shows 0.899
    (the cells and the panels' titles alike)."""
    return f"{np.floor(ratio * 1000) / 1000:.3f}"


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
                    # white on the darkest reds and greens, black elsewhere: readable on every cell
                    ax.text(j, i, f"{_cut(v)}", ha="center", va="center", fontsize=8,
                            color="white" if v < 0.5 or v > 2.0 else "black")
            ax.set_xticks(range(len(ns)), ns, fontsize=7)
            ax.set_yticks(range(len(ms)), ms, fontsize=7)
            ax.set_xlabel("N")
            ax.set_ylabel("M")
            finite = grid[~np.isnan(grid)]
            ax.set_title(f"{title}, K = {k}\ngeometric mean {np.exp(np.log(finite).mean()):.2f}, "
                         f"smallest {_cut(finite.min())}", fontsize=8)
    bar = fig.colorbar(im, ax=axes, fraction=0.025, pad=0.02)
    bar.set_ticks([0.25, 0.5, 1, 2, 4], labels=["0.25", "0.5", "1", "2", "4"])
    bar.minorticks_off()
    bar.set_label("time of cuBLAS / time (same run)", fontsize=8)
    fig.suptitle("Against cuBLAS FP32 over (M, N): one kernel at one configuration, then a plan per shape", fontsize=9)
    fig.text(0.99, 0.01, label, ha="right", va="bottom", fontsize=7, color="0.4")
    plt.show()
