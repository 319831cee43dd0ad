"""Chapters 02-03: a block's walk along K through tiles of A and B, and the 32-byte sectors a
warp's global accesses fall in (before and after coalescing). Drawn from the spec, no GPU needed."""
from __future__ import annotations

from .. import pictures, registry, results
from ..spec import Problem
from .models import FLOAT, SECTOR, sectors_per_request, sectors_supported, warp_requests
from .display import markdown, table


def show_tile_walk(name: str, steps: int = 3, size: int = 4096, **params) -> None:
    """The block's C tile and the row panel of A and column panel of B it walks, tile by tile:
    the first `steps` steps along K."""
    spec = registry.get(name)
    full = spec.resolve(params)
    if not spec.stages_tiles or spec.k_tile is None:
        print(f"{spec.name} stages no tiles in shared memory: its threads read A and B straight from global "
              f"memory, so there is no tile walk to draw")
        return
    rows, cols = spec.tile(full)
    k = spec.k_tile(full)
    M, N, K = results.shape(size)
    total = -(-K // k)
    print(f"{spec.config_label(full)}: a block owns a {rows} x {cols} tile of C and walks K={K} in {total} steps of "
          f"{k}: at each step it stages a {rows} x {k} tile of A and a {k} x {cols} tile of B in shared memory, "
          f"and every value staged serves {cols} (A) or {rows} (B) multiply-adds")
    pictures.tile_walk(spec, full, k, min(steps, total), total, "drawn from the registry's parameters")


def show_sectors(name: str, size: int = 4096, **params) -> None:
    """Warp 0's global loads of A and B in one step of its loop over K (a k, or a tile of K), and its stores of C:
    which addresses its 32 lanes touch, and how many 32-byte sectors per request that makes (what Nsight Compute
    counts as sectors per request; 4 is the least for 32 floats)."""
    spec = registry.get(name)
    full = spec.resolve(params)
    why = sectors_supported(spec)
    if why:
        print(f"no sector picture for this kernel: {why}")
        return
    problem = Problem(*results.shape(size))
    requests = warp_requests(spec, full, problem)
    rows = []
    step = "per tile of K" if spec.stages_tiles else "per k"      # what one step of the kernel's loop over K reads
    for operand, what in (("A", f"load of A, {step}"), ("B", f"load of B, {step}"), ("C", "store of C, at the end")):
        mine = [r for r in requests if r.operand == operand]
        moved = sum(len(r.sectors) for r in mine) * SECTOR
        used = sum(len(set(r.addresses)) for r in mine) * FLOAT
        rows.append([what, len(mine), f"{sectors_per_request(requests, operand):.1f}",
                     f"{used / moved:.0%}"])
    markdown(table(["warp 0's accesses", "requests per warp", "sectors per request", "of the bytes moved, used"],
                   rows)
             + f"\n\n{spec.name} [{spec.config_label(full)}], row-major {problem.M} x {problem.K} A and "
             f"{problem.K} x {problem.N} B: a model of the kernel's indexing (written beside its spec in gemmlab/specs/), no GPU involved.")
    pictures.sectors(spec, full, [next(r for r in requests if r.operand == o) for o in ("A", "B", "C")],
                  "drawn from the registry's model of the kernel's indexing")
