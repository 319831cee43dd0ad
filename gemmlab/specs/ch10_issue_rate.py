"""Chapter 10: 09's pipeline with fewer instructions between the FFMAs (FFMA order, unchecked
interior copies, copies spread among the FFMAs)."""
from ..kernel_model import KernelModel
from ..spec import Evidence, Exercise, KernelSpec
from .pipelined import fast_tiles, issue_rate_params, kernel_fields, model_fields, params, rules, spread_rule
from .shared import snake_interior_steps

SPEC = KernelSpec(
    name="10_issue_rate", chapter=10, title="10 issue rate",
    technique="09's pipeline with fewer instructions between the FFMAs: snake order, unchecked interior "
              "copies, copies spread among the FFMAs",
    params=(*params(), *issue_rate_params()),
    rules=(*rules(), spread_rule()),
    **kernel_fields(),
    steps=(*snake_interior_steps({"SPREAD": 0}),
           ("+ SPREAD: the next tile's copies among the FFMAs", {"SNAKE": 1, "INTERIOR": 1, "SPREAD": 4})),
    exercise=Exercise(
        task="Spread the next tile's copies among the FFMAs: in interior blocks, issue them `SPREAD` at a time "
             "between the $k$ steps, from step 1 on (step 0's shared loads follow the barrier at once), into the "
             "stage that tile `next` goes to, and close them into one group at the tile's last step ($k$ = `BK - 1`).",
        starter="""            if (spread) {                      // the next tile's copies, SPREAD at a time, among the k steps
                // TODO: where tile `next` goes (its stage, as in the copies before the math) and where its
                // copies come from: tile src_t of the thread's pointers a_src (a tile is BK columns of A)
                // and b_src (BK rows of B). src_t, not next: past the last tile the copies repeat it into a
                // stage nobody reads, with no branch around them.
                float* as_next = TODO;
                float* bs_next = TODO;
                const float* a_next = TODO;
                const float* b_next = TODO;
                // load_inside's copy c, written out here: through a helper, ptxas allocated the
                // registers of the whole loop differently (and this is the build that was timed)
#pragma unroll
                for (int c = 0; c < COPIES; ++c)
                    // TODO: the step k at which copy c goes out. Copy c is in group c / SPREAD_BY of
                    // COPY_GROUPS; the groups go out spread evenly over steps 1 to BK - 1.
                    if (TODO) {
                        if (c < A_FLOATS)
                            copy_async<4>(as_next + (tid % BK) * AM + tid / BK + c * (THREADS / BK),
                                          a_next + c * (THREADS / BK) * lda, 4);
                        else
                            copy_async<16>(bs_next + (tid / (BN / 4) + (c - A_FLOATS) * (THREADS / (BN / 4))) * BN
                                           + tid % (BN / 4) * 4, b_next + (c - A_FLOATS) * (THREADS / (BN / 4)) * ldb, 16);
                    }
                // TODO: the tile's copies, all issued by now, committed as one group (once per tile, like the
                // commit() of the copies before the math)
                TODO;
            }
""",
        hints=("The stage is the one the unspread path uses, `next % STAGES`, A_STAGE or B_STAGE floats a stage. "
               "The sources: a_src and b_src point at tile 0 of this thread's copies; tile src_t starts "
               "src_t * BK columns further along A, and src_t * BK rows further down B.",
               "COPY_GROUPS groups over the BK - 1 steps after step 0: group g goes out at step "
               "1 + g * (BK - 1) / COPY_GROUPS (steps 1, 6 and 11 at the defaults). Every copy must have been "
               "issued before the commit, so the commit comes at the last step, BK - 1.",
               "as_next = As + next % STAGES * A_STAGE; bs_next = Bs + next % STAGES * B_STAGE; "
               "a_next = a_src + src_t * BK; b_next = b_src + (size_t)src_t * BK * ldb; "
               "if (1 + c / SPREAD_BY * (BK - 1) / COPY_GROUPS == k) { ... } if (k == BK - 1) commit();"),
        evidence=(Evidence("opcode", "every copy of the next tile issued in the loop (cp.async)", "LDGSTS"),
                  Evidence("at_most", "each copy once per tile, not once per step", "LDGSTS"),
                  Evidence("opcode", "the tile's copies committed as a group in the loop", "LDGDEPBAR"),
                  Evidence("at_most", "one commit per tile: the wait at the top counts one group per tile",
                           "LDGDEPBAR")),
        # with 2 stages the spread copies of tile 0's trip fill the stage tile 1 is read from, at the CPU
        # check's interior shape too (two tiles of K); with more, what they copy there is never read. SPREAD
        # stays on in the check's other configuration.
        params={"STAGES": 2, "SPREAD": 4}),
)

MODEL = KernelModel(**model_fields(), fast_tiles=fast_tiles)
