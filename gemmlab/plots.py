"""The course's charts of measurements across kernels and shapes: rooflines (one level and every
memory level), cuBLAS over sizes, the ladder, one kernel against cuBLAS shape by shape, and the
stalls of profiles. Every figure here and in config_plots.py and pictures.py ends with `finish`."""
from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.lines as mlines
import matplotlib.text as mtext
import numpy as np

from . import roofline as model


def finish(fig, label: str):
    """Write where the figure's numbers come from (`label`) in its corner, lay it out and show it."""
    fig.text(0.99, 0.01, label, ha="right", va="bottom", fontsize=7, color="0.4")
    # a strip of its own at the bottom, a fixed height (a share of the height left a short figure's label on its axes)
    fig.tight_layout(rect=(0, min(0.2 / fig.get_figheight(), 0.1), 1, 1))
    plt.show()


# colours past the default ten, far from them and from each other (Sasha Trubetskoy's "20 simple, distinct colors")
DISTINCT = ["#000075", "#808000", "#9A6324", "#469990", "#e6194B", "#3cb44b", "#f032e6", "#42d4f4"]


def roofline(points, peak_gflops: float, bandwidth_gbs: float, label: str, note: str = "",
             partners: tuple[list[float], str, str] | None = None):
    """points: (name, FLOP/byte, GFLOP/s). The roof is min(peak, bandwidth x intensity). The ridge's
    label stands along its line at the bottom of the plot, on the side with no point near it, and
    the peak's label above the roof, where no point can be. partners: (GFLOP/s beside each point, at its
    intensity, what the points are, what the partners are): each drawn hollow in its point's colour and joined
    to it, unnamed (a legend says which is which), so that a pair reads as one shape."""
    markers = len(points) * (2 if partners else 1)
    fig, ax = plt.subplots(figsize=(7, 4.2) if markers <= 12 else (9, 5.6))   # room for many names
    xs = np.logspace(-1.5, 3.5, 200)
    roof = [model.attainable_gflops(x, peak_gflops, bandwidth_gbs) / 1e3 for x in xs]
    ax.loglog(xs, roof, "k-", lw=1.5)
    ridge = model.ridge_point(peak_gflops, bandwidth_gbs)
    ax.axvline(ridge, color="0.7", ls=":", lw=1)
    # more points than the default cycle's 10 colours: more colours, so that no two shapes share one
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"] + (DISTINCT if len(points) > 10 else [])
    colours = [ax.loglog([x], [y / 1e3], "o", color=palette[n % len(palette)])[0].get_color()
               for n, (_, x, y) in enumerate(points)]
    hollow = []
    if partners:
        gflops, ours, theirs = partners
        for (_, x, y), g, c in zip(points, gflops, colours):
            ax.loglog([x, x], [y / 1e3, g / 1e3], "-", color=c, lw=0.8, alpha=0.6)
            ax.loglog([x], [g / 1e3], "o", color=c, markerfacecolor="none", markeredgewidth=1.2)
            hollow.append((x, g / 1e3))
        ax.legend(handles=[mlines.Line2D([], [], color="0.3", marker="o", ls="none", label=ours),
                           mlines.Line2D([], [], color="0.3", marker="o", ls="none", markerfacecolor="none",
                                         label=theirs)], fontsize=8, loc="lower right")
    ax.set_ylim(top=peak_gflops / 1e3 * 2.2)
    low, high = ax.get_ylim()
    ax.annotate(f"FP32 peak {peak_gflops / 1e3:.1f} TFLOP/s", (ridge, peak_gflops / 1e3), xytext=(4, 3),
                textcoords="offset points", fontsize=8, ha="left", va="bottom")
    # names keep clear of the hollow points and of the roof itself (a name struck through by it reads badly)
    _point_labels(ax, [(name, x, y / 1e3, c) for (name, x, y), c in zip(points, colours)],
                  obstacles=hollow + [(x, y) for x, y in zip(xs, roof) if low <= y <= high])
    # the label spans the lowest ~40% of the plot (log scale), 5-25% of a decade beside the line
    near = lambda side: sum(1 for _, x, y in points
                            if 0 < side * np.log10(x / ridge) < 0.25 and np.log10(y / 1e3 / low) < 0.45 * np.log10(high / low))
    side = 1 if near(1) <= near(-1) else -1
    ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, 0.03), xycoords=("data", "axes fraction"),
                xytext=(3 * side, 0), textcoords="offset points", rotation=90, fontsize=8, color="0.4",
                ha="left" if side > 0 else "right", va="bottom")
    ax.set_xlabel("arithmetic intensity (FLOP per byte of global memory)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("Roofline" + (f": {note}" if note else ""), fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    finish(fig, label)


def _point_labels(ax, points, height: float = 0.045, obstacles=()):
    """Names (coloured like their points) for points (name, x, y, colour) on log-log axes, top down:
    each in the first place beside its point (right, left, above, below) that covers no point, no
    label placed before it and no word already on the axes, else in the free place inside the axes
    nearest to its point, with a thin line to it (where no place is free, the nearest that overlaps
    least: a label never leaves the axes). Widths are measured as the figure's renderer draws them."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    frac = lambda v, lo, hi: (np.log10(v) - np.log10(lo)) / (np.log10(hi) - np.log10(lo))
    extent = ax.get_window_extent()
    box_w, box_h = extent.width or 450.0, extent.height or 300.0
    try:
        renderer = ax.figure.canvas.get_renderer()
    except AttributeError:
        renderer = None
    boxes_before = []
    if renderer is not None:    # the words already on the axes (the peak's label) are kept clear too
        for text in list(ax.texts):
            if hasattr(text, "update_positions"):      # an annotation: placed from its anchor only when drawn
                text.update_positions(renderer)
            b = mtext.Text.get_window_extent(text, renderer)
            boxes_before.append(((b.x0 - extent.x0) / box_w, (b.y0 - extent.y0) / box_h,
                                 (b.x1 - extent.x0) / box_w, (b.y1 - extent.y0) / box_h))

    def text_width(name: str) -> float:
        if renderer is None:                    # about 6.7 pixels a character at fontsize 8 and 100 dpi
            return min(len(name) * 6.7 / box_w, 0.98)
        probe = ax.text(0, 0, name, fontsize=8)
        width = probe.get_window_extent(renderer).width
        probe.remove()
        return min((width + 4) / box_w, 0.98)

    at = [(frac(x, x0, x1), frac(y, y0, y1)) for _, x, y, _ in points]
    marks = at + [(frac(x, x0, x1), frac(y, y0, y1)) for x, y in obstacles]     # unnamed markers are kept clear too
    boxes = [(fx - 0.012, fy - 0.02, fx + 0.012, fy + 0.02) for fx, fy in marks] + boxes_before   # markers, words

    def overlaps(box):
        return sum(not (box[2] <= b[0] or b[2] <= box[0] or box[3] <= b[1] or b[3] <= box[1]) for b in boxes)

    def box_of(tx, ty, ha, width):
        left = tx - width if ha == "right" else tx
        return left, ty - height / 2, left + width, ty + height / 2

    inside = lambda box: box[0] >= 0 and box[1] >= 0 and box[2] <= 1 and box[3] <= 1
    for n in sorted(range(len(points)), key=lambda n: -at[n][1]):
        name, x, y, colour = points[n]
        fx, fy = at[n]
        width = text_width(name)
        beside = [s for s in [(fx + 0.02, fy, "left"), (fx - 0.02, fy, "right"), (fx - width / 2, fy + 0.045, "left"),
                              (fx - width / 2, fy - 0.045, "left")] if inside(box_of(*s, width))]
        spot = next((s for s in beside if not overlaps(box_of(*s, width))), None)
        if spot is None:       # the axes' other places, nearest first (only where none beside the point is free)
            grid = sorted(((tx, ty, "left") for ty in np.arange(height / 2, 1 - height / 2, height / 2)
                           for tx in np.arange(0.01, 1 - width, 0.02)),
                          key=lambda s: (s[0] + width / 2 - fx) ** 2 + (s[1] - fy) ** 2)
            spots = beside + [s for s in grid if inside(box_of(*s, width))]
            spot = next((s for s in spots if not overlaps(box_of(*s, width))),
                        min(spots, key=lambda s: overlaps(box_of(*s, width))) if spots else (0.01, fy, "left"))
        tx, ty, ha = spot
        boxes.append(box_of(tx, ty, ha, width))
        moved = spot not in beside
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
    finish(fig, label)


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
    ax1.legend(fontsize=8, ncol=2, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)   # not on a bar
    ax2.bar(xs, [r["ratio"] for r in rows], 0.6, color=["C2" if r["ratio"] >= 1 else "C1" for r in rows])
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set_ylabel("kernel / cuBLAS (same run)")
    ax2.set_ylim(min(0.8, min(r["ratio"] for r in rows) - 0.05), max(1.05, max(r["ratio"] for r in rows) + 0.05))
    for ax in (ax1, ax2):
        ax.set_xticks(xs, names, rotation=25, fontsize=8)
        ax.grid(alpha=0.2, axis="y")
    finish(fig, label)


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
    finish(fig, label)


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
    finish(fig, label)


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
    finish(fig, label)
