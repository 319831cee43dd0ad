"""Chapter 03: the same tiles, with consecutive threads on consecutive addresses."""
from ..spec import Exercise
from .tiled import tiled_spec

SPEC = tiled_spec("03_coalescing", 3, "03 tiling + coalescing",
                  "the same tiles, with consecutive threads on consecutive addresses of A, B and C",
                  lanes_along_rows=False,
                  exercise=Exercise(
                      task="Map the threads so that a warp's 32 lanes touch 32 consecutive addresses: pick the "
                           "fast index `f` (which column of the tile) and the slow index `s` (which first row) "
                           "from `threadIdx.x`.",
                      starter="""    // TODO: the tile column f and the first tile row s of this thread. Lanes of a warp are
    // consecutive values of threadIdx.x; in a row-major tile, consecutive addresses are consecutive
    // columns. The block has TILE * ROWS_OF_THREADS threads.
    const int f = TODO;
    const int s = TODO;
""",
                      hints=("The fast index must change from lane to lane: it comes from threadIdx.x % something.",
                             "There are TILE columns and ROWS_OF_THREADS rows of threads.",
                             "f = threadIdx.x % TILE, s = threadIdx.x / TILE.")))
