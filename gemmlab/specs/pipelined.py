"""What chapters 09-11 share: 08's warp tiles (4 x 8 lanes of 4 x 4 patches) fed by cp.async
through a STAGES-deep pipeline (kernels/09_pipeline.cu and the two kernels built on it)."""
from __future__ import annotations

from .. import arch
from ..spec import ArchRule, Param, Problem, Rule
from .shared import (accumulator_rule, accumulators, divides, outer_smem_word, snake_interior_params,
                     unroll_within_tile, warp_grid_rules, warp_threads)


def owner(p, r: int, c: int) -> int:
    """Lanes 4 x 8 in 16 x 32 sub-tiles of a warp tile."""
    warp = (r // p["WM"]) * (p["BN"] // p["WN"]) + c // p["WN"]
    return warp * 32 + (r % 16) // 4 * 8 + (c % 32) // 4


def smem(p) -> int:
    return p["STAGES"] * 4 * p["BK"] * (p["BM"] + 4 + p["BN"])


def registers_left(p) -> int:
    return 65536 // (warp_threads(p) * p["MINB"])


def thread_tile(p) -> tuple[int, int]:
    return p["WM"] // 16 * 4, p["WN"] // 32 * 4


def params() -> tuple[Param, ...]:
    return (
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
    )


def rules() -> tuple[Rule, ...]:
    return (
        *warp_grid_rules(),
        accumulator_rule(),
        Rule("registers-per-thread",
             lambda p: accumulators(p) + 64 <= registers_left(p),
             lambda p: (f"{p['MINB']} block(s) of {warp_threads(p)} threads leave each thread "
                        f"{registers_left(p)} registers, fewer than its "
                        f"{accumulators(p)} accumulators plus 64 for operands and addresses")),
        divides("a-tile-copies", "the A tile (BM*BK floats) must split evenly into 1-float copies per thread",
                lambda p: p["BM"] * p["BK"], warp_threads),
        divides("b-tile-copies", "the B tile (BK*BN floats) must split evenly into 4-float copies per thread",
                lambda p: p["BK"] * p["BN"], lambda p: 4 * warp_threads(p)),
        unroll_within_tile("KUNROLL"),
        Rule("shared-memory-any-gpu", lambda p: smem(p) <= arch.MAX_SHARED_PER_BLOCK,
             lambda p: (f"{p['STAGES']} stages of these tiles need {smem(p)} bytes of shared memory; no GPU "
                        f"gives a block more than {arch.MAX_SHARED_PER_BLOCK // 1024} KiB (sm_90, sm_100)")),
    )


def cp_async_rule() -> ArchRule:
    return ArchRule("cp-async", lambda p, a: a.cp_async,
                    lambda p, a: (f"cp.async needs sm_80 or newer; {a.name} ({a.examples}) has no asynchronous copy. "
                                  f"There, chapter 07's kernel pipelines the tiles through registers instead, and chapter "
                                  f"08's, the last step before cp.async, runs as well."))


def kernel_fields() -> dict:
    """The KernelSpec fields 09, 10, 11 and 13 share: warp-tile geometry, cp.async, the staged tiles."""
    return dict(threads=warp_threads, tile=lambda p: (p["BM"], p["BN"]), arch_rules=(cp_async_rule(),),
                k_tile=lambda p: p["BK"], thread_tile=thread_tile, dynamic_smem=smem)


def model_fields() -> dict:
    """The KernelModel fields 09, 10, 11 and 13 share: the lanes' patches of C, the words of their shared loads,
    and an epilogue that stores C 16 bytes at a time only where its rows allow."""
    return dict(owner=owner, smem_word=outer_smem_word(a_transposed=True), vector_stores=True)


def issue_rate_params() -> tuple[Param, ...]:
    """Chapter 10's tunables (kept by 11): FFMA order, unchecked interior blocks, spread copies."""
    return (*snake_interior_params(),
            Param("SPREAD", (0, 2, 4), 4,
                  "interior blocks issue the next tile's copies SPREAD at a time between the k steps "
                  "(0: all at once after the barrier, before the math)", slider=(4,)))


def spread_rule() -> Rule:
    return Rule("spread-needs-interior", lambda p: p["SPREAD"] == 0 or p["INTERIOR"] == 1,
                lambda p: (f"SPREAD={p['SPREAD']} spreads the unchecked copies of interior blocks; with "
                           f"INTERIOR=0 there are none (use SPREAD=0)"))



def fast_tiles(p, problem: Problem) -> int:
    """Tiles whose block copies B 16 bytes at a time (09's `b_aligned`, 10's and 11's `INTERIOR ? inside :
    b_aligned`: one copy code, 09's): B's rows must start 16-byte aligned (ldb a multiple of 4 floats);
    with INTERIOR (10, 11) only tiles wholly inside M and N, with K a multiple of BK, take that path. The
    rest take the checked 4-byte copies."""
    if problem.ldb % 4:
        return 0
    if not p.get("INTERIOR", 0):
        return -(-problem.M // p["BM"]) * -(-problem.N // p["BN"])
    if problem.K % p["BK"] or max(problem.lda, problem.ldb) >= 1 << 23:
        return 0
    return (problem.M // p["BM"]) * (problem.N // p["BN"])
