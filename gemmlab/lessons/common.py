"""The cells every kernel chapter uses: the kernel's code, its compile report and SASS, the model's
prediction, its speed against cuBLAS (live on a GPU, else recorded: see results.py), sweeps over its
tunables, the ladder of kernels, and the explorer."""
from __future__ import annotations

import difflib

from .. import config_plots, exercises, pictures, plots, records, registry, roofline, sass, results, widgets
from ..compile import CompileError, compile_kernel
from ..spec import IllegalConfig, Problem
from .display import beside_cells, beside_header, beside_note, markdown, table
from .models import owner_grid


def _listing(spec) -> str:
    """A kernel as its chapter shows it: the exercise's lines as the starter has them (TODOs), so the
    chapter never gives its own exercise's answer away before "Your turn"."""
    return exercises.starter_text(spec) if spec.exercise else spec.path.read_text()


def _exercise_note(spec) -> str:
    if not spec.exercise:
        return ""
    return (f"\n\nThe lines between `{exercises.BEGIN}` and `{exercises.END}` are this chapter's exercise: they "
            f"are shown as your starter has them. You write them at the end (Your turn), and "
            f"`gl.solution(\"{spec.name[:2]}\")` shows them after you have tried.")


def show_kernel(name: str) -> None:
    spec = registry.get(name)
    # fenced as C++ ("c++": JupyterLab looks a fence up by language name, and knows neither "cuda" nor "cpp")
    markdown(f"`kernels/{spec.path.name}`\n\n```c++\n{_listing(spec)}```" + _exercise_note(spec))


def show_diff(old: str, new: str) -> None:
    """What changed from the kernel `old` to `new`, with `new`'s exercise lines as its starter has them."""
    a, b = registry.get(old), registry.get(new)
    # the earlier chapter's exercise markers are not this one's: they would frame its solution as this exercise
    before = [line for line in a.path.read_text().splitlines()
              if line.strip() not in (exercises.BEGIN, exercises.END)]
    diff = difflib.unified_diff(before, _listing(b).splitlines(),
                                f"kernels/{a.path.name}", f"kernels/{b.path.name}", lineterm="", n=2)
    markdown("```diff\n" + "\n".join(diff) + "\n```" + _exercise_note(b))


def show_compile_report(name: str, arch: str = "sm_90", **params) -> None:
    """Compile (or refuse) and print the resource report; refusals and compiler errors are
    shown, not raised, so a reader can try anything."""
    try:
        print(compile_kernel(name, params, arch).report())
    except IllegalConfig as exc:
        print(f"refused before compiling: {exc}")
    except CompileError as exc:
        print(exc)


def show_sass(name: str, arch: str = "sm_90", **params) -> None:
    print(sass.summary(compile_kernel(name, params, arch)))


def show_inner_loop(name: str, arch: str = "sm_90", lines: int = 40, **params) -> None:
    """The hot loop's SASS (sass.hot_lines), or its densest stretch of FFMAs where it is longer
    than `lines`: what the k loop really executes."""
    code = sass.hot_lines(compile_kernel(name, params, arch))
    best = max(range(max(1, len(code) - lines + 1)),
               key=lambda i: sum(c.startswith("FFMA") for c in code[i:i + lines]))
    print("\n".join(code[best:best + lines]))


def show_thread_map(name: str, **params) -> None:
    spec = registry.get(name)
    full = spec.resolve(params)
    pictures.thread_map(spec, full, owner_grid(spec, full), "drawn from the registry's model of the kernel's indexing")


def show_prediction(name: str, size: int = 4096, **params) -> None:
    """The roofline model's bound for this kernel's requested traffic, before any measurement."""
    spec = registry.get(name)
    full = spec.resolve(params)
    t = roofline.traffic(spec, full, Problem(*results.shape(size)))
    peak, bw = results.ceilings()
    bound = roofline.attainable_gflops(t.intensity, peak, bw)
    markdown(table(["model (no caches)", spec.config_label(full)], [
        ["bytes the threads request from global memory", f"{t.requested_bytes / 1e9:.2f} GB"],
        ["intensity (FLOP per requested byte)", f"{t.intensity:.2f}"],
        ["roofline bound if every request went to DRAM", f"{bound / 1e3:.2f} TFLOP/s"],
        ["FP32 peak", f"{peak / 1e3:.1f} TFLOP/s"],
    ]))


def show_vs_cublas(name: str, size: int = 4096, **params) -> None:
    """Validate, then time the kernel and cuBLAS interleaved (or show the recorded run)."""
    spec = registry.get(name)
    src = results.here()
    row = src.result(spec, spec.resolve(params), size)
    markdown(table(
        ["", "ms (median)", "spread (IQR)", "TFLOP/s", "of cuBLAS", "rel. error"],
        [[f"{spec.title} [{spec.config_label(row['params'])}]", f"{row['ms']:.3f}", f"{row['spread']:.1%}",
          f"{row['gflops'] / 1e3:.2f}", f"{row['ratio']:.1%}", f"{row['rel_err']:.1e} (tol {row['tol']:.1e})"],
         ["cuBLAS FP32, same run", f"{row['cublas_ms']:.3f}", f"{row['cublas_spread']:.1%}",
          f"{row['cublas_gflops'] / 1e3:.2f}", "100%", f"{row['cublas_rel_err']:.1e}"],
         *_reference_rows(src, spec, row)])
        + f"\n\nsize {row['M']}x{row['N']}x{row['K']}, validated against float64 before timing. *{src.label}*")


def _reference_rows(src, spec, row: dict) -> list[list[str]]:
    """The same configuration and size in the reference record (the H100's), where there is one."""
    ref = src.beside(spec, row["params"], (row["M"], row["N"], row["K"]))
    if ref is None:
        return []
    return [[f"{spec.title}, {src.reference.label}", f"{ref['ms']:.3f}", f"{ref['spread']:.1%}",
             f"{ref['gflops'] / 1e3:.2f}", f"{ref['ratio']:.1%}", f"{ref['rel_err']:.1e}"],
            [f"cuBLAS FP32, {src.reference.label}", f"{ref['cublas_ms']:.3f}", f"{ref['cublas_spread']:.1%}",
             f"{ref['cublas_gflops'] / 1e3:.2f}", "100%", f"{ref['cublas_rel_err']:.1e}"]]


def show_sweep(name: str, size: int = 4096) -> None:
    """Every configuration the sliders offer, at one size: live with a progress bar, or recorded."""
    spec = registry.get(name)
    src = results.here()
    rows = sorted(src.sweep(spec, size), key=lambda r: -r["gflops"])
    markdown(table(["configuration", "TFLOP/s", "of cuBLAS", "spread", *beside_header(src)],
                   [[spec.config_label(r["params"]), f"{r['gflops'] / 1e3:.2f}", f"{r['ratio']:.1%}",
                     f"{r['spread']:.1%}", *beside_cells(src, src.beside(spec, r["params"], size))] for r in rows])
             + f"\n\n*{src.label}*{beside_note(src)}")
    config_plots.config_bars(spec, rows, src.label)


def show_tunable(name: str, tunable: str, size: int = 4096, **params) -> None:
    """One tunable varied over the values the sliders offer, the others fixed: live on a GPU,
    else from the record."""
    spec = registry.get(name)
    src = results.here()
    rows = []
    for v in spec.tunable(tunable).offered:
        cfg = {**params, tunable: v}
        if not spec.is_legal(cfg):
            continue
        row = src.result(spec, spec.resolve(cfg), size)
        rows.append([f"{tunable}={v}", spec.config_label(row["params"]), f"{row['ms']:.3f}",
                     f"{row['gflops'] / 1e3:.2f}", f"{row['ratio']:.1%}",
                     *beside_cells(src, src.beside(spec, row["params"], size))])
    markdown(table([tunable, "configuration", "ms", "TFLOP/s", "of cuBLAS (same run)", *beside_header(src)], rows)
             + f"\n\nsize {size}³, each validated before timing. *{src.label}*{beside_note(src)}")


def show_ladder(names: list[str] | None = None, size: int = 4096) -> None:
    """Each kernel at its best configuration for this size (re-measured live, else recorded)
    against cuBLAS, on the roofline."""
    specs = [registry.get(n) for n in names] if names else list(registry.KERNELS.values())
    src = results.here()
    peak, bw = results.ceilings()
    rows, points = [], []
    for spec in specs:
        best = src.best(spec, size)
        t = roofline.traffic(spec, best["params"], Problem(*results.shape(size)))
        rows.append([spec.title, spec.config_label(best["params"]), f"{best['gflops'] / 1e3:.2f}",
                     f"{best['cublas_gflops'] / 1e3:.2f}", f"{best['ratio']:.1%}",
                     *beside_cells(src, src.beside(spec, best["params"], size))])
        points.append((spec.title, t.intensity, best["gflops"]))
    markdown(table(["kernel", "best configuration", "TFLOP/s", "cuBLAS (same run)", "of cuBLAS",
                    *beside_header(src)], rows)
             + f"\n\nsize {size}³. *{src.label}*{beside_note(src)}")
    plots.roofline(points, peak, bw, src.label, note="kernels at the intensity of their requested global traffic")


def show_tuning(name: str, size: int = 4096) -> None:
    """The autotuner's search as a picture: every configuration the sliders offer, GFLOP/s against
    each tunable (live on a GPU, where the best is remembered for next time; else the recorded
    sweep). `python -m gemmlab tune` searches every legal configuration (up to its --max)."""
    spec = registry.get(name)
    src = results.here()
    rows, refused, note = src.search(spec, size)
    for cfg, why in refused:
        print(f"refused {spec.config_label(cfg)}: {why}")
    best = max(rows, key=lambda r: r["gflops"])
    print(f"{len(rows)} configurations; best {spec.config_label(best['params'])}: {best['gflops'] / 1e3:.2f} TFLOP/s, "
          f"{best['ratio']:.1%} of cuBLAS in the same run")
    if src.reference is not None:
        try:
            ref = src.reference.best(spec.name, results.shape(size))
            print(f"{src.reference.label}: best {spec.config_label(ref['params'])}, {ref['gflops'] / 1e3:.2f} TFLOP/s, "
                  f"{ref['ratio']:.1%} of cuBLAS")
        except LookupError:
            pass
    config_plots.tuning(spec, rows, src.label + note)


def show_counters(names: list[str]) -> None:
    """Hardware counters read by Nsight Compute while recording (each kernel's counter
    configurations: the defaults, and every layout of chapter 04's kernel)."""
    rec = results.record()
    rows, size = [], None
    for name in names:
        spec = registry.get(name)
        for entry in rec.counters(spec.name):
            c = {records.COUNTERS[k]: v for k, v in entry["counters"].items() if k in records.COUNTERS}
            size = entry["size"]
            per = lambda a, b: f"{c[a] / c[b]:.1f}" if c.get(b) else "-"
            rows.append([f"{spec.title} [{spec.config_label(entry['params'])}]",
                         per("global load sectors", "global load requests"),
                         per("global store sectors", "global store requests"),
                         f"{c['global load sectors'] * 32 / 1e9:.1f} GB",
                         f"{c['DRAM bytes read'] / 1e9:.2f} GB",
                         f"{c['shared-load bank conflicts']:.0f}"])
    if not rows:
        print(f"no Nsight Compute counters in the record ({rec.label})")
        return
    markdown(table(["kernel", "sectors per load request", "sectors per store request",
                    "global load sectors x 32 B", "DRAM bytes read", "shared-load bank conflicts"], rows)
             + f"\n\nat {size}³, one launch each under `ncu --clock-control none`; {rec.label}")


def show_explorer(name: str):
    """Sliders over the kernel's tunables and the size (widgets.explorer)."""
    return widgets.explorer(name)
