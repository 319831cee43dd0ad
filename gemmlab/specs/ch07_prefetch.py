"""Chapter 07: double-buffered shared tiles; the next tile's loads are in flight during the math."""
from ..kernel_model import KernelModel
from ..spec import Evidence, Exercise, KernelSpec, Param
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
    thread_tile=outer_thread_tile,
    static_smem=tile_smem(lambda p: 2 if p["PREFETCH"] else 1),
    pointer_alignment=lambda p: 16,
    # prefetching off and on, in the two configurations the chapter measures
    steps=(("64 x 128 tiles, 8 x 4 patches, no prefetch", {"BM": 64, "BK": 16, "TN": 4, "PREFETCH": 0}),
           ("... prefetching", {"BM": 64, "BK": 16, "TN": 4, "PREFETCH": 1}),
           ("128 x 128 tiles, 8 x 8 patches (the defaults), no prefetch", {"PREFETCH": 0}),
           ("... prefetching", {"PREFETCH": 1})),
    exercise=Exercise(
        task="Write the main loop of the double buffer: start the next tile's loads before the math on the "
             "current stage, write them into the other stage after it, and get by with one barrier per tile.",
        starter="""    for (int k0 = 0; k0 < K; k0 += BK) {
        // TODO: one tile per trip; stage s holds the current tile (the prologue above filled stage 0).
        // If there is a next tile (k0 + BK < K), start its loads into registers with load_tiles(k0 + BK)
        // BEFORE compute(s), so they are in flight during the math; after the math, write them into the
        // other stage with store_tiles(s ^ 1). Then ONE __syncthreads() for the whole trip, and swap
        // the stages.
        TODO;
    }
""",
        hints=("The order in a trip: load (registers), compute (stage s), store (stage s ^ 1), barrier, swap. "
               "The last tile has no next one: guard the load and the store with the same condition.",
               "One barrier is enough: it publishes stage s ^ 1 before anyone reads it in the next trip, and "
               "stage s ^ 1 was last read in the trip before, before the previous barrier, so nobody still "
               "reads it when store_tiles overwrites it.",
               "const bool more = k0 + BK < K; if (more) load_tiles(k0 + BK); compute(s); "
               "if (more) store_tiles(s ^ 1); __syncthreads(); s ^= 1;"),
        evidence=(Evidence("opcode", "a barrier in the loop: stage s ^ 1 must be complete before anyone reads it",
                           "BAR"),
                  Evidence("at_most", "one barrier per tile, not 06's two: the second stage is what makes "
                                      "the barrier before the stores unnecessary", "BAR"),
                  Evidence("opcode", "the next tile's 128-bit loads in the loop", "LDG.E.128"))),
)

MODEL = KernelModel(owner=outer_owner, smem_word=outer_smem_word(a_transposed=True))
