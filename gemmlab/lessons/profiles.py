"""The profile loop of every kernel chapter, from the record's Nsight Compute profiles (one launch
each under `ncu --clock-control none`, at the step size): this chapter's kernel at its defaults and
at its best configuration against the previous chapter's best, as stall reasons, as counters, on
the hierarchical roofline, as issue slots, and Little's law with the measured latencies."""
from __future__ import annotations

import json

from .. import course, plots, records, registry, results
from ..compile import compile_kernel
from .display import markdown, table

# Bytes one shared-memory wavefront can move: 32 banks of 4 bytes, one pass of the pipeline.
WAVEFRONT_BYTES = 128
# Schedulers (SM sub-partitions) per SM, from Volta to Hopper.
SCHEDULERS_PER_SM = 4


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def _profile(rec, kernel: str, params: dict | None) -> dict | None:
    """The record's profile of a kernel at a configuration (cuBLAS: params None)."""
    for p in rec.stalls():
        if p["kernel"] == kernel and (params is None or _key(p["params"]) == _key(params)):
            return p
    return None


def _best_params(rec, spec) -> dict:
    """The configuration the recorder profiled as the kernel's best (the fastest at the step size)."""
    return records.best_config(rec.data["results"], spec.name, course.STEP_SIZE, spec.defaults)


def compared(rec, name: str, cublas: bool = True) -> list[tuple[str, dict]]:
    """(caption, profile) for the previous chapter's best configuration, this chapter's defaults and
    best (once where they are the same), and cuBLAS; what the record has of them."""
    spec = registry.get(name)
    out = []
    earlier = [s for s in registry.KERNELS.values() if s.chapter < spec.chapter]
    if earlier:
        prev = earlier[-1]
        out.append((f"{prev.title}, best", _profile(rec, prev.name, _best_params(rec, prev))))
    best = _best_params(rec, spec)
    out.append((f"{spec.title}, defaults" + (" = best" if best == spec.defaults else ""),
                _profile(rec, spec.name, spec.defaults)))
    if best != spec.defaults:
        out.append((f"{spec.title}, best [{spec.changes_label(best)}]", _profile(rec, spec.name, best)))
    if cublas:
        out.append(("cuBLAS FP32", _profile(rec, "cublas", None)))
    return [(caption, p) for caption, p in out if p is not None]


def _missing(rec, what: str) -> None:
    print(f"no {what} in the record ({rec.label}); `python -m gemmlab record --profiles` on a GPU with ncu")


def _flops(p: dict) -> float:
    return 2.0 * p["size"] ** 3


def show_profile(name: str) -> None:
    """Why warps wait (stall reasons per issued instruction, as a chart) and what the launch moved
    (issue rate, warps per scheduler, shared-memory wavefronts, L2 and DRAM bytes), for this
    chapter's kernel against the previous chapter's and cuBLAS."""
    rec = results.record()
    rows = compared(rec, name)
    if not rows:
        return _missing(rec, f"profiles of {name}")
    body = []
    for caption, p in rows:
        f = records.profile_figures(p, rec.device["sm_count"])
        shown = lambda values, key, scale, fmt: fmt.format(values[key] / scale) if key in values else "-"
        body.append([caption, shown(f, "gflops", 1e3, "{:.1f}"), f"{p['issued_per_scheduler']:.2f}",
                     shown(p, "warps_per_scheduler", 1, "{:.1f}"), shown(f, "ffma_share", 1, "{:.2f}"),
                     shown(f, "ffma_per_sm_cycle", 1, "{:.2f}"), shown(f, "shared_per_sm_cycle", 1, "{:.2f}"),
                     shown(p, "l2_bytes", 1e9, "{:.1f}"), shown(f, "dram_bytes", 1e9, "{:.2f}")])
    size = rows[0][1]["size"]
    markdown(table(["kernel", "TFLOP/s under ncu", "issued per cycle per scheduler", "warps per scheduler",
                    "FFMA share of instructions", "FFMAs per SM cycle (of 4)", "shared wavefronts per SM cycle (of 1)",
                    "L2 GB", "DRAM GB"], body)
             + f"\n\nat {size}³, one launch each under `ncu --clock-control none` (caches flushed before it). "
             f"An SM can issue 4 warp FFMAs a cycle (128 lanes) and pass 1 shared-memory wavefront (32 banks x 4 "
             f"bytes); the chart: cycles a warp spent stalled per instruction it issued, by reason. *{rec.label}*")
    plots.stall_stack([caption for caption, _ in rows], [p for _, p in rows],
                      [r for r in records.STALL_REASONS if r != "not_selected"], rec.label)


def ceilings(rec) -> dict[str, float]:
    """GB/s of each level the hierarchical roofline draws: DRAM from the record's copy, L2 from its
    read probe (probes.py), shared memory from one 128-byte wavefront per SM per cycle at the
    attribute clock."""
    d = rec.device
    out = {"DRAM": d["measured_copy_gbs"]}
    if "measured_l2_read_gbs" in d:
        out["L2"] = d["measured_l2_read_gbs"]
    out["shared"] = d["sm_count"] * WAVEFRONT_BYTES * d["clock_mhz"] * 1e6 / 1e9
    return out


def intensities(p: dict) -> dict[str, float]:
    """FLOP per byte each level moved in the profiled launch (shared: wavefronts x 128 bytes)."""
    out = {}
    if "dram_bytes_read" in p:
        out["DRAM"] = _flops(p) / records.profile_figures(p)["dram_bytes"]
    if "l2_bytes" in p:
        out["L2"] = _flops(p) / p["l2_bytes"]
    if "shared_wavefronts" in p and p["shared_wavefronts"]:
        out["shared"] = _flops(p) / (p["shared_wavefronts"] * WAVEFRONT_BYTES)
    return out


def show_hierarchical_roofline(name: str) -> None:
    """This chapter's kernel and the previous chapter's on the hierarchical roofline: one point per
    memory level at the intensity Nsight Compute measured there, at the speed of the profiled launch.
    A kernel is bound by the level whose roof sits lowest above its points."""
    rec = results.record()
    rows = [(caption, p) for caption, p in compared(rec, name) if intensities(p)]
    if not rows:
        return _missing(rec, f"per-level traffic for {name}")
    roofs = ceilings(rec)
    peak = rec.device["peak_fp32_tflops"] * 1e3
    points = [(caption, intensities(p), records.profile_figures(p)["gflops"]) for caption, p in rows]
    body = []
    for caption, levels, gflops in points:
        bound = {level: min(peak, roofs[level] * x) for level, x in levels.items() if level in roofs}
        lowest = min(bound, key=bound.get)
        binds = "none: the FP32 peak" if bound[lowest] >= peak else f"{lowest} ({bound[lowest] / 1e3:.1f} TFLOP/s)"
        body.append([caption, *(f"{levels[lv]:.1f}" if lv in levels else "-" for lv in roofs),
                     f"{gflops / 1e3:.1f}", binds])
    markdown(table(["kernel", *(f"FLOP per {lv} byte" for lv in roofs), "TFLOP/s under ncu",
                    "lowest memory roof above it"], body)
             + "\n\nroofs: " + ", ".join(f"{lv} {gbs / 1e3:.1f} TB/s" for lv, gbs in roofs.items())
             + f" ({'DRAM measured by a copy, L2 by a read probe' if 'L2' in roofs else 'DRAM measured by a copy'}, shared memory "
             f"128 B per SM per cycle); FP32 peak {peak / 1e3:.1f} TFLOP/s. *{rec.label}*")
    plots.hierarchical_roofline(points, roofs, peak, rec.label)


def issue_slots(rec, rows: list[tuple[str, dict]]) -> list[dict]:
    """FP32 peak x clock share x active share x issue rate x FFMA share, from each profile, against
    the speed of the same launch and the record's timed speed. Every scheduler issuing one FFMA of
    32 lanes on every cycle of the attribute clock on every SM would be the peak."""
    d = rec.device
    peak = d["peak_fp32_tflops"] * 1e3
    out = []
    for caption, p in rows:
        f = records.profile_figures(p, d["sm_count"])
        if "ffma_share" not in f:
            continue
        ffma_share = f["ffma_share"]
        clock = p["clock_hz"] / (d["clock_mhz"] * 1e6) if "clock_hz" in p else None
        active = p["sm_cycles_active"] / p["sm_cycles_elapsed"] if "sm_cycles_active" in p else None
        product = peak * p["issued_per_scheduler"] * ffma_share * (clock or 1.0) * (active or 1.0)
        timed = _timed_gflops(rec, p)
        out.append({"caption": caption, "size": p["size"], "clock": clock, "active": active,
                    "issue": p["issued_per_scheduler"], "ffma_share": ffma_share, "product": product,
                    "profiled": f.get("gflops"), "timed": timed})
    return out


def _timed_gflops(rec, p: dict) -> float:
    size = (p["size"],) * 3
    if p["kernel"] == "cublas":
        runs = sorted(r["cublas_gflops"] for r in rec.data["results"] if records.shape_key(r) == size)
        return runs[len(runs) // 2]
    return rec.result(p["kernel"], p["params"], size)["gflops"]


def show_issue_slots(name: str) -> None:
    """The issue-slot view, where the memory roofs no longer bind: the speed as FP32 peak x clock
    share x active share x issue rate x FFMA share, from the recorded counters."""
    rec = results.record()
    rows = issue_slots(rec, compared(rec, name))
    if not rows:
        return _missing(rec, f"instruction counts for {name}")
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    peak = rec.device["peak_fp32_tflops"]
    markdown(table(["kernel", "FP32 peak", "x clock share", "x SMs busy", "x issued per cycle per scheduler",
                    "x FFMA share", "= TFLOP/s", "the launch, under ncu", "timed (record)"],
                   [[r["caption"], f"{peak:.1f}", fmt(r["clock"]), fmt(r["active"]), f"{r['issue']:.2f}",
                     f"{r['ffma_share']:.2f}", f"{r['product'] / 1e3:.1f}",
                     "-" if r["profiled"] is None else f"{r['profiled'] / 1e3:.1f}", f"{r['timed'] / 1e3:.1f}"]
                    for r in rows])
             + f"\n\nat {rows[0]['size']}³. Clock share: the clock Nsight Compute saw over the attribute's "
             f"{rec.device['clock_mhz']:.0f} MHz; SMs busy: cycles an SM held work over the launch's cycles. "
             f"Timed: the record's interleaved runs, L2 flushed. *{rec.label}*")


def dram_in_flight(device: dict, dram_cycles: float) -> tuple[float, float]:
    """Little's law for DRAM: (bytes a cycle each SM receives at the measured copy bandwidth, bytes
    each SM must have in flight to keep that rate: the rate times the DRAM latency in cycles)."""
    per_sm_cycle = device["measured_copy_gbs"] * 1e9 / device["sm_count"] / (device["clock_mhz"] * 1e6)
    return per_sm_cycle, per_sm_cycle * dram_cycles


def tile_bytes(spec, full: dict) -> int:
    """Bytes of one K tile of A and B that a block copies from global memory: (rows + cols) x k_tile floats."""
    rows, cols = spec.tile(full)
    return (rows + cols) * spec.k_tile(full) * 4


def show_littles_law(name: str, **params) -> None:
    """Little's law: what must be in flight = latency x rate. With the record's measured latencies,
    the warps each scheduler must hold to keep issuing, against what the configuration has (from
    its build), and the bytes each SM must have in flight to keep DRAM busy, against what the
    kernel's tiles put in flight."""
    rec = results.record()
    lat = rec.data.get("latency")
    if lat is None:
        return _missing(rec, "memory latencies")
    spec = registry.get(name)
    build = compile_kernel(spec, params)
    full, occ = build.params, build.occupancy
    d = rec.device
    warps = occ.warps_per_sm / SCHEDULERS_PER_SM
    dram_per_sm_cycle, need_bytes = dram_in_flight(d, lat["dram_cycles"])
    rows = [["shared-memory load", f"{lat['shared_cycles']:.0f}",
             f"{lat['shared_cycles']:.0f} independent instructions per scheduler between a load and its use"],
            ["L2 hit", f"{lat['l2_cycles']:.0f}", "-"],
            ["DRAM", f"{lat['dram_cycles']:.0f}",
             f"{need_bytes / 1e3:.1f} KB per SM in flight ({dram_per_sm_cycle:.1f} B per cycle per SM x latency)"]]
    markdown(table(["load", "latency (cycles, measured)", "in flight to hide it at full rate"], rows)
             + f"\n\nlatencies: one thread chasing pointers (each load waits for the one before), "
             f"{rec.label}; DRAM rate: the record's copy bandwidth.")
    lines = [f"{spec.name} [{spec.config_label(full)}]: {occ.blocks_per_sm} block(s) per SM, {warps:g} warps per "
             f"scheduler ({build.resources.registers} registers per thread)."]
    # the tiles a block copies while it computes: STAGES - 1 ahead (09 on), one with PREFETCH (07, 08)
    stages = full["STAGES"] - 1 if "STAGES" in full else full.get("PREFETCH")
    if stages == 0 and spec.k_tile:
        lines.append("Copies in flight per SM while the blocks compute: none (PREFETCH=0): a tile's loads are in "
                     "flight only while its own block's warps wait for them.")
    elif stages is not None and spec.k_tile:
        stage = tile_bytes(spec, full)
        ahead = stages * stage * occ.blocks_per_sm
        lines.append(f"Copies in flight per SM: {stages} stage(s) ahead x {stage / 1e3:.1f} KB a stage "
                     f"x {occ.blocks_per_sm} block(s) = {ahead / 1e3:.1f} KB, against the {need_bytes / 1e3:.1f} KB "
                     f"the record's DRAM needs: {'enough' if ahead >= need_bytes else 'too little'} to cover its latency.")
    tm, tn = spec.thread_tile(full) if spec.thread_tile else (1, 1)
    lines.append(f"Each warp has {tm * tn} independent FFMAs per k step ({'an' if str(tm).startswith('8') or tm in (11, 18) else 'a'} {tm} x {tn} thread tile), so {warps:g} "
                 f"warp(s) give {warps * tm * tn:g} instructions per scheduler to cover a "
                 f"{lat['shared_cycles']:.0f}-cycle shared load: "
                 + ("enough, with loads issued a step ahead." if warps * tm * tn >= lat["shared_cycles"]
                    else "not enough: the scheduler waits."))
    print("\n".join(lines))


def show_stall_profile() -> None:
    """Why warps were not issuing, for the best configuration of every kernel and cuBLAS."""
    rec = results.record()
    rows = []
    for spec in registry.KERNELS.values():
        p = _profile(rec, spec.name, _best_params(rec, spec))
        if p:
            rows.append((spec.title, p))
    cublas = _profile(rec, "cublas", None)
    rows += [("cuBLAS FP32", cublas)] if cublas else []
    if not rows:
        return _missing(rec, "stall profiles")
    plots.stall_stack([c for c, _ in rows], [p for _, p in rows],
                      [r for r in records.STALL_REASONS if r != "not_selected"], rec.label)
