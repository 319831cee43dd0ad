"""Chapter 10: 09's pipeline with fewer instructions between the FFMAs (FFMA order, unchecked
interior copies, copies spread among the FFMAs)."""
from ..spec import KernelSpec
from .pipelined import issue_rate_params, owner, params, rules, smem, spread_rule, thread_tile
from .shared import outer_smem_word, snake_interior_steps, warp_threads

SPEC = KernelSpec(
    name="10_issue_rate", chapter=10, title="10 issue rate",
    technique="09's pipeline with fewer instructions between the FFMAs: snake order, unchecked interior "
              "copies, copies spread among the FFMAs",
    params=(*params(), *issue_rate_params()),
    threads=warp_threads, tile=lambda p: (p["BM"], p["BN"]),
    rules=(*rules(), spread_rule()),
    k_tile=lambda p: p["BK"],
    smem_word=outer_smem_word(a_transposed=True),
    owner=owner,
    thread_tile=thread_tile,
    dynamic_smem=smem,
    steps=(*snake_interior_steps({"SPREAD": 0}),
           ("+ SPREAD: the next tile's copies among the FFMAs", {"SNAKE": 1, "INTERIOR": 1, "SPREAD": 4})),
)
