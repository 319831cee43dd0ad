"""Chapter 00: the GPU, its ceilings, cuBLAS across sizes, and how gemmlab measures."""
from __future__ import annotations

from .. import arch as archs, campaigns, plots, registry, roofline, results, support
from ..spec import Problem
from .display import markdown, table


def _measurements():
    src = results.here()
    return src.campaign("chapter00", "chapter 00's measurements", campaigns.measure_chapter00), src.label


def _compulsory_intensity(size) -> float:
    """FLOP per byte when A and B are read once and C written once."""
    p = Problem(*results.shape(size))
    return p.flops / roofline.compulsory_bytes(p)


def show_device() -> None:
    src = results.here()
    d = src.device()
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
    if "measured_copy_gbs" in d:
        rows.append(["DRAM copy bandwidth, measured (1 GiB, read + write)", f"{d['measured_copy_gbs']:.0f} GB/s"])
    markdown(table(["", "value"], rows) + f"\n\n*{src.label_with_reason}*")


def show_problem(M: int, N: int, K: int) -> None:
    """The two numbers before any measurement: work and the fewest bytes, and their floors."""
    p = Problem(M, N, K)
    peak, bw = results.ceilings()
    compulsory_bytes = roofline.compulsory_bytes(p)
    compute_ms = p.flops / (peak * 1e9) * 1e3
    memory_ms = compulsory_bytes / (bw * 1e9) * 1e3
    markdown(table(["", "value"], [
        ["FLOPs = 2 M N K", f"{p.flops:.3e}"],
        ["fewest bytes (A and B read once, C written once)", f"{compulsory_bytes / 1e6:.1f} MB"],
        ["intensity at best", f"{_compulsory_intensity((M, N, K)):.0f} FLOP/byte"],
        [f"time at the FP32 peak ({peak / 1e3:.1f} TFLOP/s)", f"{compute_ms:.3f} ms"],
        [f"time to move the bytes ({bw:.0f} GB/s)", f"{memory_ms:.3f} ms"],
        ["so the problem is", "compute-bound" if compute_ms > memory_ms else "memory-bound"],
    ]))


def show_cublas_sweep() -> None:
    data, label = _measurements()
    peak, _ = results.ceilings()
    ref = _reference_sweep()
    rows = [[f"{r['size']}", f"{r['ms']:.3f}", f"{r['gflops'] / 1e3:.1f}", f"{r['gflops'] / peak:.0%}",
             f"{r['rel_err']:.1e}", *([f"{ref[r['size']] / 1e3:.1f}" if r["size"] in ref else "-"] if ref else [])]
            for r in data["cublas_sweep"]]
    src = results.here()
    markdown(table(["M = N = K", "ms (median)", "TFLOP/s", "of FP32 peak", "rel. error vs float64",
                    *([f"{src.reference.device['name']} record: TFLOP/s"] if ref else [])], rows)
             + f"\n\n*{label}*" + (f" Beside it: {src.reference.label}." if ref else ""))
    plots.cublas_vs_size(data["cublas_sweep"], peak, label)


def _reference_sweep() -> dict[int, float]:
    """cuBLAS GFLOP/s per size in the reference record, beside a GPU that has no record of its own."""
    ref = results.here().beside_section("chapter00", "chapter 00's measurements")
    return {r["size"]: r["gflops"] for r in ref["cublas_sweep"]} if ref else {}


def show_cublas_roofline() -> None:
    data, label = _measurements()
    peak, bw = results.ceilings()
    points = [(str(r["size"]), _compulsory_intensity(r["size"]), r["gflops"]) for r in data["cublas_sweep"]]
    plots.roofline(points, peak, bw, label, note="cuBLAS, M = N = K as labelled, at the compulsory intensity")


def show_warmup_and_spread() -> None:
    data, label = _measurements()
    first = data["first_launches_ms"]
    settled = sorted(first[10:])[len(first[10:]) // 2]
    rows = [[i + 1, f"{t:.4f}", f"{t / settled:.2f}x"] for i, t in enumerate(first[:10])]
    call = data["first_call"]
    spec = registry.get(call["kernel"])
    markdown(
        f"**The first call** of chapter {spec.chapter:02d}'s kernel [{spec.config_label(call['params'])}] at 1024³, "
        f"never compiled or loaded before, took **{call['ms']:.0f} ms** of wall-clock time: compiling, loading the "
        f"module, launching. A launch of the loaded kernel takes {settled:.3f} ms.\n\n"
        f"**Launches right after the GPU idled for 2 s**, each timed with events, against the median of "
        f"launches 11-30 ({settled:.4f} ms):\n\n"
        + table(["launch", "ms", "vs settled"], rows)
        + "\n\n**200 timings of one cuBLAS call at 1024³**, with the L2 cache flushed before each "
        "and without:\n\n"
        + table(["", "median ms", "quartiles", "min", "max"],
                [[k, f"{v['median_ms']:.4f}", f"{v['q1_ms']:.4f} .. {v['q3_ms']:.4f}",
                  f"{v['min_ms']:.4f}", f"{v['max_ms']:.4f}"] for k, v in data["samples"].items()])
        + f"\n\n*{label}*")


def show_tf32_contrast() -> None:
    data, label = _measurements()
    rows = [[name.upper(), f"{v['gflops'] / 1e3:.1f}", f"{v['rel_err']:.1e}", f"{v['tol']:.1e}",
             "passes" if v["rel_err"] <= v["tol"] else "FAILS the FP32 check"] for name, v in data["tf32"].items()]
    size = next(iter(data["tf32"].values()))["size"]
    markdown(table([f"cuBLAS math mode ({size}³)", "TFLOP/s", "rel. error vs float64", "FP32 tolerance", "verdict"],
                   rows) + f"\n\n*{label}*")


def show_architectures() -> None:
    """What each architecture the course compiles for can hold (arch.py, from NVIDIA's programming
    guide), and which chapters' kernels run on it at their defaults: compiled for it (registers and
    blocks per SM from the cubin), or refused before compiling by the rule that names the requirement.
    The compiled cells ship precomputed (support.py); a kernel changed since is compiled now, with a bar."""
    names = list(archs.ARCHS)
    rows = [[a.name, a.family, a.examples, a.max_warps_per_sm, a.max_blocks_per_sm, f"{a.shared_per_sm // 1024} KiB",
             f"{a.shared_per_block // 1024} KiB", a.fp32_lanes_per_sm, "yes" if a.cp_async else "no"]
            for a in archs.ARCHS.values()]
    facts = table(["arch", "family", "for example", "warps / SM", "blocks / SM", "shared / SM", "shared / block",
                   "FP32 lanes / SM", "cp.async"], rows)
    found = support.table(progress=True)
    cells = found.rows
    grid = table(["kernel (defaults)", *names], [[row[0].kernel, *(c.text for c in row)] for row in cells])
    refused: dict[str, list[str]] = {}
    for row in cells:
        for c in row:
            if not c.runs:
                refused.setdefault(c.detail, []).append(c.kernel)
    why = "\n".join(f"- {', '.join(kernels)}: {detail}" for detail, kernels in refused.items())
    markdown(facts + "\n\n" + grid + ("\n\n" + why if why else "")
             + f"\n\nCubins for each architecture, never PTX, no GPU needed. {found.note()}")
