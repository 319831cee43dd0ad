"""Chapter 01: one thread per element of C, straight from global memory."""
from ..kernel_model import KernelModel
from ..spec import Evidence, Exercise, KernelSpec, Param
from .shared import block_size_rule


def _threads(p):
    return p["BLOCK_M"] * p["BLOCK_N"]


SPEC = KernelSpec(
    name="01_naive", chapter=1, title="01 naive",
    technique="one thread per element of C, straight from global memory",
    params=(
        Param("BLOCK_M", (32, 64, 128, 256), 32, "rows of C per block; consecutive threads take consecutive rows"),
        Param("BLOCK_N", (1, 2, 4, 8, 16, 32), 4, "columns of C per block"),
    ),
    threads=_threads,
    tile=lambda p: (p["BLOCK_M"], p["BLOCK_N"]),
    rules=(block_size_rule(_threads),),
    stages_tiles=False,
    exercise=Exercise(
        task="Write the loop at the heart of the naive kernel: the dot product of row `row` of $A$ and column "
             "`col` of $B$, read straight from global memory.",
        starter="""    // TODO: acc = the dot product of row `row` of A and column `col` of B. A is M x K with its rows
    // lda floats apart; B is K x N with its rows ldb floats apart (use size_t for the offsets).
    float acc = TODO;
""",
        hints=("One loop over k from 0 to K - 1, one multiply-add per step.",
               "Element (r, c) of a row-major matrix with leading dimension ld sits at r * ld + c.",
               "acc += A[(size_t)row * lda + k] * B[(size_t)k * ldb + col];"),
        evidence=(Evidence("opcode", "the multiply-adds of the dot product", "FFMA"),)),
)

MODEL = KernelModel(owner=lambda p, r, c: r + c * p["BLOCK_M"])   # row fastest
