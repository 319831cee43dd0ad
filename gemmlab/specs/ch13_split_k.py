"""Chapter 13: every shape: edge tiles moved back inside C (no checked copies in the main loop), K's
remainder zero-filled in the first tile, small tiles, and every tile split along K into pieces whose
partial tiles the last piece to arrive adds up from a workspace."""
from ..course import Programme
from ..kernel_model import KernelModel
from ..spec import Exercise, KernelSpec, Param, Rule, ShapeRule
from .pipelined import kernel_fields, model_fields, registers_left, rules, smem, thread_tile
from .shared import accumulators, outer_smem_word, warp_threads

# The kernel's workspace (kernels/13_split_k.cu's PARTIAL_FLOATS and ARRIVALS agree)
PARTIAL_FLOATS = 1 << 23
ARRIVALS = 65536


def _tiles(p, pr) -> int:
    return -(-pr.M // p["BM"]) * -(-pr.N // p["BN"])


def _repeats_copies(p) -> bool:
    """Whether the copies past a block's last K tile repeat that tile (SPREAD > 0), unpadded: which tile 0
    of a K padded at its start is not, so the kernel must never end on it (kernels/13_split_k.cu)."""
    return p["SPREAD"] > 0


def _k_tiles(p, pr) -> int:
    return -(-pr.K // p["BK"])


def _room(p, pr) -> int:
    """Partial tiles of every tile the workspace holds."""
    return PARTIAL_FLOATS // (_tiles(p, pr) * p["BM"] * p["BN"])


def _most_for_k(p, pr) -> int:
    """Pieces K allows: one K tile each, and where K is padded (not a multiple of BK) and the copies repeat a
    block's last tile, the first piece keeps at least two K tiles, so that its last is never the padded tile 0."""
    return _k_tiles(p, pr) // 2 if pr.K % p["BK"] and _repeats_copies(p) else _k_tiles(p, pr)


def _pieces(p, pr) -> int:
    """Pieces along K of every tile: SPLIT, or fewer where the workspace cannot hold SPLIT partial tiles
    of every tile (one for more tiles than it counts), and never more than K allows (_most_for_k)."""
    if p["SPLIT"] == 1 or _tiles(p, pr) > ARRIVALS:
        return 1
    return max(1, min(p["SPLIT"], _room(p, pr), _most_for_k(p, pr)))


def _fewer_pieces(p, pr) -> str:
    """Why a problem's tiles run in fewer pieces than SPLIT ('' where they run in SPLIT): which of _pieces' bounds
    cut them."""
    pieces = _pieces(p, pr)
    if pieces >= p["SPLIT"]:
        return ""
    tiles = _tiles(p, pr)
    head = f"SPLIT={p['SPLIT']} asks for up to {p['SPLIT']} pieces; here {pieces}: "
    if tiles > ARRIVALS:
        return head + f"{tiles:,} tiles, more than the {ARRIVALS:,} the kernel counts arrivals for"
    if _room(p, pr) <= pieces:
        need = p["SPLIT"] * tiles * p["BM"] * p["BN"] * 4 / 2**20
        return head + (f"{p['SPLIT']} partial tiles of each of the {tiles:,} tiles of {p['BM']} x {p['BN']} need "
                       f"{need:,.0f} MiB, and the workspace holds {PARTIAL_FLOATS * 4 // 2**20} MiB")
    tiles_k = _k_tiles(p, pr)
    if _most_for_k(p, pr) < tiles_k:
        return head + f"K has {tiles_k} tiles of {p['BK']}, the first padded, and the first piece keeps two of them"
    return head + f"K has {tiles_k} tile{'s' if tiles_k != 1 else ''} of {p['BK']}"


def _fast_tiles(p, pr) -> int:
    """Tiles whose block copies B 16 bytes at a time: B's rows must start 16-byte aligned (ldb a multiple
    of 4 floats), and so must the tile's columns, which a last column of tiles moved back to N - BN
    breaks where N is not a multiple of 4. The rest copy B 4 bytes at a time."""
    if pr.ldb % 4:
        return 0
    tiles = _tiles(p, pr)
    return tiles if pr.N % p["BN"] == 0 or pr.N % 4 == 0 else tiles - -(-pr.M // p["BM"])


def _staged_c_bytes(p) -> int:
    """Shared memory the epilogue stages C's tile in (STAGE_C=1): BM x BN floats, over the pipeline's buffers (done
    with by then)."""
    return 4 * p["BM"] * p["BN"] if p["STAGE_C"] else 0


def _pipeline_smem(p) -> int:
    """The pipeline's buffers: A's tile transposed with rows padded by 4 floats, or as it lies (A_QUADS=1)."""
    return smem(p) - 16 * p["STAGES"] * p["BK"] if p.get("A_QUADS") else smem(p)


def _dynamic_smem(p) -> int:
    """The pipeline's buffers, grown where a staged C tile needs more than they hold (the GPU's limit on a block's
    shared memory is checked for every kernel: spec's shared-per-block rule)."""
    return max(_pipeline_smem(p), _staged_c_bytes(p))


_transposed_word, _as_it_lies_word = outer_smem_word(a_transposed=True), outer_smem_word(a_transposed=False)


def _smem_word(p, operand: str, k: int, i: int) -> int:
    """A shared word of the tiles (KernelModel.smem_word): A transposed, or as it lies with A_QUADS=1."""
    return (_as_it_lies_word if p.get("A_QUADS") else _transposed_word)(p, operand, k, i)


def _a_quads_rules() -> tuple[Rule, ...]:
    """A_QUADS=1: A's 16-byte chunks split evenly over the threads, and a thread holds 4 k steps of its rows."""
    return (
        Rule("a-quads-copies", lambda p: not p["A_QUADS"] or p["BM"] * p["BK"] // 4 % warp_threads(p) == 0,
             lambda p: (f"A_QUADS=1 copies A's tile ({p['BM']} x {p['BK']} floats) in 16-byte chunks, which must split "
                        f"evenly over the block's {warp_threads(p)} threads")),
        Rule("a-quads-registers",
             lambda p: not p["A_QUADS"] or accumulators(p) + 4 * thread_tile(p)[0] + 64 <= registers_left(p),
             lambda p: (f"A_QUADS=1 holds 4 k steps of a thread's {thread_tile(p)[0]} rows of A: with its "
                        f"{accumulators(p)} accumulators and 64 for the rest, more than the {registers_left(p)} "
                        f"registers {p['MINB']} block(s) an SM leave a thread")),
    )


def _store_twins(p, pr) -> list:
    """The configuration with C's other store path, where C's rows are not 16-byte multiples (elsewhere only a last
    column of tiles moved off a 16-byte boundary takes it): what the plan's training times beside it, so that the
    fit sees both at the same shapes."""
    return [{**p, "STAGE_C": 1 - p["STAGE_C"]}] if pr.ldc % 4 else []


TILE_SIDES = (32, 64, 128, 256)      # BN's values, and BM's besides SHORT_SIDE
# 48 rows: one warp row of three 16-row sub-tiles (WM=48), for a C of 33 to 48 rows (or a few tiles' more), where
# 64-row tiles, or two 32-row ones, compute up to twice its rows (docs/dispatch-history.md, round 28)
SHORT_SIDE = 48


def _smaller_tiles(p, pr) -> str:
    """The way out of 'tile-fits': smaller tiles where some fit, another kernel where none does."""
    if pr.M < TILE_SIDES[0] or pr.N < TILE_SIDES[0]:
        return (f"No tile of this kernel fits (the smallest is {TILE_SIDES[0]} x {TILE_SIDES[0]}): use a kernel "
                f"that checks its edges, such as chapter 12's")
    return f"Pick smaller tiles (BM, BN), down to {TILE_SIDES[0]} x {TILE_SIDES[0]}"


SHAPE_RULES = (
    ShapeRule("tile-fits", lambda p, pr: pr.M >= p["BM"] and pr.N >= p["BN"],
              lambda p, pr: (f"its edge tiles are moved back inside C instead of checked, so C must be at least one "
                             f"tile of {p['BM']} x {p['BN']}: got {pr.M} x {pr.N}. {_smaller_tiles(p, pr)}")),
    ShapeRule("k-whole-tile", lambda p, pr: pr.K >= p["BK"] or not _repeats_copies(p),
              lambda p, pr: (f"with SPREAD={p['SPREAD']}, the copies past a block's last K tile repeat it as a whole "
                             f"tile, and K={pr.K} is shorter than one (BK={p['BK']}): they would read outside A "
                             f"and B. Use SPREAD=0, or a K of at least BK")),
    ShapeRule("a-quads", lambda p, pr: not p.get("A_QUADS") or (pr.lda % 4 == 0 and pr.K % 4 == 0),
              lambda p, pr: (f"A_QUADS=1 copies A 16 bytes at a time, so A's rows must lie a multiple of 16 bytes apart "
                             f"(lda a multiple of 4) and K be a multiple of 4: got lda={pr.lda} and K={pr.K}. Use "
                             f"A_QUADS=0")),
    ShapeRule("row-offsets", lambda p, pr: p["BM"] * pr.lda < 2**31 and p["BK"] * pr.ldb < 2**31,
              lambda p, pr: (f"a thread's copies within a tile are addressed with 32-bit offsets: BM x lda and "
                             f"BK x ldb must stay under 2^31 (got {p['BM']} x {pr.lda} and {p['BK']} x {pr.ldb})")),
)

SPEC = KernelSpec(
    name="13_split_k", chapter=13, title="13 split-K",
    technique="edge tiles moved inside C and K's remainder zero-filled (no checked copies), small tiles, and every "
              "tile split along K, the pieces summed from a workspace by the last to arrive",
    params=(
        Param("BM", tuple(sorted(TILE_SIDES + (SHORT_SIDE,))), 64, "rows of the block's C tile",
              slider=(32, 64, 128)),
        Param("BN", TILE_SIDES, 64, "columns of the block's C tile", slider=(64, 128)),
        Param("BK", (8, 16, 32), 16, "K step: depth of one pipeline stage", slider=(16,)),
        Param("WM", (32, SHORT_SIDE, 64), 32, "rows of a warp's C tile (sub-tiles of 16 rows)", slider=(32,)),
        Param("WN", (32, 64), 32, "columns of a warp's C tile (sub-tiles of 32 columns)", slider=(32, 64)),
        Param("STAGES", (2, 3, 4), 3, "shared-memory buffers in the copy pipeline", slider=(3,)),
        Param("KUNROLL", (4, 8, 16, 32), 16, "k steps unrolled at a time within a tile (code size)", slider=(16,)),
        Param("GROUP", (1, 8), 8, "tile rows walked together, column by column (L2 reuse); 1: row by row",
              slider=(8,)),
        Param("MINB", (1, 2, 3, 4), 2, "blocks per SM promised to the compiler (__launch_bounds__): caps registers",
              slider=(2,)),
        Param("SNAKE", (0, 1), 1, "1: odd rows of the outer product run backwards (operand reuse); 0: row by row",
              slider=(1,)),
        Param("SPREAD", (0, 2, 4), 2, "the next tile's copies go out SPREAD at a time between the k steps "
                                      "(0: all at once after the barrier, before the math)", slider=(2,)),
        Param("SPLIT", (1, 2, 3, 4, 6, 8, 12, 16), 1,
              "pieces along K that every tile is cut into, one block each; the last piece of a tile to arrive "
              "adds the partial tiles (1: none; fewer where the 32 MiB workspace cannot hold them all)",
              slider=(1, 2, 4, 8)),
        Param("RAGGED_B", (0, 1), 0, "where B's rows (or the tile's columns) do not start 16-byte aligned, 1: B's 4-byte "
                                     "copies go consecutive lanes on consecutive floats of a row; 0: each thread copies "
                                     "its own 4 floats", slider=(0,)),
        Param("A_QUADS", (0, 1), 0, "1: A's tile kept as it lies, copied 16 bytes at a time and read 4 k steps a load "
                                    "(lda and K multiples of 4, A 16-byte aligned); 0: transposed, 4 bytes a copy",
              slider=(0,)),
        Param("STAGE_C", (0, 1), 0, "where C's rows (or the tile's columns) do not start 16-byte aligned, 1: the tile "
                                    "is stored through shared memory row by row; 0: 4 bytes at a time from the registers"),
    ),
    rules=(*rules(), *_a_quads_rules()),
    shape_rules=SHAPE_RULES,
    **{**kernel_fields(), "dynamic_smem": _dynamic_smem},
    pointer_alignment=lambda p: 16 if p.get("A_QUADS") else 4,
    k_split=_pieces,
    k_split_why=_fewer_pieces,
    # steps, at the chapter's step size (4096^3, where no split fits the workspace, nor pays): 11's tiles
    # with their edges moved inside, then smaller ones down to the defaults
    steps=(("11's 128 x 256 tiles of 8 warps, one block an SM, edges moved inside C",
            {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "MINB": 1, "STAGES": 4, "SPREAD": 4}),
           ("128 x 128 tiles of 8 warps, two blocks an SM",
            {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "MINB": 2, "STAGES": 3, "SPREAD": 2}),
           ("64 x 64 tiles of 4 warps (the defaults)",
            {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "MINB": 2, "STAGES": 3, "SPREAD": 2})),
    exercise=Exercise(
        task="Let the last piece of a tile to arrive add the pieces up: count the pieces as they arrive, and tell "
             "each block whether it was the last.",
        starter="""    // TODO: thread 0 counts this piece in arrivals[tile] (an atomic add: pieces arrive at once) and
    // learns from the count before it whether this piece is the last of `pieces`. The last one leaves
    // the count at 0 for the next launch. Thread 0 writes the answer to *flag; every thread waits
    // for it (a barrier), and a piece that is not the last returns false. The last one must read
    // the other pieces' partial tiles only after it has seen the count (a fence).
    TODO;
""",
        hints=("atomicAdd returns the value before the add: pieces - 1 before means every other piece has counted.",
               "Only thread 0 touches the count; *flag lives in shared memory, so the barrier after thread 0 "
               "writes it is what lets the other threads read it.",
               "if (tid == 0) { const unsigned before = atomicAdd(arrivals + tile, 1u); const bool last = before == "
               "pieces - 1; if (last) arrivals[tile] = 0; *flag = last; } __syncthreads(); if (!*flag) return false; "
               "__threadfence();"),
        # the count runs once per block, after the main loop: its correctness shows on a GPU
        evidence=(),
        params={"SPLIT": 4}, timing_shape=(1024, 1024, 4096)),
)

# B's 4-byte copies: per k step a block copies BK x BN floats of B for BM x BN x BK multiply-adds, so the slow
# path adds 1 / BM of a copy per multiply-add: half as much for 128-row tiles as for the defaults' 64
# gemmlab.matmul runs a launch with tiles on the 4-byte path as RAGGED_B=1: as fast or faster at each of 29 ragged
# shapes, 3% over them (docs/dispatch-history.md), and priced as the build the model was fitted to
MODEL = KernelModel(**{**model_fields(), "smem_word": _smem_word}, fast_tiles=_fast_tiles,
                    slow_weight=lambda p: 64 / p["BM"], twins=_store_twins, checked_build={"RAGGED_B": 1})

PROGRAMME = Programme(
    # shapes none of issue 17's suite has, where small grids and ragged edges are the problem: where the
    # record times the sliders' configurations besides the squares (the last: C's rows ragged at a small K,
    # where its stores are much of a tile's time)
    regime_shapes=((96, 4096, 4096), (48, 8192, 2048), (700, 700, 700), (1280, 1280, 1280),
                   (1000, 3000, 1999), (3001, 2999, 3003), (3000, 999, 200)))
