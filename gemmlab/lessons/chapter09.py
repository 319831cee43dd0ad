"""Chapter 09: the ring of copy buffers of the cp.async pipeline."""
from __future__ import annotations

from .. import pictures, registry


def show_stage_ring(name: str, tiles: int = 7, **params) -> None:
    """The STAGES shared-memory buffers of the copy pipeline over the first `tiles` tiles of K: which
    tile each buffer holds while tile t is computed (and which copies are in flight)."""
    spec = registry.get(name)
    full = spec.resolve(params)
    if "STAGES" not in full:
        print(f"{spec.name} has no STAGES tunable: no ring of copy buffers to draw")
        return
    stages = full["STAGES"]
    cells, columns = {}, ["before the loop"]
    for s in range(stages):   # the prologue issues tiles 0 .. STAGES-2
        cells[(0, s)] = ("landed or in flight", s) if s < min(stages - 1, tiles) else ("unused", None)
    for t in range(tiles):
        columns.append(f"computing\ntile {t}")
        for s in range(stages):
            held = next((u for u in range(t, t + stages) if u % stages == s), None)
            if held == t:
                state = "computing"
            elif held >= tiles:
                state, held = "unused", None
            elif held == t + stages - 1:
                state = "copies issued now"
            else:
                state = "landed or in flight"
            cells[(t + 1, s)] = (state, held)
    print(f"{spec.config_label(full)}: tile t is computed from buffer t % {stages}; before that the block waits "
          f"for its copies (cp.async.wait_group {stages - 2}) and a barrier, after which the copies of tile "
          f"t + {stages - 1} go into the buffer tile t - 1 used: {stages - 1} tiles are in flight while one is "
          f"computed.")
    pictures.stage_ring(spec, full, cells, columns, stages, "the kernel's pipeline (source), no GPU involved")
