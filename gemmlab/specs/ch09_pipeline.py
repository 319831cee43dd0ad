"""Chapter 09: 08's warp tiling fed by cp.async copies through a STAGES-deep pipeline."""
from ..spec import KernelSpec
from .pipelined import owner, params, rules, smem, thread_tile
from .shared import outer_smem_word, warp_threads

# 128 x 128 tiles of eight 32 x 64 warp tiles: 64 accumulators a thread, so a cap of 128 registers
# (two blocks per SM) leaves room for operands. The chapter's MINB experiment runs on them.
_HALF_TILES = {"BM": 128, "BN": 128, "WM": 32, "WN": 64}

SPEC = KernelSpec(
    name="09_pipeline", chapter=9, title="09 pipeline",
    technique="08's warp tiling fed by cp.async copies through a STAGES-deep shared-memory pipeline",
    params=params(),
    threads=warp_threads, tile=lambda p: (p["BM"], p["BN"]),
    rules=rules(),
    k_tile=lambda p: p["BK"],
    smem_word=outer_smem_word(a_transposed=True),
    owner=owner,
    thread_tile=thread_tile,
    dynamic_smem=smem,
    steps=(("128 x 128 tiles, registers as the compiler likes (MINB=1)", {**_HALF_TILES, "MINB": 1}),
           ("128 x 128 tiles, registers capped for two blocks per SM (MINB=2)", {**_HALF_TILES, "MINB": 2}),
           ("128 x 256 tiles, one block per SM: two stages", {"STAGES": 2}),
           ("... three stages", {"STAGES": 3}),
           ("... four stages", {"STAGES": 4})),
)
