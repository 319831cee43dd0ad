"""Chapter 07: double-buffered shared tiles; the next tile's loads are in flight during the math."""
from ..spec import KernelSpec, Param
from .shared import (outer_owner, outer_rules, outer_smem_word, outer_thread_tile, outer_threads, tile_smem,
                     vector_rows)

SPEC = KernelSpec(
    name="07_prefetch", chapter=7, title="07 prefetching",
    technique="double-buffered shared tiles: the next tile's loads are in flight during the math",
    params=(
        Param("BM", (64, 128), 128, "rows of the block's C tile"),
        Param("BN", (128,), 128, "columns of the block's C tile"),
        Param("BK", (8, 16), 8, "K step"),
        Param("TM", (8,), 8, "rows of C per thread"),
        Param("TN", (4, 8), 8, "columns of C per thread"),
        Param("PREFETCH", (0, 1), 1, "1: two shared stages, loads of tile t+1 during the math of tile t"),
    ),
    threads=outer_threads, tile=lambda p: (p["BM"], p["BN"]),
    rules=outer_rules(vector=True),
    shape_rules=(vector_rows(),),
    k_tile=lambda p: p["BK"],
    smem_word=outer_smem_word(a_transposed=True),
    owner=outer_owner,
    thread_tile=outer_thread_tile,
    static_smem=tile_smem(lambda p: 2 if p["PREFETCH"] else 1),
    pointer_alignment=lambda p: 16,
    # prefetching off and on, in the two configurations the chapter measures
    steps=(("64 x 128 tiles, 8 x 4 patches, no prefetch", {"BM": 64, "BK": 16, "TN": 4, "PREFETCH": 0}),
           ("... prefetching", {"BM": 64, "BK": 16, "TN": 4, "PREFETCH": 1}),
           ("128 x 128 tiles, 8 x 8 patches (the defaults), no prefetch", {"PREFETCH": 0}),
           ("... prefetching", {"PREFETCH": 1})),
)
