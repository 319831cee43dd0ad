"""ipywidgets explorers built from the registry: a slider per tunable (the values it offers) and
one for the matrix size. Every change recompiles and shows the resource report, then the kernel's
speed against cuBLAS from results.here(): validated and measured now on a GPU, else the record's."""
from __future__ import annotations

import textwrap
import threading

import ipywidgets as w

from . import bench, config_plots, course, records, registry, results
from .compile import CompileError, compile_kernel, ready
from .spec import IllegalConfig, Problem, UnsupportedShape


class Panel(w.VBox):
    """A box of controls whose plain-text form is a sentence, not `VBox(children=(...))`: that text is
    what a saved notebook shows where JupyterLab does not draw the saved widgets (a notebook it does
    not trust, or any page before its cell runs). ipywidgets cuts it at 110 characters."""

    def __init__(self, children, summary: str):
        super().__init__(children)
        self.summary = summary

    def __repr__(self) -> str:
        return self.summary


def explorer_summary(name: str) -> str:
    spec = registry.get(name)
    return f"[explorer of {spec.title}: {len(spec.params)} tunables and the size; run this cell to move its sliders]"


# ipywidgets 8 calls a control's hover text `tooltip`; 7 (Colab's) calls it `description_tooltip`.
TOOLTIP = "tooltip" if int(w.__version__.split(".")[0]) >= 8 else "description_tooltip"


def _label_width(*names: str) -> str:
    """A CSS width that holds the longest of the names in the notebook's font (an upper-case letter is about 1.3
    widths of a digit, CSS's 'ch', in JupyterLab's and Colab's sans-serif faces), and never narrower than the
    widgets' own 80 pixels."""
    return f"max(80px, {max(1.3 * len(n) for n in names) + 1:.0f}ch)"


def explorer(name: str, arch: str | None = None):
    spec = registry.get(name)
    src = results.here()
    arch = arch or src.device()["arch"]
    # one label width for every slider, room for the longest name (the default cut 'EVICT_FIRST' to 'EVICT_FIR...')
    style = {"description_width": _label_width(*(p.name for p in spec.params), "M=N=K")}
    # a tunable the explorer offers one value of is shown greyed out, not as a slider that seems to move
    sliders = {p.name: w.SelectionSlider(options=list(p.offered), value=p.default, description=p.name,
                                         continuous_update=False, style=style, disabled=len(p.offered) == 1,
                                         **{TOOLTIP: p.doc + (f" (the explorer offers {p.default} only)"
                                                               if len(p.offered) == 1 else "")})
               for p in spec.params}
    size = w.SelectionSlider(options=list(course.EXPLORER_SIZES), value=course.EXPLORER_SIZES[-1],
                             description="M=N=K", continuous_update=False, style=style,
                             **{TOOLTIP: "the square product the result is shown at: M = N = K"})
    report, result = w.Output(), w.Output()
    chart = w.Image(format="png", layout=w.Layout(display="none", height="auto", max_width="100%"))
    busy = threading.Lock()     # one redraw at a time, whichever thread the kernel runs callbacks on

    def show_chart(png: bytes | None):
        """The chart's picture, or none: nothing of another configuration stays on screen."""
        chart.value = png or b""
        chart.layout.display = None if png else "none"
        if png:     # at its own size (pixel for pixel), narrower only where the cell is narrower
            chart.layout.width = f"{int.from_bytes(png[16:20], 'big')}px"     # the PNG header's width

    def update(_=None):
        with busy:
            params = {k: s.value for k, s in sliders.items()}
            if spec.is_legal(params) and not ready(spec, params, arch):
                # a compile takes seconds: say so at once, and show nothing of the configuration before
                report.clear_output()
                result.clear_output()
                show_chart(None)
                with report:
                    print(f"compiling {' '.join(f'{k}={v}' for k, v in params.items())} (a few seconds)...")
            report.clear_output(wait=True)
            result.clear_output(wait=True)
            with report:
                try:
                    build = compile_kernel(spec, params, arch)
                except (IllegalConfig, CompileError) as exc:
                    print(f"refused: {exc}")
                    show_chart(None)
                    with result:
                        print("no measurement: this configuration is refused (above)")
                    return
                print(build.report())
                if build.resources.spills:
                    print("note: this configuration spills registers to local memory; expect it to be slower")
            with result:
                try:     # a size the configuration refuses (chapter 12's SIDE=2 takes K of 32 or less): its rule
                    spec.check_shape(build.params, Problem(size.value, size.value, size.value))
                except UnsupportedShape as exc:
                    show_chart(None)
                    print(f"no measurement at {size.value}³: {exc}")
                    return
                try:
                    row = src.result(spec, build.params, size.value)
                except (records.NotRecorded, records.StaleRecord, bench.ValidationFailed) as exc:
                    show_chart(None)
                    print(exc)
                    return
                print(f"{row['gflops'] / 1e3:.2f} TFLOP/s = {row['ratio']:.1%} of cuBLAS "
                      f"({row['cublas_gflops'] / 1e3:.2f} TFLOP/s, same run); "
                      f"validated: relative error {row['rel_err']:.1e}")
                fewer = spec.k_split_why(build.params, Problem(size.value, size.value, size.value))
                if fewer:        # two SPLIT values can run the same launch: say so beside their equal figures
                    print(textwrap.fill(f"at {size.value}³ {fewer}", 100))
                ref = src.beside(spec, build.params, size.value)
                if ref is not None:
                    print(f"{src.reference.label}: {ref['gflops'] / 1e3:.2f} TFLOP/s = {ref['ratio']:.1%} of cuBLAS")
            show_chart(config_plots.explorer_bars_png(spec.title, row["gflops"], row["cublas_gflops"], results.ceilings()[0],
                                               src.label))

    for control in (*sliders.values(), size):
        control.observe(update, names="value")
    update()
    # many tunables wrap onto several rows instead of one row wider than the cell
    controls = w.HBox(list(sliders.values()) + [size], layout=w.Layout(flex_flow="row wrap"))
    return Panel([w.HTML(f"<b>{spec.title}</b>: {spec.technique}{fixed_note(spec)}"), controls, report, result, chart],
                 explorer_summary(name))


def fixed_note(spec) -> str:
    """A line under the title naming the greyed-out sliders, each at the one value the explorer offers (their hover
    text says so too, but a greyed slider alone reads as broken); '' where none is."""
    fixed = [p for p in spec.params if len(p.offered) == 1]
    if not fixed:
        return ""
    names = ", ".join(f"{p.name}={p.default}" for p in fixed)
    return (f"<br><small>Greyed out: {names}. The explorer offers one value of {'each' if len(fixed) > 1 else 'it'} "
            f"(hover over a slider for what it sets).</small>")
