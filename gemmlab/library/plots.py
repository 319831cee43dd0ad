"""The dispatcher's pictures: what gemmlab.matmul's plan predicted against what the call took."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def predicted_against_measured(rows: list[dict], label: str, worked: tuple[int, int, int] | None = None):
    """One point per shape of the suite: the time the plan predicted for the call it made (x) and the
    time the call took (y), both in microseconds on log scales, coloured by the kernel the plan chose.
    The diagonal is a perfect prediction; the band is within 10% of it."""
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    pred = np.array([r["predicted_us"] for r in rows])
    took = np.array([r["ms"] * 1e3 for r in rows])
    lo, hi = min(pred.min(), took.min()) / 1.5, max(pred.max(), took.max()) * 1.5
    line = np.array([lo, hi])
    ax.fill_between(line, line / 1.1, line * 1.1, color="0.9", label="within 10%")
    ax.plot(line, line, color="0.5", lw=0.8, label="measured = predicted")
    for kernel in sorted({r["plan_kernel"] for r in rows}):
        mine = [i for i, r in enumerate(rows) if r["plan_kernel"] == kernel]
        ax.scatter(pred[mine], took[mine], s=22, label=kernel, zorder=3)
    if worked is not None:
        at = [i for i, r in enumerate(rows) if (r["M"], r["N"], r["K"]) == tuple(worked)]
        for i in at:
            ax.annotate(f"{worked[0]} x {worked[1]} x {worked[2]}", (pred[i], took[i]), xytext=(8, -14),
                        textcoords="offset points", fontsize=8, arrowprops={"arrowstyle": "-", "color": "0.4"})
    off = np.abs(took / pred - 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("predicted by the plan (us)")
    ax.set_ylabel("measured, the whole call (us)")
    ax.set_title(f"gemmlab.matmul over {len(rows)} shapes: the plan's prediction against the call's time\n"
                 f"median error {np.median(off):.1%}, largest {off.max():.1%}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.text(0.99, 0.005, label, ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    plt.show()
