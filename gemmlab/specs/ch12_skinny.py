"""Chapter 12: skinny products, where DRAM bandwidth is the limit: K split over the threads, the big
operand streamed once in 16-byte loads, the partial sums added with warp shuffles (SIDE 0 and 1); at a K of
32 or less, C itself streamed out, B held in registers (SIDE 2)."""
from ..course import Programme
from ..kernel_model import KernelModel
from ..spec import Exercise, KernelSpec, Param, Rule, ShapeRule
from .shared import block_size_rule

_FLOAT = 4


def _tile(p) -> tuple[int, int]:
    """(rows, columns) of C a block owns: EDGE rows of 4 * LANES columns; a row per LANES lanes of EDGE
    columns; or LANES rows a warp of 32 * UNROLL columns, ACROSS warps side by side (SIDE 2)."""
    if p["SIDE"] == 2:
        return p["LANES"] * (p["THREADS"] // 32) // p["ACROSS"], 32 * p["UNROLL"] * p["ACROSS"]
    return (p["EDGE"], 4 * p["LANES"]) if p["SIDE"] == 0 else (p["THREADS"] // p["LANES"], p["EDGE"])


def _k_tile(p) -> int:
    """K a block's threads cover in one quad each: SIDE 0's k-lanes are the block's THREADS / LANES,
    SIDE 1's are a row's LANES; SIDE 2 holds all of K, its EDGE quads."""
    if p["SIDE"] == 2:
        return 4 * p["EDGE"]
    return 4 * (p["THREADS"] // p["LANES"] if p["SIDE"] == 0 else p["LANES"])


def _smem(p) -> int:
    """SIDE 0 adds its warps' partial sums in shared memory: one EDGE x 4 LANES tile per warp. SIDE 2 holds its
    rows of A there, 4 EDGE floats each."""
    if p["SIDE"] == 2:
        return _tile(p)[0] * 4 * p["EDGE"] * _FLOAT
    return (p["THREADS"] // 32) * p["EDGE"] * 4 * p["LANES"] * _FLOAT if p["SIDE"] == 0 else 0


# SIDE 2: the floats of B a thread may hold in registers (4 EDGE of K for each of its UNROLL columns) beside the rest
_B_HELD = 128


def _k_fits_message(p, pr) -> str:
    """What refuses the shape, and what would take it: the smallest EDGE that holds K (on the sliders where one
    does), with the UNROLL small-k-registers then allows, else the other sides."""
    held = f"SIDE=2 holds all of K in its threads' registers, up to 4 x EDGE = {4 * p['EDGE']}: got K={pr.K}. "
    edges = SPEC.tunable("EDGE")
    edge = next((e for e in (*edges.offered, *edges.values) if 4 * e >= pr.K), None)
    if edge is None:
        return held + f"SIDE=2 takes a K of {4 * max(edges.values)} or less: use SIDE 0 or 1"
    unroll = _B_HELD // (4 * edge)
    past = "" if edge in edges.offered else " (past the sliders)"
    limit = ("" if unroll >= max(SPEC.tunable("UNROLL").values) else f" with UNROLL={unroll}" if unroll == 1
             else f" with UNROLL={unroll} or less (small-k-registers)")
    return held + f"Use EDGE={edge}{limit}{past}, or SIDE 0 or 1"


SPEC = KernelSpec(
    name="12_skinny", chapter=12, title="12 skinny",
    technique="K split over the threads, the big operand streamed once, partial sums added by warp shuffles",
    params=(
        Param("SIDE", (0, 1, 2), 0, "0: few rows (small M), B is streamed; 1: few columns (small N), A is streamed; "
                                    "2: small K, C is the stream"),
        Param("EDGE", (1, 2, 4, 8, 12, 16), 4, "the short side of the block's C tile: its rows (SIDE 0) or columns (SIDE 1); "
                                           "SIDE 2: the K it holds, in quads (K up to 4 x EDGE)",
              slider=(1, 2, 4, 8)),
        Param("LANES", (2, 4, 8, 16, 32, 64), 8,
              "lanes side by side on one row: of B, 4 columns each (SIDE 0); of A, along K (SIDE 1); "
              "SIDE 2: rows of C each warp stores",
              slider=(2, 4, 8, 16, 32)),
        Param("THREADS", (64, 128, 256), 256, "threads a block", slider=(256,)),
        Param("UNROLL", (1, 2, 4), 4, "16-byte loads of the streamed operand each thread has in flight (x 4 for SIDE 0); "
                                      "SIDE 2: columns of C each thread stores, 32 apart",
              slider=(2, 4)),
        Param("ACROSS", (1, 2, 4, 8), 1, "SIDE 2: warps side by side along N, each with columns of its own, walking "
                                         "the same rows (1: the block's warps stacked along M, on the same columns)",
              slider=(1, 4)),
        Param("EVICT_FIRST", (0, 1), 1, "1: the streamed operand's loads (SIDE 2: C's stores) are marked evict-first "
                                        "(ld.global.cs, st.global.cs), so they do not push the re-read operand out "
                                        "of L1; 0: plain loads"),
    ),
    threads=lambda p: p["THREADS"],
    tile=_tile,
    rules=(block_size_rule(lambda p: p["THREADS"]),
           Rule("lanes-in-a-warp", lambda p: 32 % p["LANES"] == 0 or p["SIDE"] == 2,
                lambda p: f"LANES={p['LANES']} must divide a warp's 32 lanes (SIDE 0 and 1)"),
           Rule("warps-across", lambda p: p["ACROSS"] == 1 or (p["SIDE"] == 2 and (p["THREADS"] // 32) % p["ACROSS"] == 0),
                lambda p: (f"ACROSS={p['ACROSS']} sets warps side by side for SIDE=2 alone, and must divide its "
                           f"{p['THREADS'] // 32} warps" if p["SIDE"] == 2 else
                           f"ACROSS={p['ACROSS']} is for SIDE=2 alone: use ACROSS=1")),
           Rule("small-k-registers", lambda p: p["SIDE"] != 2 or 4 * p["EDGE"] * p["UNROLL"] <= _B_HELD,
                lambda p: (f"SIDE=2 holds 4 x EDGE x UNROLL = {4 * p['EDGE'] * p['UNROLL']} floats of B in each "
                           f"thread's registers; at most {_B_HELD} fit beside the rest: lower EDGE or UNROLL"))),
    shape_rules=(ShapeRule("k-fits", lambda p, pr: p["SIDE"] != 2 or pr.K <= 4 * p["EDGE"], _k_fits_message),),
    k_tile=_k_tile,
    static_smem=_smem,
    # steps: from one row a block, each thread with one load in flight, to the defaults
    steps=(("one row a block, one 16-byte load of B in flight a thread", {"EDGE": 1, "UNROLL": 1}),
           ("... four in flight", {"EDGE": 1, "UNROLL": 4}),
           ("four rows a block: each load of B serves four rows of C (the defaults)", {"EDGE": 4, "UNROLL": 4})),
    exercise=Exercise(
        task="Add a partial sum across the lanes of a warp that work on the same columns: the lanes `STRIDE`, "
             "`2 * STRIDE`, ... apart, with warp shuffles, so that every lane ends with the sum.",
        starter="""// Adds `v` over the lanes of a warp that share (lane % STRIDE): the lanes STRIDE, 2 * STRIDE, ...
// apart. Each step adds the value held `offset` lanes away, halving the lanes still apart; every
// lane ends with the sum.
template <int STRIDE>
__device__ __forceinline__ float add_across(float v)
{
    // TODO: a butterfly over offsets 16, 8, ... down to STRIDE: v += the v of the lane `offset` away
    // (__shfl_xor_sync with the full mask 0xffffffffu).
    TODO;
    return v;
}
""",
        hints=("Lane l and lane l ^ offset swap values; after the step both hold their sum.",
               "Offsets 16, 8, 4, ... pair up lanes that differ in one bit of their index; stop at STRIDE, so "
               "lanes that differ below STRIDE (different columns) are never added.",
               "for (int offset = 16; offset >= STRIDE; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);")),
)

MODEL = KernelModel(streams=True)

PROGRAMME = Programme(
    # skinny shapes, none of them in issue 17's suite: where the record times the sliders' configurations
    # besides the squares, so that the plan's fit sees this kernel where it is meant to run
    regime_shapes=((1, 8192, 2048), (8, 4096, 2048), (48, 6144, 2048), (128, 2048, 4096),
                   (2048, 1, 8192), (8192, 16, 1024), (6144, 6, 3072),
                   # small K (SIDE 2), one for each EDGE, N not a multiple of 4 in three of them
                   (4096, 4096, 4), (3000, 5001, 7), (6144, 2050, 9), (2048, 6143, 16), (8192, 1024, 27)))
