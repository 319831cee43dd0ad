"""Chapter 07: what prefetching changes, as a schematic timeline of one warp (a model, no GPU)."""
from __future__ import annotations

from .. import pictures, records, registry, results
from .models import tile_costs, timeline


def show_prefetch_timeline(name: str, tiles: int = 3, latency: int | None = None, **params) -> None:
    """The first `tiles` tiles of one warp, without (PREFETCH=0) and with (PREFETCH=1) prefetching:
    global loads in flight, shared stores, barriers and math. A schematic: one warp alone (no other
    warp to switch to), a global load `latency` cycles long (unless given: the DRAM latency the
    record measured, else 600), one FFMA per cycle; durations from the tile shape, not measured."""
    spec = registry.get(name)
    if latency is None:
        try:
            latency = round(results.record().section("latency", "the memory latencies")["dram_cycles"])
        except records.NotRecorded:
            latency = 600
    if "PREFETCH" not in spec.defaults or spec.thread_tile is None or spec.k_tile is None:
        print(f"{spec.name} has no PREFETCH tunable to switch: the timeline compares PREFETCH=0 and 1")
        return
    panels, costs = [], {}
    for prefetch in (False, True):
        costs[prefetch] = tile_costs(spec, spec.resolve({**params, "PREFETCH": int(prefetch)}), latency)
        panels.append((f"PREFETCH={int(prefetch)}", timeline(costs[prefetch], tiles, prefetch)))
    c = costs[True]
    print(f"model per tile, one warp alone: global load {c.latency} cycles (the DRAM latency), shared stores {c.store}, "
          f"barrier {c.barrier}, math {c.compute} (FFMAs and shared loads).\n"
          f"PREFETCH=0: {costs[False].per_tile(False)} cycles a tile (the load waits in full); "
          f"PREFETCH=1: {c.per_tile(True)} "
          f"({c.prefetch_pace()}). With several warps per scheduler the others issue "
          f"during a wait anyway, which is why the measured gain is smaller.")
    shown = spec.resolve({k: v for k, v in params.items() if k != "PREFETCH"})
    pictures.timeline(spec, {k: v for k, v in shown.items() if k != "PREFETCH"}, panels,
                   "a model (schematic durations), not a measurement")
