"""Chapter 10: 09's pipeline with fewer instructions between the FFMAs (FFMA order, unchecked
interior copies, copies spread among the FFMAs)."""
from ..spec import Evidence, Exercise, KernelSpec
from .pipelined import fast_tiles, issue_rate_params, kernel_fields, params, rules, spread_rule
from .shared import snake_interior_steps

SPEC = KernelSpec(
    name="10_issue_rate", chapter=10, title="10 issue rate",
    technique="09's pipeline with fewer instructions between the FFMAs: snake order, unchecked interior "
              "copies, copies spread among the FFMAs",
    params=(*params(), *issue_rate_params()),
    rules=(*rules(), spread_rule()),
    **kernel_fields(), fast_tiles=fast_tiles,
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
