"""Chapter 07: what prefetching changes, as a schematic timeline of one warp (a model, no GPU)."""
from __future__ import annotations

from .. import plots, registry
from .models import tile_costs, timeline


def show_prefetch_timeline(name: str, tiles: int = 3, latency: int = 600, **params) -> None:
    """The first `tiles` tiles of one warp, without (PREFETCH=0) and with (PREFETCH=1) prefetching:
    global loads in flight, shared stores, barriers and math. A schematic: one warp alone (no other
    warp to switch to), a global load `latency` cycles long, one FFMA per cycle; durations from
    the tile shape, not measured."""
    spec = registry.get(name)
    if "PREFETCH" not in spec.defaults or spec.thread_tile is None or spec.k_tile is None:
        print(f"{spec.name} has no PREFETCH tunable to switch: the timeline compares PREFETCH=0 and 1")
        return
    panels = []
    for prefetch in (0, 1):
        full = spec.resolve({**params, "PREFETCH": prefetch})
        costs = tile_costs(spec, full, latency)
        panels.append((f"PREFETCH={prefetch}", timeline(costs, tiles, bool(prefetch))))
    per_tile = {False: costs.latency + costs.store + 2 * costs.barrier + costs.compute,
                True: max(costs.latency, costs.compute) + costs.store + costs.barrier}
    print(f"model per tile, one warp alone: global load {costs.latency} cycles, shared stores {costs.store}, "
          f"barrier {costs.barrier}, math {costs.compute} (FFMAs and shared loads).\n"
          f"PREFETCH=0: {per_tile[False]} cycles a tile (the load waits in full); PREFETCH=1: {per_tile[True]} "
          f"(the next tile's load hides behind the math). With several warps per scheduler the others issue "
          f"during a wait anyway, which is why the measured gain is smaller.")
    shown = spec.resolve({k: v for k, v in params.items() if k != "PREFETCH"})
    plots.timeline(spec, {k: v for k, v in shown.items() if k != "PREFETCH"}, panels,
                   "a model (schematic durations), not a measurement")
