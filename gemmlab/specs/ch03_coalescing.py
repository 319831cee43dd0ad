"""Chapter 03: the same tiles, with consecutive threads on consecutive addresses."""
from ..spec import Exercise
from .tiled import tiled_model, tiled_spec

SPEC = tiled_spec("03_coalescing", 3, "03 tiling + coalescing",
                  "the same tiles, with consecutive threads on consecutive addresses of A, B and C",
                  exercise=Exercise(
                      task="Stage the tiles so that a warp's 32 lanes read 32 consecutive addresses: thread (f, s) "
                           "copies element (r, f) of this K step's tile of $A$ and of $B$ into `As[r][f]` and "
                           "`Bs[r][f]`, with the fast index `f` along the columns, zero past the edges.",
                      starter="""            // TODO: copy element (r, f) of this K step's tiles into As[r][f] and Bs[r][f]: the A tile starts
            // at row row0, column k0 of A; the B tile at row k0, column col0 of B. Both are row-major with
            // leading dimensions lda and ldb. Elements past M, N or K are zero.
            TODO;
""",
                      hints=("Consecutive lanes have consecutive f: let f pick the column, so that a warp reads "
                             "consecutive floats of one row of A and of B.",
                             "Element (r, f) of the A tile is A[(row0 + r) * lda + (k0 + f)], of the B tile "
                             "B[(k0 + r) * ldb + (col0 + f)] (size_t for the offsets); test the row and the column "
                             "against M, N or K first.",
                             "const int ar = row0 + r, ak = k0 + f; As[r][f] = (ar < M && ak < K) ? "
                             "A[(size_t)ar * lda + ak] : 0.0f; and the same for B with bk = k0 + r, bc = col0 + f.")))

MODEL = tiled_model(lanes_along_rows=False)
