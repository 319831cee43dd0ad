"""Chapter 05: each thread accumulates a TM x TN tile of C in registers, with outer products."""
from ..kernel_model import KernelModel
from ..spec import Evidence, Exercise, KernelSpec, Param
from .shared import outer_owner, outer_rules, outer_smem_word, outer_thread_tile, outer_threads

SPEC = KernelSpec(
    name="05_register_tiling", chapter=5, title="05 register tiling",
    technique="each thread accumulates a TM x TN tile of C in registers with outer products",
    params=(
        Param("BM", (64, 128), 128, "rows of the block's C tile"),
        Param("BN", (128,), 128, "columns of the block's C tile"),
        Param("BK", (8, 16), 8, "K step: depth of the A and B tiles"),
        Param("TM", (4, 8), 8, "rows of C per thread"),
        Param("TN", (1, 4, 8), 8, "columns of C per thread (TN=1: the 1D version, a column of TM)"),
    ),
    threads=outer_threads, tile=lambda p: (p["BM"], p["BN"]),
    rules=outer_rules(vector=False),
    k_tile=lambda p: p["BK"],
    thread_tile=outer_thread_tile,
    static_smem=lambda p: 4 * p["BK"] * (p["BM"] + p["BN"]),
    exercise=Exercise(
        task="Write the outer product: for each k of the tile, load the thread's $T_M$ values of $A$ and $T_N$ "
             "values of $B$ into registers, then add all $T_M T_N$ products into its patch of $C$.",
        starter="""        // TODO: for each k < BK: a[i] = the thread's TM values of column k of the A tile (rows
        // tr * TM + i), b[j] = its TN values of row k of the B tile (columns tc * TN + j), then
        // acc[i][j] += a[i] * b[j] for every i, j.
        TODO;
""",
        hints=("Three loops inside the loop over k: fill a[], fill b[], then the double loop over i and j.",
               "As[tr * TM + i][k] and Bs[k][tc * TN + j].",
               "Put #pragma unroll before every loop with a compile-time count: the registers a[], b[] and acc "
               "only stay registers when every index is a constant."),
        evidence=(Evidence("opcode", "TM x TN FFMAs per k step", "FFMA"),
                  Evidence("at_most", "each value loaded once per k step, not once per product", "LDS"))),
)

MODEL = KernelModel(owner=outer_owner, smem_word=outer_smem_word(a_transposed=False))
