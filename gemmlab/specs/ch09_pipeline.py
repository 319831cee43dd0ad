"""Chapter 09: 08's warp tiling fed by cp.async copies through a STAGES-deep pipeline."""
from ..kernel_model import KernelModel
from ..spec import Evidence, Exercise, KernelSpec
from .pipelined import fast_tiles, kernel_fields, model_fields, params, rules

# 128 x 128 tiles of eight 32 x 64 warp tiles: 64 accumulators a thread, so a cap of 128 registers
# (two blocks per SM) leaves room for operands. The chapter's MINB experiment runs on them.
_HALF_TILES = {"BM": 128, "BN": 128, "WM": 32, "WN": 64}

SPEC = KernelSpec(
    name="09_pipeline", chapter=9, title="09 pipeline",
    technique="08's warp tiling fed by cp.async copies through a STAGES-deep shared-memory pipeline",
    params=params(),
    rules=rules(),
    **kernel_fields(),
    steps=(("128 x 128 tiles, registers as the compiler likes (MINB=1)", {**_HALF_TILES, "MINB": 1}),
           ("128 x 128 tiles, registers capped for two blocks per SM (MINB=2)", {**_HALF_TILES, "MINB": 2}),
           ("128 x 256 tiles, one block per SM: two stages", {"STAGES": 2}),
           ("... three stages", {"STAGES": 3}),
           ("... four stages", {"STAGES": 4})),
    exercise=Exercise(
        task="Keep the copy pipeline in step: at the top of each trip, wait for tile $t$'s copies (and no "
             "more) and for every thread's, then issue tile $t + S - 1$'s copies as one committed group, "
             "with $S$ = `STAGES`.",
        starter="""        // TODO: tile t must be in shared memory before the math. wait_pending<N>() waits until at
        // most N of this thread's committed groups of copies are still in flight: the groups of tiles
        // t+1 .. t+STAGES-2 may stay in flight, the group of tile t may not. Then all threads must be
        // past that point (their copies of tile t have landed too, and nobody still reads the stage
        // that the copies issued below overwrite).
        TODO;
        const int next = t + STAGES - 1;       // goes where tile t-1 was
        if (next < tiles_k) issue(next, next % STAGES);
        // TODO: close this trip's copies into one group (cp.async.commit_group), also where there were
        // none (past the last tile): every trip must commit exactly one group for the count above.
        TODO;
""",
        hints=("Count the groups at the top of trip t: the prologue committed STAGES - 1 (tiles 0 .. STAGES - 2) "
               "and every earlier trip one more. Which of them may still be in flight?",
               "wait_pending only waits for this thread's own copies; the block reads every thread's, so a "
               "barrier must follow it. commit() outside the `if`, or the count drifts at the end.",
               "wait_pending<STAGES - 2>(); __syncthreads(); ... issue ...; commit();"),
        evidence=(Evidence("opcode", "one commit of the tile's copies per trip (cp.async.commit_group)", "LDGDEPBAR"),
                  Evidence("opcode", "one wait for the copies of tile t per trip (cp.async.wait_group)", "DEPBAR"),
                  Evidence("opcode", "a barrier per trip: every thread's copies have landed", "BAR"),
                  Evidence("at_most", "one barrier per tile: the pipeline needs no second one", "BAR"),
                  Evidence("opcode", "the cp.async copies of the next tile, in the loop", "LDGSTS"))),
)

MODEL = KernelModel(**model_fields(), fast_tiles=fast_tiles)
