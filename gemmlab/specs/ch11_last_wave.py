"""Chapter 11: 10's kernel, with the tiles of a last partial wave split along K (SPLIT)."""
from .. import course
from ..spec import KernelSpec, Param, ShapeSearch
from .pipelined import issue_rate_params, owner, params, rules, smem, spread_rule, thread_tile
from .shared import outer_smem_word, warp_threads

SPEC = KernelSpec(
    name="11_last_wave", chapter=11, title="11 last wave",
    technique="10's kernel, with the tiles of a last partial wave split along K into pieces of their own",
    params=(*params(), *issue_rate_params(),
            Param("SPLIT", (1, 2, 3, 4, 5, 7, 9, 12, 16), 1,
                  "pieces along K that each tile of a last partial wave is cut into, one block each, so "
                  "that no SM idles at the end (1: never)", slider=(1,))),
    threads=warp_threads, tile=lambda p: (p["BM"], p["BN"]), split=lambda p: p["SPLIT"], split_flags=4096,
    rules=(*rules(), spread_rule()),
    k_tile=lambda p: p["BK"],
    smem_word=outer_smem_word(a_transposed=True),
    owner=owner,
    thread_tile=thread_tile,
    dynamic_smem=smem,
    shape_search=ShapeSearch(course.FINAL_SHAPES, course.FINAL_CANDIDATES, course.FINAL_REPS),
)
