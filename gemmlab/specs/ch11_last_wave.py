"""Chapter 11: 10's kernel, with the tiles of a last partial wave split along K (SPLIT)."""
from .. import course
from ..course import Programme, ShapeSearch
from ..kernel_model import KernelModel
from ..spec import Exercise, KernelSpec, Param
from .pipelined import fast_tiles, issue_rate_params, kernel_fields, model_fields, params, rules, spread_rule

SPEC = KernelSpec(
    name="11_last_wave", chapter=11, title="11 last wave",
    technique="10's kernel, with the tiles of a last partial wave split along K into pieces of their own",
    params=(*params(), *issue_rate_params(),
            Param("SPLIT", (1, 2, 3, 4, 5, 7, 9, 12, 16), 1,
                  "pieces along K that each tile of a last partial wave is cut into, one block each, so "
                  "that no SM idles at the end (1: never)", slider=(1,))),
    split=lambda p: p["SPLIT"], split_flags=4096,
    rules=(*rules(), spread_rule()),
    **kernel_fields(),
    exercise=Exercise(
        task="Make the pieces of a split tile take turns: a piece after the first waits until the piece before "
             "it has added its part into $C$, then adds its own to what it finds there.",
        starter="""    // TODO: a piece after the first (done.piece > 0) may touch C only once piece done.piece - 1 has
    // added its part: that piece then sets split_flags[done.flag] to done.piece. Thread 0 spins,
    // reading the flag with an acquire load until it reads done.piece: load_acquire(p), from
    // ptx.cuh, is PTX's ld.acquire.gpu.global.u32, which no later read of the thread can pass.
    // Then the block's other threads wait for thread 0, and the piece ADDS to C (what alpha * acc +
    // beta * C below does with beta = 1) instead of overwriting it.
    TODO;
""",
        hints=("One thread spins, not all 256: a do { ... } while (seen != done.piece); loop in thread 0, then a "
               "barrier that holds everyone else until it is through.",
               "The acquire is what keeps the reads of C after the flag: a plain load could be hoisted out of the "
               "loop, or C read before the earlier piece's writes are visible. The barrier passes that order on "
               "to the block's other threads. The epilogue below writes alpha * acc + beta * C.",
               "if (done.piece > 0) { if (threadIdx.x == 0) { unsigned seen; do { seen = load_acquire(split_flags "
               "+ done.flag); } while (seen != done.piece); } __syncthreads(); beta = 1.0f; }"),
        # The wait runs once per block, after the main loop: nothing of it is in the hot loop that
        # the static evidence reads. Its correctness shows on a GPU (the checker's shapes split
        # their last wave at SPLIT=4 where the launcher's plan does).
        evidence=(),
        params={"SPLIT": 4}),
)

MODEL = KernelModel(**model_fields(), fast_tiles=fast_tiles)

PROGRAMME = Programme(shape_search=ShapeSearch(course.FINAL_SHAPES, course.FINAL_CANDIDATES, course.FINAL_REPS))
