"""Chapter 08: block tile -> warp tiles -> WMITER x WNITER thread patches of TM x TN."""
from ..kernel_model import KernelModel
from ..spec import Evidence, Exercise, KernelSpec, Param, Rule
from .shared import (accumulator_rule, outer_smem_word, snake_interior_params, snake_interior_steps, tile_load_rules,
                     tile_smem, unroll_within_tile, vector_rows, warp_grid_rules, warp_threads)


def geometry(p) -> dict[str, int]:
    """The sub-tiles of a warp tile: WMITER x WNITER of WSUBM x WSUBN each (kernels/08_warp_tiling.cu)."""
    wmiter = (p["WM"] * p["WN"]) // (32 * p["TM"] * p["TN"] * p["WNITER"]) or 1
    return {"WMITER": wmiter, "WSUBM": p["WM"] // wmiter, "WSUBN": p["WN"] // p["WNITER"]}


def _owner(p, r: int, c: int) -> int:
    g = geometry(p)
    warp = (r // p["WM"]) * (p["BN"] // p["WN"]) + c // p["WN"]
    lane = (r % p["WM"] % g["WSUBM"]) // p["TM"] * (g["WSUBN"] // p["TN"]) + (c % p["WN"] % g["WSUBN"]) // p["TN"]
    return warp * 32 + lane


def _fits_lanes(p) -> bool:
    g = geometry(p)
    return ((p["WM"] * p["WN"]) % (32 * p["TM"] * p["TN"] * p["WNITER"]) == 0
            and p["WN"] % p["WNITER"] == 0 and p["WM"] % g["WMITER"] == 0
            and g["WSUBM"] % p["TM"] == 0 and g["WSUBN"] % p["TN"] == 0
            and (g["WSUBM"] // p["TM"]) * (g["WSUBN"] // p["TN"]) == 32)


SPEC = KernelSpec(
    name="08_warp_tiling", chapter=8, title="08 warp tiling",
    technique="block tile -> warp tile -> WMITER x WNITER thread patches of TM x TN (double-buffered as 07)",
    params=(
        Param("BM", (128,), 128, "rows of the block's C tile"),
        Param("BN", (128,), 128, "columns of the block's C tile"),
        Param("BK", (8, 16), 16, "K step"),
        Param("WM", (32, 64), 64, "rows of a warp's C tile"),
        Param("WN", (32, 64), 32, "columns of a warp's C tile"),
        Param("WNITER", (1, 2, 4), 2, "sub-tiles across a warp tile's columns"),
        Param("TM", (4, 8), 4, "rows of a thread's patch"),
        Param("TN", (4,), 4, "columns of a thread's patch"),
        Param("UNROLL", (4, 8, 16), 16, "#pragma unroll factor of the k loop over the tile", slider=(8, 16)),
        *snake_interior_params(),
    ),
    threads=warp_threads, tile=lambda p: (p["BM"], p["BN"]),
    rules=(
        *warp_grid_rules(),
        Rule("warp-tile-fits-lanes", _fits_lanes,
             lambda p: (f"a {p['WM']} x {p['WN']} warp tile cannot be cut into WNITER={p['WNITER']} column "
                        f"sub-tiles whose {p['TM']} x {p['TN']} patches give exactly 32 lanes one patch each "
                        f"(it needs WM*WN = 32*TM*TN*WMITER*WNITER with whole sub-tiles)")),
        accumulator_rule(),
        *tile_load_rules(warp_threads, 4),
        unroll_within_tile("UNROLL"),
    ),
    shape_rules=(vector_rows(),),
    k_tile=lambda p: p["BK"],
    thread_tile=lambda p: (p["TM"] * geometry(p)["WMITER"], p["TN"] * p["WNITER"]),
    static_smem=tile_smem(lambda p: 2),
    pointer_alignment=lambda p: 16,
    steps=snake_interior_steps({"WN": 64, "TM": 8, "UNROLL": 8}),
    exercise=Exercise(
        task="Give each warp its warp tile and each lane its patch: from `threadIdx.x`, the warp tile "
             "`(wr, wc)` a warp owns in the block tile and the position `(lr, lc)` of the $T_M \\times T_N$ "
             "patch a lane owns in every sub-tile, so that the 32 lanes read $B$ as consecutive 16-byte vectors.",
        starter="""    // TODO: warp = the warp's number in the block, lane = the thread's number in its warp.
    // The block tile holds (BM / WM) x (BN / WN) warp tiles, numbered row by row: (wr, wc) = the row
    // and the column of warp tile number `warp`. A WSUBM x WSUBN sub-tile holds (WSUBM / TM) x
    // (WSUBN / TN) patches of TM x TN, one per lane, numbered row by row: (lr, lc) = the row and the
    // column of the patch of lane number `lane` (consecutive lanes: consecutive patches of a row).
    const int warp = TODO, lane = TODO;
    const int wr = TODO, wc = TODO;
    const int lr = TODO, lc = TODO;
""",
        hints=("A warp is 32 consecutive threads: warp and lane are the quotient and the remainder of tid by 32.",
               "Numbered row by row, item n of a grid with C columns sits in row n / C, column n % C. The warp "
               "grid has BN / WN columns; the lane grid of a sub-tile has WSUBN / TN.",
               "warp = tid / 32, lane = tid % 32; wr = warp / (BN / WN), wc = warp % (BN / WN); "
               "lr = lane / (WSUBN / TN), lc = lane % (WSUBN / TN)."),
        # The SASS shows the 128-bit reads, not which lane reads which address: a layout that
        # breaks the partition (swapped or out-of-range indices) only shows on a GPU, as wrong
        # results, and one that merely changes the bank pattern, in the timing.
        evidence=(Evidence("opcode", "a lane's TM values of A and TN of B per sub-tile read as 128-bit shared "
                                     "loads: each patch starts on a multiple of 4 floats", "LDS.128"),)),
)

MODEL = KernelModel(owner=_owner, smem_word=outer_smem_word(a_transposed=True), geometry=geometry)
