"""Pictures of a kernel's work, drawn from its spec and the models of lessons/models.py (no
measurement in them): which thread owns which element, banks, the hot loop's instructions, warp
tiles, the walk along K, sectors, the outer product, shared-load phases, timelines, the stage ring,
the FFMA order and the wave schedule."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .plots import finish


def thread_map(spec, params, owners: np.ndarray, label: str = ""):
    """The block's tile of C, coloured by warp; warp 0's lanes numbered, `owners` giving the thread of each
    element (lessons/models.owner_grid, from the kernel's model). Consecutive lanes side by side in a row
    of C means their loads and stores touch consecutive addresses (row-major)."""
    rows, cols = owners.shape
    show_r, show_c = min(rows, 32), min(cols, 32)
    owner = owners[:show_r, :show_c]
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
    finish(fig, label)


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
    finish(fig, label)


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
    from matplotlib.patches import Patch
    # above the strips, in swatches (a legend's hairline of FFMA grey was all but invisible; under the axis title it
    # crowded it and left a band of white below)
    ax.legend(handles=[Patch(color="k", label="other (addresses, loop)")]
              + [Patch(color=color, label=cname) for cname, _, color in classes],
              fontsize=7, ncol=5, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    finish(fig, label)


def warp_tiling(spec, params, geometry: dict, label: str = ""):
    """The block tile cut into warp tiles (solid), sub-tiles (dashed), and lane 0's patches."""
    from matplotlib.patches import Rectangle
    p = {**params, **geometry}
    fig, ax = plt.subplots(figsize=(5.5, 5.5 * p["BM"] / p["BN"]))
    ax.set_xlim(0, p["BN"])
    ax.set_ylim(p["BM"], 0)
    for wr in range(p["BM"] // p["WM"]):
        for wc in range(p["BN"] // p["WN"]):
            x0, y0 = wc * p["WN"], wr * p["WM"]
            ax.add_patch(Rectangle((x0, y0), p["WN"], p["WM"], fill=True,
                                   color=plt.cm.Pastel1((wr * (p["BN"] // p["WN"]) + wc) % 9), lw=0))
            # the borders between sub-tiles, each drawn once (two dashed outlines on one border, their dashes out
            # of step, read as a solid line)
            ax.vlines([x0 + n * p["WSUBN"] for n in range(1, p["WNITER"])], y0, y0 + p["WM"], ls="--", lw=0.6,
                      color="0.3")
            ax.hlines([y0 + m * p["WSUBM"] for m in range(1, p["WMITER"])], x0, x0 + p["WN"], ls="--", lw=0.6,
                      color="0.3")
            for m in range(p["WMITER"]):
                for n in range(p["WNITER"]):
                    ax.add_patch(Rectangle((x0 + n * p["WSUBN"], y0 + m * p["WSUBM"]), p["TN"], p["TM"], color="C3"))
            # in the middle of the warp's first sub-tile, clear of lane 0's patch in its corner
            ax.text(x0 + p["WSUBN"] / 2, y0 + p["WSUBM"] / 2, f"warp {wr * (p['BN'] // p['WN']) + wc}", fontsize=6,
                    ha="center", va="center", bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))
        ax.add_patch(Rectangle((0, wr * p["WM"]), p["BN"], p["WM"], fill=False, lw=1.5, color="k"))
    for wc in range(p["BN"] // p["WN"]):
        ax.add_patch(Rectangle((wc * p["WN"], 0), p["WN"], p["BM"], fill=False, lw=1.5, color="k"))
    ax.set_xlabel("column of the block's C tile")
    ax.set_ylabel("row")
    ax.set_title(f"{spec.title} [{spec.config_label(params)}]\nwarp tiles (solid), sub-tiles (dashed), "
                 f"red: the {p['WMITER'] * p['WNITER']} TM x TN patches of lane 0 of each warp", fontsize=8)
    finish(fig, label)


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
        ax.set_ylim(y0 + rows + gap * 3.0, -gap * 0.2)          # room for the three lines under C
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(f"step {t}: k0 = {t * k_tile}", fontsize=8)
    fig.suptitle(f"{spec.title} [{spec.config_label(params)}]: a block walks K in {total_steps} steps of {k_tile} "
                 f"(the first {steps} shown)\norange: the tiles in shared memory at this step; hatched: done",
                 fontsize=9)
    finish(fig, label)


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
        # lanes along a row at 32 or more columns: a cell is narrower than two digits, and numbers side by side ran
        # together ("1617..."), so every fourth lane is numbered there
        step = 4 if c1 - c0 >= 24 and len(set(cs)) > len(set(rs)) else 1
        for lane, (r, c) in enumerate(req.elements):
            if (r, c) not in seen and (r1 - r0) * (c1 - c0) <= 64 * 64 and lane % step == 0:
                ax.text(c, r, str(lane), ha="center", va="center",
                        fontsize=5 if max(c1 - c0, r1 - r0) > 32 else 5.5)
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
                 f"blue: lanes' floats (lane numbers; along a row, every fourth), orange: the rest of their sectors",
                 fontsize=9)
    finish(fig, label)


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
    finish(fig, label)


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
    finish(fig, label)


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
    finish(fig, label)


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
    from matplotlib.collections import PolyCollection
    for (ax, az), (title, wave) in zip(axes, panels):
        # every run one rectangle of one collection per axes: a bar per slot and shade took 6 s at 6144^3's 2,000 rows
        boxes, fills = [], []
        for slot, start, dur, kind, _ in wave.runs:
            shade = f"whole{int(start + 1e-9) % 2}" if kind == "whole" else kind
            boxes.append([(start, slot), (start + dur, slot), (start + dur, slot + 1), (start, slot + 1)])
            fills.append(colours.get(shade) or plt.cm.Purples(0.45 + 0.5 * int(shade.split()[1]) / max(wave.pieces - 1, 1)))
        for a in (ax, az):
            a.add_collection(PolyCollection(boxes, facecolors=fills, edgecolors="white", linewidths=0.15))
            a.axvline(wave.makespan, color="k", lw=1, ls=":")
            a.set_ylim(wave.slots, 0)
            a.tick_params(labelsize=7)
        ax.set_xlim(0, span * 1.02)
        az.set_xlim(zoom, span * 1.01)
        ax.set_ylabel("block slot\n(SMs x blocks/SM)", fontsize=7)
        ax.set_title(f"{title}: {wave.tiles:,} tiles = {wave.tiles / wave.slots:.2f} waves of {wave.slots:,}; done at "
                     f"{wave.makespan:.2f}", fontsize=8, loc="left")
        az.set_title("the end, enlarged" + (f": {wave.split:,} tiles in {wave.split * wave.pieces:,} pieces"
                                            if wave.split else f": the last wave, {wave.last_wave:,} tiles"),
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
