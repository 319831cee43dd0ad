"""Chapter 06: float4 global access, a transposed A tile for 128-bit shared loads, unrolling."""
from ..spec import KernelSpec, Param
from .shared import (outer_owner, outer_rules, outer_smem_word, outer_thread_tile, outer_threads, tile_smem,
                     unroll_within_tile, vector_rows)

SPEC = KernelSpec(
    name="06_vectorize", chapter=6, title="06 unrolled + vectorized",
    technique="float4 global loads and stores, transposed A tile for 128-bit shared loads, #pragma unroll",
    params=(
        Param("BM", (128,), 128, "rows of the block's C tile"),
        Param("BN", (128,), 128, "columns of the block's C tile"),
        Param("BK", (8, 16), 8, "K step"),
        Param("TM", (8,), 8, "rows of C per thread"),
        Param("TN", (4, 8), 8, "columns of C per thread (a multiple of 4: float4 stores)"),
        Param("VECTORIZE", (0, 1), 1, "1: 128-bit global loads and stores; 0: 32-bit"),
        Param("UNROLL", (1, 4, 8, 16), 8, "#pragma unroll factor of the k loop over the tile"),
    ),
    threads=outer_threads, tile=lambda p: (p["BM"], p["BN"]),
    rules=outer_rules(vector=True) + (unroll_within_tile("UNROLL"),),
    shape_rules=(vector_rows(lambda p: p["VECTORIZE"] == 1),),
    k_tile=lambda p: p["BK"],
    smem_word=outer_smem_word(a_transposed=True),
    owner=outer_owner,
    thread_tile=outer_thread_tile,
    static_smem=tile_smem(lambda p: 1),
    pointer_alignment=lambda p: 16 if p["VECTORIZE"] else 4,
    # not unrolled, partly, fully, then the default factor: the chapter explains the partial unroll's
    # slowdown from their profiles
    steps=tuple((caption, {"BK": 16, "TN": 4, "UNROLL": u})
                for caption, u in (("k loop not unrolled", 1), ("unrolled by 4", 4), ("unrolled fully (16)", 16),
                                   ("unrolled by 8 (the default factor)", 8))),
)
