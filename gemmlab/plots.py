"""Matplotlib figures, drawn from real parameters and measurements. Nothing else lives here."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from . import roofline as model


def _finish(fig, label: str):
    fig.text(0.99, 0.01, label, ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    plt.show()


def roofline(points, peak_gflops: float, bandwidth_gbs: float, label: str, note: str = ""):
    """points: (name, FLOP/byte, GFLOP/s). The roof is min(peak, bandwidth x intensity)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = np.logspace(-1.5, 3.5, 200)
    ax.loglog(xs, [model.attainable_gflops(x, peak_gflops, bandwidth_gbs) / 1e3 for x in xs], "k-", lw=1.5)
    ridge = model.ridge_point(peak_gflops, bandwidth_gbs)
    ax.axvline(ridge, color="0.7", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, peak_gflops / 1e3 / 30), fontsize=8, color="0.4", ha="center")
    ax.annotate(f"FP32 peak {peak_gflops / 1e3:.1f} TFLOP/s", (xs[-1], peak_gflops / 1e3), fontsize=8,
                ha="right", va="bottom")
    for i, (name, x, y) in enumerate(points):
        ax.loglog([x], [y / 1e3], "o")
        ax.annotate(name, (x, y / 1e3), fontsize=8, xytext=(4, -11 if i % 2 == 0 else 5), textcoords="offset points")
    ax.set_xlabel("arithmetic intensity (FLOP per byte of global memory)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("Roofline" + (f": {note}" if note else ""), fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    _finish(fig, label)


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
    """GFLOP/s of each configuration at one size, cuBLAS from the same runs as a line."""
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(7, 0.28 * len(rows) + 1.2))
    names = [spec.config_label(r["params"]) for r in rows][::-1]
    ax.barh(names, [r["gflops"] / 1e3 for r in rows][::-1], color="C0")
    ax.axvline(np.median([r["cublas_gflops"] for r in rows]) / 1e3, color="C3", ls="--", lw=1,
               label="cuBLAS (median over these runs)")
    ax.set_xlabel("TFLOP/s")
    ax.set_title(f"{spec.title}: every configuration offered, at {rows[0]['M']}^3", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.tick_params(axis="y", labelsize=7)
    _finish(fig, label)


def explorer_bars(title: str, kernel_gflops: float, cublas_gflops: float, peak_gflops: float, label: str):
    fig, ax = plt.subplots(figsize=(6, 1.8))
    ax.barh(["FP32 peak", "cuBLAS", title], [peak_gflops / 1e3, cublas_gflops / 1e3, kernel_gflops / 1e3],
            color=["0.8", "C3", "C0"])
    ax.set_xlabel("TFLOP/s")
    for y, v in enumerate([peak_gflops, cublas_gflops, kernel_gflops]):
        ax.annotate(f"{v / 1e3:.2f}", (v / 1e3, y), xytext=(3, -3), textcoords="offset points", fontsize=8)
    _finish(fig, label)


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


def ladder(rows, shapes, label: str):
    """GFLOP/s of each kernel across shapes, and its share of cuBLAS."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    names = sorted({r["kernel"] for r in rows})
    xs = np.arange(len(shapes))
    for name in names:
        by = {(r["M"], r["N"], r["K"]): r for r in rows if r["kernel"] == name}
        ys = [by[s]["gflops"] / 1e3 if s in by else np.nan for s in shapes]
        ax1.plot(xs, ys, "o-", label=name, ms=4)
        ax2.plot(xs, [by[s]["ratio"] * 100 if s in by else np.nan for s in shapes], "o-", ms=4)
    cub = {(r["M"], r["N"], r["K"]): r["cublas_gflops"] / 1e3 for r in rows}
    ax1.plot(xs, [cub.get(s, np.nan) for s in shapes], "k--", label="cuBLAS FP32")
    for ax in (ax1, ax2):
        ax.set_xticks(xs, ["x".join(map(str, s)) for s in shapes], rotation=30, fontsize=7)
        ax.grid(alpha=0.2)
    ax1.set_yscale("log")
    ax1.set_ylabel("TFLOP/s")
    ax2.set_ylabel("% of cuBLAS (same run)")
    ax2.axhline(100, color="k", lw=0.8)
    ax1.legend(fontsize=7)
    _finish(fig, label)


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
    """Every candidate configuration at every shape as a share of cuBLAS, the pick at each shape
    (`picks`: shape -> params) circled."""
    fig, ax = plt.subplots(figsize=(9, 3.6))
    configs = []
    for r in search:
        if r["params"] not in configs:
            configs.append(r["params"])
    for i, shape in enumerate(shapes):
        rows = [r for r in search if (r["M"], r["N"], r["K"]) == shape]
        for r in rows:
            j = configs.index(r["params"])
            ax.scatter(i + (j - (len(configs) - 1) / 2) * 0.06, r["ratio"], s=14, color=f"C{j % 10}",
                       marker="o" if spec.split(r["params"]) == 1 else "^",
                       label=spec.changes_label(r["params"]) if i == 0 else None)
        best = next(r for r in rows if r["params"] == picks[shape])
        ax.scatter(i + (configs.index(best["params"]) - (len(configs) - 1) / 2) * 0.06, best["ratio"], s=90,
                   facecolors="none", edgecolors="k")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(shapes)), ["x".join(map(str, s)) for s in shapes], rotation=20, fontsize=8)
    ax.set_ylabel("share of cuBLAS (same run)")
    ax.legend(fontsize=6, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left", title="triangles: tiles split along K", title_fontsize=7)
    ax.grid(alpha=0.2, axis="y")
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
