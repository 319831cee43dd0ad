"""Chapter 10: 08's warp tiling fed by cp.async copies through a STAGES-deep pipeline."""
from .. import course
from ..spec import KernelSpec, Param, Rule, ShapeSearch
from .shared import (accumulator_rule, accumulators, divides, outer_smem_word, snake_interior_params,
                     snake_interior_steps, unroll_within_tile, warp_grid_rules, warp_threads)


def _owner(p, r: int, c: int) -> int:   # kernels/10_final.cu: lanes 4 x 8 in 16 x 32 sub-tiles
    warp = (r // p["WM"]) * (p["BN"] // p["WN"]) + c // p["WN"]
    return warp * 32 + (r % 16) // 4 * 8 + (c % 32) // 4


def _smem(p) -> int:
    return p["STAGES"] * 4 * p["BK"] * (p["BM"] + 4 + p["BN"])


def _registers_left(p) -> int:
    return 65536 // (warp_threads(p) * p["MINB"])


SPEC = KernelSpec(
    name="10_final", chapter=10, title="10 final",
    technique="08's warp tiling fed by cp.async copies through a STAGES-deep shared-memory pipeline",
    params=(
        Param("BM", (64, 128, 256), 128, "rows of the block's C tile", slider=(128,)),
        Param("BN", (64, 128, 256), 256, "columns of the block's C tile", slider=(128, 256)),
        Param("BK", (8, 16, 32), 16, "K step: depth of one pipeline stage", slider=(8, 16)),
        Param("WM", (32, 64), 64, "rows of a warp's C tile (sub-tiles of 16 rows)", slider=(64,)),
        Param("WN", (32, 64, 128), 64, "columns of a warp's C tile (sub-tiles of 32 columns)", slider=(64,)),
        Param("STAGES", (2, 3, 4), 4, "shared-memory buffers in the copy pipeline"),
        Param("KUNROLL", (4, 8, 16, 32), 16, "k steps unrolled at a time within a tile (code size)",
              slider=(4, 8, 16)),
        Param("GROUP", (1, 8), 8, "tile rows walked together, column by column (L2 reuse); 1: row by row"),
        Param("MINB", (1, 2), 1, "blocks per SM promised to the compiler (__launch_bounds__): caps registers",
              slider=(1,)),
        *snake_interior_params(),
        Param("SPREAD", (0, 2, 4), 4,
              "interior blocks issue the next tile's copies SPREAD at a time between the k steps "
              "(0: all at once after the barrier, before the math)", slider=(4,)),
        Param("SPLIT", (1, 2, 3, 4, 5, 7, 9, 12, 16), 1,
              "pieces along K that each tile of a last partial wave is cut into, one block each, so "
              "that no SM idles at the end (1: never)", slider=(1,)),
    ),
    threads=warp_threads, tile=lambda p: (p["BM"], p["BN"]), split=lambda p: p["SPLIT"], split_flags=4096,
    rules=(
        *warp_grid_rules(),
        accumulator_rule(),
        Rule("registers-per-thread",
             lambda p: accumulators(p) + 64 <= _registers_left(p),
             lambda p: (f"{p['MINB']} block(s) of {warp_threads(p)} threads leave each thread "
                        f"{_registers_left(p)} registers, fewer than its "
                        f"{accumulators(p)} accumulators plus 64 for operands and addresses")),
        divides("a-tile-copies", "the A tile (BM*BK floats) must split evenly into 1-float copies per thread",
                lambda p: p["BM"] * p["BK"], warp_threads),
        divides("b-tile-copies", "the B tile (BK*BN floats) must split evenly into 4-float copies per thread",
                lambda p: p["BK"] * p["BN"], lambda p: 4 * warp_threads(p)),
        unroll_within_tile("KUNROLL"),
        Rule("spread-needs-interior", lambda p: p["SPREAD"] == 0 or p["INTERIOR"] == 1,
             lambda p: (f"SPREAD={p['SPREAD']} spreads the unchecked copies of interior blocks; with "
                        f"INTERIOR=0 there are none (use SPREAD=0)")),
        Rule("shared-memory-per-block", lambda p: _smem(p) <= 227 * 1024,
             lambda p: (f"{p['STAGES']} stages of these tiles need {_smem(p)} bytes of shared memory; "
                        f"a block may have at most 227 KiB (on sm_90)")),
    ),
    k_tile=lambda p: p["BK"],
    smem_word=outer_smem_word(a_transposed=True),
    owner=_owner,
    thread_tile=lambda p: (p["WM"] // 16 * 4, p["WN"] // 32 * 4),
    dynamic_smem=_smem,
    steps=(*snake_interior_steps({"SPREAD": 0}),
           ("+ SPREAD: the next tile's copies among the FFMAs", {"SNAKE": 1, "INTERIOR": 1, "SPREAD": 4})),
    stall_profiles=True,
    shape_search=ShapeSearch(course.FINAL_SHAPES, course.FINAL_CANDIDATES, course.FINAL_REPS),
)
