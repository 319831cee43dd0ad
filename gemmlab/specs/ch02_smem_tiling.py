"""Chapter 02: blocks stage tiles of A and B in shared memory."""
from ..spec import Evidence, Exercise
from .tiled import tiled_model, tiled_spec

SPEC = tiled_spec("02_smem_tiling", 2, "02 shared-memory tiling",
                  "blocks stage TILE x TILE tiles of A and B in shared memory; threads still map to C naively",
                  exercise=Exercise(
                      task="Stage one K step's tiles in shared memory: each thread copies its share of the "
                           "TILE x TILE tiles of $A$ and $B$, zeros past the edges, and the block waits until "
                           "every copy has landed before anyone computes from them.",
                      starter="""        // TODO: stage this K step's tiles. Thread (f, s) copies OUTPUTS elements of each tile:
        // column c = s + j * ROWS_OF_THREADS of the tile, row f. A's element goes to At[c][f] (the A tile
        // transposed), B's to Bt[c][f]; elements past M, N or K are 0. Then: no thread may read the tiles
        // before every thread has written its share.
        TODO;
""",
                      hints=("A loop over j < OUTPUTS, like the compute loop below it.",
                             "The A element of thread (f, s) for column c is A[(row0 + f) * lda + k0 + c]; the B "
                             "element is B[(k0 + f) * ldb + col0 + c].",
                             "After the loop: __syncthreads(). The barrier at the end of the K step, below, keeps "
                             "the next step's copies from overwriting tiles still being read."),
                      evidence=(Evidence("opcode", "one barrier after the copies and one after the math, per K step",
                                         "BAR"),
                                Evidence("opcode", "the copies into shared memory", "STS"))))

MODEL = tiled_model(lanes_along_rows=True)
