"""What the notebooks call: one function per code cell.

Each function works with a GPU (live: compile, validate, time) and without one (compile and
SASS are still live; timings come from the recorded run, labelled with device and date).
"""
from __future__ import annotations

import difflib
import json

from . import bench, device, plots, records, registry, roofline, sass
from .compile import CompileError, compile_kernel
from .registry import IllegalConfig, Problem


# --- display -----------------------------------------------------------------------------------

def _show_markdown(text: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
        if get_ipython() is not None:
            display(Markdown(text))
            return
    except ImportError:
        pass
    print(text)


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _source_label() -> str:
    facts = device.facts()
    if facts is not None:
        return f"measured now on {facts.name}"
    return f"{records.latest().label} (no GPU here: {device.why_unavailable()})"


def _size(size) -> tuple[int, int, int]:
    return (size, size, size) if isinstance(size, int) else tuple(size)


# --- the GPU and its ceilings -------------------------------------------------------------------

def device_facts() -> dict:
    """Live facts, or the recorded device's facts when there is no GPU."""
    facts = device.facts()
    return facts.as_dict() if facts is not None else records.latest().device


def show_device() -> None:
    d = device_facts()
    live = device.facts() is not None
    rows = [
        ["GPU", d["name"]],
        ["compute capability", f"{d['compute_capability'][0]}.{d['compute_capability'][1]} ({d['arch']})"],
        ["streaming multiprocessors (SMs)", d["sm_count"]],
        ["SM clock (attribute)", f"{d['clock_mhz']:.0f} MHz"],
        ["FP32 lanes per SM", d["fp32_lanes_per_sm"]],
        ["FP32 peak = SMs x lanes x 2 x clock", f"{d['peak_fp32_tflops']:.1f} TFLOP/s"],
        ["DRAM bandwidth from attributes = 2 x mem clock x bus width", f"{d['dram_gbs']:.0f} GB/s"],
        ["L2 cache", f"{d['l2_bytes'] / 2**20:.0f} MiB"],
        ["shared memory per block (opt-in)", f"{d['smem_per_block_optin'] / 1024:.0f} KiB"],
        ["driver supports CUDA", d["driver_cuda"]],
    ]
    if live:
        rows.append(["DRAM copy bandwidth, measured now (1 GiB, read + write)",
                     f"{device.measure_copy_bandwidth():.0f} GB/s"])
    elif "measured_copy_gbs" in d:
        rows.append(["DRAM copy bandwidth, measured (1 GiB, read + write)", f"{d['measured_copy_gbs']:.0f} GB/s"])
    _show_markdown(_table(["", "value"], rows) + f"\n\n*{_source_label()}*")


def ceilings() -> tuple[float, float]:
    """(FP32 peak GFLOP/s, DRAM GB/s from attributes) of this GPU, or of the recorded one."""
    d = device_facts()
    return d["peak_fp32_tflops"] * 1e3, d["dram_gbs"]


def count(M: int, N: int, K: int) -> None:
    """The two numbers before any measurement: work and the fewest bytes, and their floors."""
    p = Problem(M, N, K)
    peak, bw = ceilings()
    t = roofline.traffic(registry.get("03"), registry.get("03").defaults, p)
    compute_ms = p.flops / (peak * 1e9) * 1e3
    memory_ms = t.compulsory_bytes / (bw * 1e9) * 1e3
    _show_markdown(_table(["", "value"], [
        ["FLOPs = 2 M N K", f"{p.flops:.3e}"],
        ["fewest bytes (A and B read once, C written once)", f"{t.compulsory_bytes / 1e6:.1f} MB"],
        ["intensity at best", f"{t.compulsory_intensity:.0f} FLOP/byte"],
        [f"time at the FP32 peak ({peak / 1e3:.1f} TFLOP/s)", f"{compute_ms:.3f} ms"],
        [f"time to move the bytes ({bw:.0f} GB/s)", f"{memory_ms:.3f} ms"],
        ["so the problem is", "compute-bound" if compute_ms > memory_ms else "memory-bound"],
    ]))


# --- chapter 00 measurements ---------------------------------------------------------------------

def measure_chapter00() -> dict:
    """Everything chapter 00 shows, measured now (used live and by `record`)."""
    cp = device._cupy()
    out = {"cublas_sweep": [], "tf32": {}, "first_launches_ms": [], "samples": {}}
    for s in registry.CUBLAS_SIZES:
        t, check = bench.bench_cublas((s, s, s))
        if not check.ok:
            raise bench.ValidationFailed(f"cuBLAS at {s}: {check}")
        out["cublas_sweep"].append({"size": s, "ms": t.median_ms, "spread": t.spread,
                                    "gflops": 2 * s ** 3 / (t.median_ms * 1e-3) / 1e9, "rel_err": check.rel_err})
    s = 4096
    for mode, name in ((bench.CUBLAS_DEFAULT_MATH, "fp32"), (bench.CUBLAS_TF32_TENSOR_OP_MATH, "tf32")):
        t, check = bench.bench_cublas((s, s, s), math_mode=mode)
        out["tf32"][name] = {"size": s, "ms": t.median_ms, "gflops": 2 * s ** 3 / (t.median_ms * 1e-3) / 1e9,
                             "rel_err": check.rel_err, "tol": check.tol}
    # What warm-up hides. (1) The first call of a kernel pays for compiling and loading it: host
    # wall clock, compile cache bypassed. (2) After the GPU idles its clock drops; launches right
    # after an idle second are timed one by one with events.
    import time
    started = time.perf_counter()
    k = bench.Kernel("03_coalescing", {"TILE": 16, "OUTPUTS": 2}, fresh=True)
    ops = bench.Operands.random(Problem(1024, 1024, 1024))
    k(ops)
    cp.cuda.runtime.deviceSynchronize()
    out["first_call_ms"] = (time.perf_counter() - started) * 1e3
    time.sleep(2.0)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(30):
        start.record()
        k(ops)
        stop.record()
        stop.synchronize()
        out["first_launches_ms"].append(cp.cuda.get_elapsed_time(start, stop))
    # Repeated timings of one cuBLAS call, with and without the L2 flush.
    ops = bench.Operands.random(Problem(1024, 1024, 1024))
    for flush in (True, False):
        (t,) = bench.time_interleaved([lambda: bench.cublas_sgemm(ops)], reps=200, flush=flush)
        out["samples"]["flushed" if flush else "hot"] = {"median_ms": t.median_ms, "q1_ms": t.q1_ms,
                                                          "q3_ms": t.q3_ms, "min_ms": t.min_ms, "max_ms": t.max_ms}
    return out


def _chapter00() -> tuple[dict, str]:
    if device.available():
        return measure_chapter00(), _source_label()
    rec = records.latest()
    return rec.data["chapter00"], rec.label


def cublas_sweep() -> None:
    data, label = _chapter00()
    peak, bw = ceilings()
    rows = [[f"{r['size']}", f"{r['ms']:.3f}", f"{r['gflops'] / 1e3:.1f}", f"{r['gflops'] / peak:.0%}",
             f"{r['rel_err']:.1e}"] for r in data["cublas_sweep"]]
    _show_markdown(_table(["M = N = K", "ms (median)", "TFLOP/s", "of FP32 peak", "rel. error vs float64"], rows)
                   + f"\n\n*{label}*")
    plots.cublas_vs_size(data["cublas_sweep"], peak, label)


def roofline_chapter00() -> None:
    data, label = _chapter00()
    peak, bw = ceilings()
    points = []
    for r in data["cublas_sweep"]:
        t = roofline.traffic(registry.get("03"), registry.get("03").defaults, Problem(r["size"], r["size"], r["size"]))
        points.append((str(r["size"]), t.compulsory_intensity, r["gflops"]))
    plots.roofline(points, peak, bw, label, note="cuBLAS, M = N = K as labelled, at the compulsory intensity")


def warmup_and_spread() -> None:
    data, label = _chapter00()
    first = data["first_launches_ms"]
    settled = sorted(first[10:])[len(first[10:]) // 2]
    rows = [[i + 1, f"{t:.4f}", f"{t / settled:.2f}x"] for i, t in enumerate(first[:10])]
    _show_markdown(
        f"**The first call** of chapter 03's kernel (1024^3, never compiled or loaded before) took "
        f"**{data['first_call_ms']:.0f} ms** of wall-clock time: compiling, loading the module, launching. "
        f"A launch of the loaded kernel takes {settled:.3f} ms.\n\n"
        f"**Launches right after the GPU idled for 2 s**, each timed with events, against the median of "
        f"launches 11-30 ({settled:.4f} ms):\n\n"
        + _table(["launch", "ms", "vs settled"], rows)
        + "\n\n**200 timings of one cuBLAS call at 1024^3**, with the L2 cache flushed before each "
        "and without:\n\n"
        + _table(["", "median ms", "quartiles", "min", "max"],
                 [[k, f"{v['median_ms']:.4f}", f"{v['q1_ms']:.4f} .. {v['q3_ms']:.4f}",
                   f"{v['min_ms']:.4f}", f"{v['max_ms']:.4f}"] for k, v in data["samples"].items()])
        + f"\n\n*{label}*")


def tf32_contrast() -> None:
    data, label = _chapter00()
    rows = [[name.upper(), f"{v['gflops'] / 1e3:.1f}", f"{v['rel_err']:.1e}", f"{v['tol']:.1e}",
             "passes" if v["rel_err"] <= v["tol"] else "FAILS the FP32 check"] for name, v in data["tf32"].items()]
    _show_markdown(_table(["cuBLAS math mode (4096^3)", "TFLOP/s", "rel. error vs float64", "FP32 tolerance", "verdict"], rows)
                   + f"\n\n*{label}*")


# --- kernels: source, compile, SASS ---------------------------------------------------------------

def show_kernel(name: str) -> None:
    spec = registry.get(name)
    _show_markdown(f"`kernels/{spec.path.name}`\n\n```cuda\n{spec.path.read_text()}```")


def show_diff(old: str, new: str) -> None:
    a, b = registry.get(old), registry.get(new)
    diff = difflib.unified_diff(a.path.read_text().splitlines(), b.path.read_text().splitlines(),
                                f"kernels/{a.path.name}", f"kernels/{b.path.name}", lineterm="", n=2)
    _show_markdown("```diff\n" + "\n".join(diff) + "\n```")


def compile_report(name: str, arch: str = "sm_90", **params) -> None:
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
    """The densest FFMA stretch of the SASS: what the hot loop really executes."""
    text = sass.disassemble(compile_kernel(name, params, arch)).splitlines()
    code = [l.strip() for l in text if l.strip().startswith("/*") and "*/" in l]
    best, best_count = 0, -1
    for i in range(max(1, len(code) - lines)):
        n = sum("FFMA" in c for c in code[i:i + lines])
        if n > best_count:
            best, best_count = i, n
    print("\n".join(code[best:best + lines]))


def show_thread_map(name: str, **params) -> None:
    spec = registry.get(name)
    plots.thread_map(spec, spec.resolve(params), "drawn from the registry's model of the kernel's indexing")


def show_banks(name: str, k: int = 0, **params) -> None:
    """The shared-memory banks the 32 lanes of warp 0 hit in the inner loop, and the conflict degree."""
    spec = registry.get(name)
    full = spec.resolve(params)
    words = spec.bank_words(full, k)
    per_bank: dict[int, set] = {}
    for w in words:
        per_bank.setdefault(w % 32, set()).add(w)
    degree = max(len(s) for s in per_bank.values())
    verdict = "conflict-free" if degree == 1 else f"{degree}-way bank conflict: the read is replayed {degree} times"
    print(f"{spec.config_label(full)}, step k={k}: the warp's 32 words fall in {len(per_bank)} banks; {verdict}")
    plots.bank_map(words, f"{spec.title} [{spec.config_label(full)}]: {verdict}",
                   "drawn from the kernel's indexing (registry model)")


def reuse_per_thread(name: str, **params) -> None:
    """The arithmetic a thread does per value it loads, for the current tunables."""
    spec = registry.get(name)
    p = spec.resolve(params)
    tm = p.get("TM", 1) * (p["WM"] * p["WN"] // (32 * p["TM"] * p["TN"] * p["WNITER"]) if "WNITER" in p else 1)
    tn = p.get("TN", 1) * p.get("WNITER", 1)
    threads = spec.threads(p)
    rows, cols = spec.tile(p)
    _show_markdown(_table(["per step of k, per thread", spec.config_label(p)], [
        ["values loaded from shared memory (A + B)", f"{tm} + {tn} = {tm + tn}"],
        ["multiply-adds", f"{tm} x {tn} = {tm * tn}"],
        ["FMAs per shared-memory value", f"{tm * tn / (tm + tn):.2f}"],
        ["inner product (chapters 02-04) for comparison", "1 FMA per 2 values (0.5), or OUTPUTS/(OUTPUTS+1)"],
        ["block tile / threads", f"{rows} x {cols} / {threads} threads = {rows * cols // threads} outputs each"],
        ["global FLOP per byte of the staged tiles", f"{2 * rows * cols / (4 * (rows + cols)):.1f}"],
    ]))


def unroll_study(name: str = "06_vectorize", tunable: str = "UNROLL", **params) -> None:
    """What #pragma unroll does to the code, compiled for every legal value of the unroll tunable
    (no GPU needed). The 'inner loop' columns count the innermost loop that holds the FFMAs."""
    spec = registry.get(name)
    rows = []
    for value in next(p.offered for p in spec.params if p.name == tunable):
        cfg = {**params, tunable: value}
        if not spec.is_legal(cfg):
            continue
        build = compile_kernel(spec, cfg)
        hot = sass.hot_region(build)
        ffma = sum(op.startswith("FFMA") for op in hot)
        lds = sum(op.startswith("LDS") for op in hot)
        rows.append([value, build.resources.registers, len(sass.instructions(build)), len(hot), ffma,
                     f"{ffma / len(hot):.0%}", lds])
    base = spec.resolve({**params, tunable: rows[0][0]})
    _show_markdown(_table([tunable, "registers", "SASS instructions (kernel)", "inner loop: instructions",
                           "FFMA", "FFMA share", "shared loads"], rows)
                   + f"\n\n{spec.name}, other tunables {spec.config_label({k: v for k, v in base.items() if k != tunable})}, "
                   f"sm_90, static counts from the SASS")


def copy_placement(name: str = "10_final", arch: str = "sm_90") -> None:
    """Where the hot loop issues the next tile's copies, in the chapter's last two steps (SPREAD off,
    then on), from the SASS (no GPU needed): what a warp issues between the barrier and its first
    FFMA, and a strip of the whole loop, one tick per instruction."""
    spec = registry.get(name)
    rows, strips = [], []
    for _, cfg in spec.studies[-2:]:
        full = spec.resolve(cfg)
        ops = sass.hot_region(compile_kernel(spec, full, arch))
        barrier = next(i for i, op in enumerate(ops) if op.startswith("BAR"))
        first_ffma = ops.index("FFMA", barrier)
        between = ops[barrier + 1:first_ffma]
        copies = [i for i, op in enumerate(ops) if op.startswith("LDGSTS")]
        rows.append([f"SPREAD={full['SPREAD']}", len(ops), len(between),
                     sum(op.startswith("LDGSTS") for op in between), sum(op.startswith("LDS.128") for op in between),
                     f"{min(copies) / len(ops):.0%} to {max(copies) / len(ops):.0%}"])
        strips.append((f"SPREAD={full['SPREAD']}", ops))
    _show_markdown(_table(["build", "hot loop: instructions", "after the barrier, before the first FFMA",
                           "of them copies", "of them shared loads", "copies sit at (share of the loop)"], rows)
                   + f"\n\n{spec.name} [{spec.config_label(full)}], {arch}, static counts from the SASS")
    plots.hot_loop(strips, f"{spec.name}, {arch} SASS of the hot loop (one K tile)")


def compare(name: str, tunable: str, size: int = 4096, **params) -> None:
    """One tunable varied, the others fixed: live on a GPU, else from the record."""
    spec = registry.get(name)
    values = next(p.offered for p in spec.params if p.name == tunable)
    rows = []
    for v in values:
        cfg = {**params, tunable: v}
        if not spec.is_legal(cfg):
            continue
        row, label = measurement(spec.name, spec.resolve(cfg), size)
        rows.append([f"{tunable}={v}", spec.config_label(row["params"]), f"{row['ms']:.3f}",
                     f"{row['gflops'] / 1e3:.2f}", f"{row['ratio']:.1%}"])
    _show_markdown(_table([tunable, "configuration", "ms", "TFLOP/s", "of cuBLAS (same run)"], rows)
                   + f"\n\nsize {size}^3, each validated before timing. *{label}*")


def steps(name: str, size: int = registry.STUDY_SIZE) -> None:
    """The chapter's additions switched on one at a time (the registry's studies): time against
    cuBLAS (live, else recorded), how the hot loop's FFMAs get their operands (from the SASS), and
    the recorded Nsight Compute issue rate and dispatch / wait stalls where the record has them."""
    spec = registry.get(name)
    stalls = {json.dumps(r["params"], sort_keys=True): r for r in records.latest().data.get("stalls", [])
              if r["kernel"] == spec.name}
    rows, label = [], ""
    for caption, cfg in spec.studies:
        full = spec.resolve(cfg)
        row, label = measurement(spec.name, full, size)
        reads = sass.operand_reads(compile_kernel(spec, full))
        prof = stalls.get(json.dumps(full, sort_keys=True))
        issue, dispatch, wait = ((f"{prof['issued_per_scheduler']:.2f}", f"{prof['stalls']['dispatch_stall']:.2f}",
                                  f"{prof['stalls']['wait']:.2f}") if prof else ("-", "-", "-"))
        rows.append([caption, f"{row['gflops'] / 1e3:.2f}", f"{row['ratio']:.1%}",
                     f"{reads['from_cache'] / reads['ffma']:.2f}", f"{reads['same_bank'] / reads['ffma']:.1%}",
                     issue, dispatch, wait])
    _show_markdown(_table(["step", "TFLOP/s", "of cuBLAS (same run)", "FFMA operands from the reuse cache",
                           "FFMAs with two reads in one bank", "issued per cycle per scheduler",
                           "dispatch stalls", "wait stalls"], rows)
                   + f"\n\n{spec.name} [{spec.config_label(spec.resolve(spec.studies[-1][1]))}] at {size}^3, "
                   f"each step validated before timing. *{label}*. Operand columns: static counts over the hot "
                   f"loop's FFMAs in the sm_90 SASS. Stalls: cycles per issued instruction, from the record's "
                   f"Nsight Compute profiles ('-' where the record has none).")


def show_warp_tiling(name: str = "08_warp_tiling", **params) -> None:
    spec = registry.get(name)
    full = spec.resolve(params)
    plots.warp_tiling(spec, full, registry._warp_geometry(full), "drawn from the registry's parameters")


# --- predictions and measurements ------------------------------------------------------------------

def predict(name: str, size: int = 4096, **params) -> None:
    spec = registry.get(name)
    full = spec.resolve(params)
    p = Problem(*_size(size))
    t = roofline.traffic(spec, full, p)
    peak, bw = ceilings()
    bound = roofline.attainable_gflops(t.intensity, peak, bw)
    _show_markdown(_table(["model (no caches)", spec.config_label(full)], [
        ["bytes the threads request from global memory", f"{t.requested_bytes / 1e9:.2f} GB"],
        ["intensity (FLOP per requested byte)", f"{t.intensity:.2f}"],
        ["roofline bound if every request went to DRAM", f"{bound / 1e3:.2f} TFLOP/s"],
        ["FP32 peak", f"{peak / 1e3:.1f} TFLOP/s"],
    ]))


def measurement(name: str, params: dict, size) -> tuple[dict, str]:
    """(result row, where it comes from): measured now on a GPU, else the recorded one."""
    if device.available():
        return bench.bench(name, params, _size(size)).as_row(), _source_label()
    rec = records.latest()
    return rec.result(name, params, _size(size)), rec.label


def measure(name: str, size: int = 4096, **params) -> None:
    """Validate, then time the kernel and cuBLAS interleaved (or show the recorded run)."""
    spec = registry.get(name)
    row, label = measurement(spec.name, spec.resolve(params), size)
    _show_markdown(_table(
        ["", "ms (median)", "spread (IQR)", "TFLOP/s", "of cuBLAS", "rel. error"],
        [[f"{spec.title} [{spec.config_label(row['params'])}]", f"{row['ms']:.3f}", f"{row['spread']:.1%}",
          f"{row['gflops'] / 1e3:.2f}", f"{row['ratio']:.1%}", f"{row['rel_err']:.1e} (tol {row['tol']:.1e})"],
         ["cuBLAS FP32, same run", f"{row['cublas_ms']:.3f}", f"{row['cublas_spread']:.1%}",
          f"{row['cublas_gflops'] / 1e3:.2f}", "100%", f"{row['cublas_rel_err']:.1e}"]])
        + f"\n\nsize {row['M']}x{row['N']}x{row['K']}, validated against float64 before timing. *{label}*")


def sweep(name: str, size: int = 4096) -> None:
    """Every configuration the sliders offer, at one size: live with a progress bar, or recorded."""
    spec = registry.get(name)
    if device.available():
        from tqdm.auto import tqdm
        rows = [bench.bench(spec.name, cfg, _size(size)).as_row()
                for cfg in tqdm(spec.explorer_configs(), desc=f"{spec.name} at {size}")]
        label = _source_label()
    else:
        rec = records.latest()
        rows = rec.at(spec.name, _size(size))
        label = rec.label
    rows.sort(key=lambda r: -r["gflops"])
    _show_markdown(_table(["configuration", "TFLOP/s", "of cuBLAS", "spread"],
                          [[spec.config_label(r["params"]), f"{r['gflops'] / 1e3:.2f}", f"{r['ratio']:.1%}",
                            f"{r['spread']:.1%}"] for r in rows]) + f"\n\n*{label}*")
    plots.config_bars(spec, rows, label)


def ladder(names: list[str] | None = None, size: int = 4096) -> None:
    """Each kernel at its best recorded (or freshly swept) configuration against cuBLAS, on the roofline."""
    names = names or list(registry.KERNELS)
    peak, bw = ceilings()
    rows, points = [], []
    for name in names:
        spec = registry.get(name)
        if device.available():
            best = _best_live(spec, size)
            label = _source_label()
        else:
            rec = records.latest()
            best = rec.best(spec.name, _size(size))
            label = rec.label
        t = roofline.traffic(spec, best["params"], Problem(*_size(size)))
        rows.append([spec.title, spec.config_label(best["params"]), f"{best['gflops'] / 1e3:.2f}",
                     f"{best['cublas_gflops'] / 1e3:.2f}", f"{best['ratio']:.1%}"])
        points.append((spec.title, t.intensity, best["gflops"]))
    _show_markdown(_table(["kernel", "best configuration", "TFLOP/s", "cuBLAS (same run)", "of cuBLAS"], rows)
                   + f"\n\nsize {size}^3. *{label}*")
    plots.roofline(points, peak, bw, label, note="kernels at the intensity of their requested global traffic")


def measure_ladder(results: list[dict]) -> list[dict]:
    """Each kernel at its best 4096 configuration (from `results`) over the ladder shapes."""
    from tqdm.auto import tqdm
    jobs = [(name, records.best_params(results, name), shape)
            for name in registry.KERNELS for shape in registry.LADDER_SHAPES]
    return [bench.bench(n, p, s, budget_s=0.3).as_row() for n, p, s in tqdm(jobs, desc="ladder")]


def ladder_sizes() -> None:
    """Chapter 09: every kernel at its best configuration against cuBLAS over sizes and shapes."""
    rec = records.latest()
    if device.available():
        rows, label = measure_ladder(rec.data["results"]), _source_label()
    else:
        if "ladder" not in rec.data:
            print(f"the ladder over sizes has not been recorded yet ({rec.label}); run `python -m gemmlab record` on a GPU")
            return
        rows, label = rec.data["ladder"], rec.label
    shapes = [tuple(s) for s in registry.LADDER_SHAPES]
    by = {(r["kernel"], (r["M"], r["N"], r["K"])): r for r in rows}
    header = ["kernel", "configuration"] + ["x".join(map(str, s)) for s in shapes]
    table = []
    for name, spec in registry.KERNELS.items():
        cells = [by.get((name, s)) for s in shapes]
        params = next((c["params"] for c in cells if c), None)
        table.append([spec.title, spec.config_label(params) if params else "-"] +
                     [f"{c['gflops'] / 1e3:.1f} ({c['ratio']:.0%})" if c else "-" for c in cells])
    cublas = [next((r["cublas_gflops"] for r in rows if (r["M"], r["N"], r["K"]) == s), None) for s in shapes]
    table.append(["cuBLAS FP32", "median over the runs"] + [f"{c / 1e3:.1f}" if c else "-" for c in cublas])
    _show_markdown(_table(header, table) + "\n\nTFLOP/s (share of cuBLAS timed in the same run). *" + label + "*")
    plots.ladder(rows, shapes, label)


def _best_live(spec, size) -> dict:
    """Best configuration at this size, re-measured live so the table is from this run: what
    `tune` found on this GPU for this size class, else the recorded best, else the defaults."""
    from . import tune
    params = tune.best_params(device.facts().name, spec.name, _size(size))
    if params is None:
        try:
            params = records.latest().best(spec.name, _size(size))["params"]
        except (records.NotRecorded, records.StaleRecord):
            params = spec.defaults
    return bench.bench(spec.name, params, _size(size)).as_row()


def tuning(name: str, size: int = 4096) -> None:
    """The autotuner's search as a picture: every configuration the sliders offer, GFLOP/s against
    each tunable (live on a GPU, where the best is remembered for next time; else the recorded
    sweep). `python -m gemmlab tune` searches every legal configuration."""
    from . import tune
    spec = registry.get(name)
    if device.available():
        search = tune.tune(spec.name, _size(size), only={p.name: set(p.offered) for p in spec.params})
        rows, label = search.rows, _source_label() + f"; best remembered in {tune.store_path()}"
        for cfg, why in search.refused:
            print(f"refused {spec.config_label(cfg)}: {why}")
    else:
        rec = records.latest()
        rows = rec.at(spec.name, _size(size))
        label = rec.label + " (the record's sweep; `python -m gemmlab tune` searches on your GPU)"
    best = max(rows, key=lambda r: r["gflops"])
    print(f"{len(rows)} configurations; best {spec.config_label(best['params'])}: {best['gflops'] / 1e3:.2f} TFLOP/s, "
          f"{best['ratio']:.1%} of cuBLAS in the same run")
    plots.tuning(spec, rows, label)


def search_final(progress: bool = True) -> list[dict]:
    """At each FINAL_SHAPES, every FINAL_CANDIDATES configuration of 10, validated and then timed
    against cuBLAS: what chapter 10's table picks its configuration per shape from."""
    from tqdm.auto import tqdm
    jobs = [(shape, cfg) for shape in registry.FINAL_SHAPES for cfg in registry.FINAL_CANDIDATES]
    return [bench.bench("10_final", cfg, shape, budget_s=0.25).as_row()
            for shape, cfg in tqdm(jobs, desc="10_final: a configuration per shape", disable=not progress)]


def final_params(search: list[dict], shape) -> dict:
    """The fastest configuration of a final search at one shape."""
    rows = [r for r in search if (r["M"], r["N"], r["K"]) == tuple(shape)]
    if not rows:
        raise records.NotRecorded(f"no configuration of 10_final was searched at {'x'.join(map(str, shape))}")
    return max(rows, key=lambda r: r["gflops"])["params"]


def measure_final(params_at) -> list[dict]:
    """Chapter 10's table: the final kernel against cuBLAS at each FINAL_SHAPES, at the configuration
    `params_at(shape)` gives, FINAL_REPS timed runs of each, interleaved, L2 flushed before every
    run, validated first."""
    from tqdm.auto import tqdm
    return [bench.bench("10_final", params_at(shape), shape, reps=registry.FINAL_REPS).as_row()
            for shape in tqdm(registry.FINAL_SHAPES, desc="10_final against cuBLAS")]


def _changes(spec, params: dict) -> str:
    return spec.changes_label(params) or "the defaults"


def final_search() -> None:
    """The recorded search behind chapter 10's table: every candidate configuration at every shape,
    as a share of cuBLAS in the same run; the one each shape uses is bold in the table, circled in the plot."""
    rec = records.latest()
    search = rec.data.get("final_search")
    if not search:
        print(f"no final search in the record ({rec.label}); `python -m gemmlab record --final` on a GPU")
        return
    spec = registry.get("10_final")
    shapes = [tuple(s) for s in registry.FINAL_SHAPES]
    picks = {s: final_params(search, s) for s in shapes}
    rows = []
    for cfg in registry.FINAL_CANDIDATES:
        full = spec.resolve(cfg)
        cells = {(r["M"], r["N"], r["K"]): r for r in search if r["params"] == full}
        rows.append([_changes(spec, full)] + [("**{:.3f}**" if picks[s] == full else "{:.3f}").format(cells[s]["ratio"])
                                              if s in cells else "-" for s in shapes])
    _show_markdown(_table(["configuration (changes from the defaults)"] + ["x".join(map(str, s)) for s in shapes], rows)
                   + f"\n\nShare of cuBLAS timed in the same run; bold: the fastest at each shape, which the table "
                   f"below re-measures. *{rec.label}*")
    plots.final_search(spec, search, shapes, picks, rec.label)


def final_table() -> None:
    """The final kernel against cuBLAS over the chapter's shapes, each at its own configuration:
    live on a GPU (what `tune` found on this GPU for the shape's size class, else the record's final
    search), else the recorded run."""
    from . import tune
    rec = records.latest()
    if device.available():
        def params_at(shape):
            found = tune.best_params(device.facts().name, "10_final", shape)
            return found if found is not None else final_params(rec.data.get("final_search", []), shape)
        rows = measure_final(params_at)
        label = _source_label()
    elif "final" in rec.data:
        rows, label = rec.data["final"], rec.label
    else:
        print(f"chapter 10's table has not been recorded yet ({rec.label}); run "
              f"`python -m gemmlab record --final` on a GPU")
        return
    spec = registry.get("10_final")
    table = [["x".join(map(str, (r["M"], r["N"], r["K"]))), _changes(spec, r["params"]), f"{r['gflops'] / 1e3:.2f}",
              f"{r['spread']:.1%}", f"{r['cublas_gflops'] / 1e3:.2f}", f"{r['cublas_spread']:.1%}", f"{r['ratio']:.3f}",
              r["reps"], f"{r['rel_err']:.1e}"] for r in rows]
    _show_markdown(_table(["M x N x K", "configuration (changes from the defaults)", "10 final TFLOP/s", "spread",
                           "cuBLAS TFLOP/s", "spread", "final / cuBLAS", "timed runs each", "relative error"], table)
                   + f"\n\ndefaults: {spec.config_label(spec.defaults)}; medians of interleaved runs, L2 flushed "
                   f"before each; spread = interquartile range / median. *{label}*")
    plots.versus(rows, label)


def stall_profile() -> None:
    """Why warps were not issuing: Nsight Compute's stall reasons per issued instruction, for the
    best 08 and 10 configurations and for cuBLAS's own FP32 kernel (recorded at 4096^3). The
    record also profiles the chapters' steps; gl.steps shows those."""
    rec = records.latest()
    rows = rec.data.get("stalls")
    # the first profile of each kernel is its best configuration (records.record's order)
    rows = [r for i, r in enumerate(rows or []) if r["kernel"] not in {x["kernel"] for x in rows[:i]}]
    if not rows:
        print(f"no stall profiles in the record ({rec.label}); `python -m gemmlab record --final` on a GPU with ncu")
        return
    table = []
    for r in rows:
        name = "cuBLAS FP32" if r["kernel"] == "cublas" else registry.get(r["kernel"]).title
        lost = sum(v for k, v in r["stalls"].items() if k != "not_selected")
        if r["kernel"] != "cublas":
            name += f" [{registry.get(r['kernel']).config_label(r['params'])}]"
        table.append([name, f"{r['issued_per_scheduler']:.2f}",
                      *(f"{r['stalls'][k]:.2f}" for k in records.STALL_REASONS[:6]), f"{lost:.2f}"])
    _show_markdown(_table(["kernel", "instructions issued per cycle per scheduler",
                           *(k.replace("_", " ") for k in records.STALL_REASONS[:6]), "all stalls"], table)
                   + f"\n\ncycles a warp spent stalled, per instruction it issued, by reason; 'not selected' "
                   f"(eligible, but another warp issued) left out of the total. {rows[0]['size']}^3, one launch "
                   f"each under `ncu --clock-control none`; {rec.label}")
    plots.stalls(rows, records.STALL_REASONS, rec.label)


def show_counters(names: list[str]) -> None:
    """Hardware counters read by Nsight Compute while recording (default configurations, and
    every layout of a kernel that has a LAYOUT switch)."""
    rec = records.latest()
    prof = rec.data.get("ncu", {})
    rows, size = [], records.PROFILE_SIZE
    for name in names:
        spec = registry.get(name)
        entries = prof.get(spec.name, [])
        for entry in [entries] if isinstance(entries, dict) else entries:  # older records: one entry
            c, size = entry["counters"], entry["size"]
            per = lambda a, b: f"{c[a] / c[b]:.1f}" if c.get(b) else "-"
            rows.append([f"{spec.title} [{spec.config_label(entry['params'])}]",
                         per("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
                         per("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
                         f"{c['l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum'] * 32 / 1e9:.1f} GB",
                         f"{c['dram__bytes_read.sum'] / 1e9:.2f} GB",
                         f"{c['l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum']:.0f}"])
    if not rows:
        print(f"no Nsight Compute counters in the record ({rec.label})")
        return
    _show_markdown(_table(["kernel", "sectors per load request", "sectors per store request",
                           "global load sectors x 32 B", "DRAM bytes read", "shared-load bank conflicts"], rows)
                   + f"\n\nat {size}^3, one launch each under `ncu --clock-control none`; {rec.label}")


def explore(name: str):
    from . import widgets
    return widgets.explorer(name)
