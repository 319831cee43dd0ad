"""Chapter 10: 09's pipeline with fewer instructions between the FFMAs (FFMA order, unchecked
interior copies, copies spread among the FFMAs)."""
from ..spec import Evidence, Exercise, KernelSpec
from .pipelined import cp_async_rule, issue_rate_params, owner, params, rules, smem, spread_rule, thread_tile
from .shared import outer_smem_word, snake_interior_steps, warp_threads

SPEC = KernelSpec(
    name="10_issue_rate", chapter=10, title="10 issue rate",
    technique="09's pipeline with fewer instructions between the FFMAs: snake order, unchecked interior "
              "copies, copies spread among the FFMAs",
    params=(*params(), *issue_rate_params()),
    threads=warp_threads, tile=lambda p: (p["BM"], p["BN"]),
    rules=(*rules(), spread_rule()),
    arch_rules=(cp_async_rule(),),
    k_tile=lambda p: p["BK"],
    smem_word=outer_smem_word(a_transposed=True),
    owner=owner,
    thread_tile=thread_tile,
    dynamic_smem=smem,
    steps=(*snake_interior_steps({"SPREAD": 0}),
           ("+ SPREAD: the next tile's copies among the FFMAs", {"SNAKE": 1, "INTERIOR": 1, "SPREAD": 4})),
    exercise=Exercise(
        task="Order the FFMAs of a k step as a snake: row by row, odd rows walking their columns backwards, so "
             "that every FFMA shares an operand register with the one before it and reads it from the operand "
             "reuse cache.",
        starter="""#pragma unroll
            for (int i = 0; i < TROWS; ++i)
#pragma unroll
                for (int jj = 0; jj < TCOLS; ++jj) {
                    // TODO: the column j of the jj-th FFMA of row i. With SNAKE, even rows go left to
                    // right (j = jj), odd rows right to left, so that the last FFMA of a row and the
                    // first of the next use the same b[j]; without SNAKE, every row left to right.
                    const int j = TODO;
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                }
""",
        hints=("Within a row every FFMA uses a[i]: that operand repeats already. The snake makes b[j] repeat "
               "where one row turns into the next.",
               "Backwards over TCOLS columns: jj = 0, 1, ..., TCOLS - 1 must give j = TCOLS - 1, ..., 1, 0.",
               "const int j = SNAKE && i % 2 ? TCOLS - 1 - jj : jj;"),
        evidence=(Evidence("reuse", "the snake: consecutive FFMAs share a register, served by the reuse cache"),
                  Evidence("opcode", "every product of the outer product, once", "FFMA"))),
)
