"""Chapter 14's cells: one plan per shape. gemmlab.matmul's dispatcher, the model it prices every chapter's
kernels with, one shape worked through from its features to the call's measured time, the suite, and the
chapter's exercise (`import gemmlab.library.lessons as gl` in notebooks/14_dispatch.ipynb: the library
teaches itself, so the course never imports it)."""
from __future__ import annotations

import math

import ipywidgets as w

from .. import library, records, registry
from ..lessons.display import friendly, markdown, table
from ..lessons import your_turn
from ..spec import BadProblem
from ..widgets import TOOLTIP, Panel
from . import dispatch, time_model
from . import exercise as round_time_exercise
from . import plots


def _suite_record(say: bool = True):
    """The newest record that holds gemmlab.matmul's suite, or None (having said how to make one)."""
    rec = next((r for r in records.load_all() if r.data.get("matmul_suite")), None)
    if rec is None and say:
        markdown("No record holds gemmlab.matmul's suite yet: on a GPU, `python -m gemmlab record --matmul` "
                 "measures it.")
    return rec


def show_plans(shapes: list[tuple[int, int, int]]) -> None:
    """gemmlab.matmul's plan for each shape (dispatch.plan: the model fitted to the record): which
    kernel, configuration and split, how many SMs get a block, and what the model predicts. No timing."""
    plans = [dispatch.plan(*shape) for shape in shapes]
    m = time_model.model(dispatch.device_facts()[0]["name"])     # the model the plans came from
    rows, capped = [], []
    for p in plans:
        launch = p.choice.launch
        split = (f"{launch.split_tiles:,} of {launch.tiles:,} tiles in {launch.pieces}" if launch.split_tiles else
                 f"all {launch.tiles:,} in {launch.k_split}" if launch.k_split > 1 else "none")
        why = launch.spec.k_split_why(launch.params, launch.problem)
        if why:                        # the configuration says SPLIT=n, the launch cuts fewer: say why
            capped.append(f"Note {len(capped) + 1}, {p.problem.M} x {p.problem.N} x {p.problem.K}: {why}.")
            split += f", note {len(capped)}"
        rows.append([f"{p.problem.M} x {p.problem.N} x {p.problem.K}", launch.spec.name,
                     launch.spec.changes_label(launch.params) or "defaults", split,
                     f"{min(launch.blocks, launch.sm_count)} of {launch.sm_count}", p.reshaping or "no",
                     f"{p.predicted_us:,.1f}", f"{p.problem.flops / p.predicted_us / 1e6:.1f}"])
    markdown(table(["M x N x K", "kernel", "configuration (against its defaults)", "tiles split along K",
                    "SMs with a block", "reshaped", "predicted us", "predicted TFLOP/s"], rows)
             + "".join(f"\n\n{line}" for line in capped)
             + f"\n\nPredicted by the {plans[0].basis}: a model, not a measurement. Its fitted constants: a launch "
               f"{m.launch_us:.1f} us; a split tile's chain, per piece: "
               + ", ".join(f"{name}'s {c:.1f} us" for name, c in sorted(m.chain_by_kernel.items()))
               + " (chapter 11's pieces add into C one after another, chapter 13's last piece reads the others' "
                 "partial tiles); a tile on a kernel's slow copy path (rows not 16-byte multiples, or a ragged "
                 f"edge) takes {1 + m.ragged:.2f} times as long"
               + "".join(f", {name}'s {1 + r:.2f}" + (" (at its defaults' tiles; its model weighs other tiles' slow "
                                                      "path by their shape)" if _weighs_tiles(m, name) else "")
                         for name, r in sorted(m.ragged_by_kernel.items()))
               + "; where C's rows are not 16-byte multiples, so that it is stored 4 bytes at a time, a tile's cost "
                 "beyond its K steps is " + ", ".join(f"{name}'s {1 + s:.2f} times as long" for name, s
                                                    in sorted(m.store_by_kernel.items()))
               + f" ({sum(c.store is not None for c in m.candidates)} configurations have a factor of their own)"
               + ". `python -m gemmlab bench matmul --size M N K` times a plan against cuBLAS on a GPU.")


def _weighs_tiles(m, kernel: str) -> bool:
    """Whether the kernel's model weighs its candidates' slow copy path by their tiles (KernelModel.slow_weight)."""
    return any(registry.model(c.spec).slow_weight(c.params) != 1.0 for c in m.candidates if c.spec.name == kernel)


def show_worked_plan(shape: tuple[int, int, int]) -> None:
    """One shape end to end: the plan's reasons for its choice, every kernel's best option priced by the
    model, and, where the record ran gemmlab.matmul at this shape, what the call took against cuBLAS."""
    p = dispatch.plan(*shape)
    options = [p.choice, *p.others]
    rows = []
    for o in options:
        launch = o.launch
        busiest = -(-launch.blocks // launch.sm_count)
        # chapter 11's split cuts only the last wave's tiles, each into `pieces`; chapter 13's every tile
        piece = -(-launch.k_steps // launch.pieces)
        steps = (f"{launch.piece_steps:,}" + (f" (every tile in {launch.k_split} pieces)" if launch.k_split > 1 else "")
                 if not launch.split_tiles else
                 f"{piece:,} (every tile in {launch.pieces} pieces)" if launch.split_tiles == launch.tiles else
                 f"{launch.k_steps:,}, {piece:,} in the pieces of the last {launch.split_tiles:,} tiles")
        rows.append([launch.spec.name, launch.spec.changes_label(launch.params) or "defaults",
                     f"{launch.blocks:,}", f"{launch.slots:,}", f"{busiest} of {launch.blocks_per_sm}", steps,
                     f"{o.predicted_us:,.1f}", "**chosen**" if o is p.choice else f"+{o.predicted_us / p.choice.predicted_us - 1:.0%}"])
    text = (f"**{shape[0]} x {shape[1]} x {shape[2]}**, predicted by the {p.basis}.\n\nWhy this option:\n\n"
            + "\n".join(f"- {why}" for why in p.reasons())
            + "\n\n" + table(["kernel", "configuration (against its defaults)", "blocks", "block slots",
                              "busiest SM's blocks, of those it holds at once", "K steps a block",
                              "predicted us", "against the choice"], rows))
    if p.refused:
        text += "\n\nCannot run it: " + "; ".join(p.refused)
    rec = _suite_record(say=False)
    ran = [r for r in (rec.data["matmul_suite"] if rec else []) if records.shape_key(r) == tuple(shape)]
    if ran:
        r = ran[0]
        same = r["plan_kernel"] == p.spec.name and r["params"] == p.params
        text += (f"\n\nMeasured ({rec.device['name']}, {r['date']}, `record --matmul`): the call took "
                 f"{r['ms'] * 1e3:,.1f} us against the {r['predicted_us']:,.1f} us its plan predicted, and cuBLAS FP32 "
                 f"took {r['cublas_ms'] * 1e3:,.1f} us in the same run: {r['ratio']:.2f} times cuBLAS's speed."
                 + ("" if same else f" (That run's plan was {r['plan_kernel']} {r['params']}; the plan has changed "
                                    f"since.)"))
    markdown(text)


def show_predicted_against_measured(worked: tuple[int, int, int] | None = None) -> None:
    """The plan's predicted time against the measured time of every call of the recorded suite."""
    rec = _suite_record()
    if rec is None:
        return
    rows = rec.data["matmul_suite"]
    plots.predicted_against_measured(rows, f"measured on {rec.device['name']}, {rows[0]['date']}", worked)


def show_matmul_suite() -> None:
    """gemmlab.matmul against cuBLAS FP32 over the course's shape suite, as recorded (`record --matmul`):
    the table with its geometric mean and smallest ratio, then the ratio over (M, N) for a few K, one
    kernel at its defaults beside the plan per shape."""
    rec = _suite_record()
    if rec is None:
        return
    rows = rec.data["matmul_suite"]
    markdown(f"{_suite_markdown(rows)}\n\nRecorded on {rec.device['name']}, {rows[0]['date']}: "
             f"each shape validated against a float64 product first, then timed interleaved with cuBLAS FP32 in "
             f"the same run, the L2 flushed before every launch, {rows[0]['reps']} runs each (ratio: cuBLAS's time "
             f"over gemmlab.matmul's, above 1 is faster; spread: the timings' interquartile range over their "
             f"median). The whole call is timed, as a user makes it. A plan marked +edges ran peeled (whole tiles, "
             f"then the rows or columns past them by plans of their own), one marked +copyB on a copy of B in 16-byte "
             f"rows" + (", one marked +padN with C's columns padded to whole narrow tiles" if any(r.get("padded") for r in rows)
                        else "") + (", one marked +padM with C's rows padded to whole tiles"
                                    if any(r.get("padded_rows") for r in rows) else "")
             + (", one marked +timed the configuration its first call kept after timing a near tie, not the "
                "model's first" if any(library.timed_away(r) for r in rows) else "") + ".")
    heat = rec.data.get("matmul_heatmap")
    if heat:
        plots.dispatch_heatmaps(heat, heat[0]["kernel"], f"measured on {rec.device['name']}, {heat[0]['date']}")


def _suite_markdown(rows: list[dict]) -> str:
    """library.suite_table's rows and summary as a Markdown table, which wraps in a narrow window where the
    fixed-width text broke its lines mid-number."""
    body = []                   # each plan as its changes against its kernel's defaults, as chapter 14's tables
    for r in rows:
        changes = registry.get(r["plan_kernel"]).changes_label(r["params"]) or "defaults"
        plan = (r["plan_kernel"] + "".join(f" {mark}" for mark in library.reshaped_marks(r))
                + (" +timed" if library.timed_away(r) else "") + f" ({changes})")
        body.append(["x".join(str(r[d]) for d in "MNK"), plan,
                     f"{r['gflops'] / 1e3:.2f}", f"{r['cublas_gflops'] / 1e3:.2f}", f"{r['ratio']:.3f}",
                     f"{r['spread']:.1%}"])
    return (table(["M x N x K", "plan", "TFLOP/s", "cuBLAS", "ratio", "spread"], body) + "\n\n"
            + "\n".join(f"- {n}" for n in library.suite_summary(rows)))


def _plan_markdown(text: str) -> str:
    """A plan's text (Plan.__str__) as Markdown: its first line bold, its reasons a list, so that a narrow
    output wraps between words."""
    lines = text.splitlines()
    out = [f"**{lines[0]}**", ""]
    for line in lines[1:]:
        line = line.strip()
        out.append(line if line.startswith("- ") else f"\n{line}\n")
    return "\n".join(out)


def typed_size(name: str, text: str) -> int:
    """A size as typed in a box: a whole number, written 3000, 3,000, 3_000 or 3e9. BadProblem naming the box
    otherwise; Problem says which sizes no SGEMM can have."""
    plain = text.strip().replace(",", "").replace("_", "")
    try:
        return int(plain)
    except ValueError:
        pass
    try:
        value = float(plain)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value != int(value):
        raise BadProblem(f"{name} must be a whole number (such as 4096, 4,096 or 4e3), got {text.strip()!r}")
    return int(value)


def show_plan_explorer(M: int = 3000, N: int = 3000, K: int = 3000):
    """Three boxes for M, N and K, and gemmlab.matmul's plan for that shape, with its reasons."""
    # text boxes read by typed_size: a number box would take 3e9 as 39, or clamp a size past what the kernels take
    # into another shape than the one typed, where the plan refuses it with its reason
    # each box's name is a label of its own: JupyterLab shows a text box's tooltip only on a box without a description
    what = {"M": "rows of A and C", "N": "columns of B and C", "K": "columns of A, rows of B"}
    boxes = {name: w.Text(value=str(value), placeholder=name, continuous_update=False,
                          layout=w.Layout(width="14em"), **{TOOLTIP: f"{name}: {what[name]}; Enter plans it"})
             for name, value in (("M", M), ("N", N), ("K", K))}
    out = w.Output()

    def update(_=None):
        out.clear_output(wait=True)
        with out:
            try:
                shape = [typed_size(name, box.value) for name, box in boxes.items()]
                markdown(_plan_markdown(str(dispatch.plan(*shape))))
            except (BadProblem, time_model.NotFitted) as exc:
                print(f"no plan: {exc}")

    for box in boxes.values():
        box.observe(update, names="value")
    update()
    named = [w.HBox([w.Label(name, layout=w.Layout(width="1.5em")), box]) for name, box in boxes.items()]
    return Panel([w.HBox(named), out],
                 "[gemmlab.matmul's plan for the shape typed in M, N and K; run this cell to type one]")


# Chapter 14's exercise is Python (library/exercise.py): the course's exercise cells, given its spec.

@friendly
def exercise(chapter: str = "14", fresh: bool = False) -> None:
    your_turn.exercise_of(round_time_exercise.SPEC, fresh)


@friendly
def check(chapter: str = "14", file: str | None = None) -> None:
    print(round_time_exercise.check(file))


@friendly
def hint(chapter: str = "14") -> None:
    your_turn.hint_of(round_time_exercise.SPEC)


@friendly
def solution(chapter: str = "14") -> None:
    your_turn.solution_of(round_time_exercise.SPEC)


@friendly
def progress() -> None:
    """Which exercises pass on this machine, every chapter's: the kernel chapters' and chapter 14's."""
    your_turn.progress_of([(round_time_exercise.SPEC, round_time_exercise.check)])


for _name in ("show_plans", "show_worked_plan", "show_predicted_against_measured", "show_matmul_suite",
              "show_plan_explorer"):
    globals()[_name] = friendly(globals()[_name])

