"""ipywidgets explorers built from the registry: a slider per tunable (the values it offers) and
one for the matrix size. Every change recompiles and shows the resource report; on a GPU it
also validates and re-measures against cuBLAS, elsewhere it shows the recorded figure."""
from __future__ import annotations

import ipywidgets as w

from . import bench, device, lessons, plots, records, registry
from .compile import CompileError, compile_kernel
from .registry import IllegalConfig


def explorer(name: str, arch: str | None = None):
    spec = registry.get(name)
    arch = arch or (device.facts().arch if device.available() else "sm_90")
    sliders = {p.name: w.SelectionSlider(options=list(p.offered), value=p.default, description=p.name,
                                         continuous_update=False, tooltip=p.doc)
               for p in spec.params}
    size = w.SelectionSlider(options=list(registry.EXPLORER_SIZES), value=registry.EXPLORER_SIZES[-1],
                             description="M=N=K", continuous_update=False)
    report, result = w.Output(), w.Output()

    def update(_=None):
        params = {k: s.value for k, s in sliders.items()}
        report.clear_output(wait=True)
        result.clear_output(wait=True)
        with report:
            try:
                build = compile_kernel(spec, params, arch)
            except (IllegalConfig, CompileError) as exc:
                print(f"refused: {exc}")
                return
            print(build.report())
        with result:
            s = size.value
            try:
                row, label = lessons.measurement(spec.name, spec.resolve(params), (s, s, s))
            except (records.NotRecorded, records.StaleRecord, bench.ValidationFailed) as exc:
                print(exc)
                return
            print(f"{row['gflops'] / 1e3:.2f} TFLOP/s = {row['ratio']:.1%} of cuBLAS "
                  f"({row['cublas_gflops'] / 1e3:.2f} TFLOP/s, same run); "
                  f"validated: relative error {row['rel_err']:.1e}")
            plots.explorer_bars(spec.title, row["gflops"], row["cublas_gflops"], lessons.ceilings()[0], label)

    for control in (*sliders.values(), size):
        control.observe(update, names="value")
    update()
    return w.VBox([w.HTML(f"<b>{spec.title}</b>: {spec.technique}"), w.HBox(list(sliders.values()) + [size]),
                   report, result])
