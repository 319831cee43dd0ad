"""Chapter 01: one thread per element of C, straight from global memory."""
from ..spec import KernelSpec, Param
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
    owner=lambda p, r, c: r + c * p["BLOCK_M"],          # row fastest
)
