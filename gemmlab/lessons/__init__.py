"""What the notebooks call: one function per code cell, `import gemmlab.lessons as gl`.

Cells that show something are `show_*`; the exercise cells are verbs (exercise, check, hint,
solution; the progress table over every chapter's exercise is gemmlab.library.lessons.progress, as
it counts chapter 14's too). Each works with a GPU (live: compile, validate, time) and
without one (compile and SASS are still live; timings come from the record, labelled with device
and date): they ask `results.here()` and never check for a GPU themselves.
"""
from .chapter00 import (show_architectures, show_cublas_roofline, show_cublas_sweep, show_device, show_problem,  # noqa: F401
                        show_tf32_contrast, show_warmup_and_spread)
from .chapter02 import show_sectors, show_tile_walk  # noqa: F401
from .chapter04 import show_banks  # noqa: F401
from .chapter07 import show_prefetch_timeline  # noqa: F401
from .chapter09 import show_stage_ring  # noqa: F401
from .chapter10 import show_copy_placement  # noqa: F401
from .chapter11 import show_final_search, show_final_table, show_last_wave, show_shape_costs  # noqa: F401
from .chapter12 import show_skinny_regime, show_skinny_roofline  # noqa: F401
from .chapter13 import show_split_regime  # noqa: F401
from .chapter15 import show_ladder_over_shapes  # noqa: F401
from .your_turn import check, exercise, hint, solution  # noqa: F401
from .common import (show_compile_report, show_counters, show_diff, show_explorer, show_inner_loop,  # noqa: F401
                     show_kernel, show_ladder, show_prediction, show_sass, show_sweep, show_thread_map,
                     show_tunable, show_tuning, show_vs_cublas)
from .predictions import show_prediction_quiz  # noqa: F401
from .profiles import (show_hierarchical_roofline, show_issue_slots, show_littles_law, show_profile,  # noqa: F401
                       show_stall_profile)
from .register_tiles import (show_ffma_order, show_occupancy, show_outer_product, show_reuse, show_shared_loads,  # noqa: F401
                             show_steps, show_unroll_study, show_warp_tiling)

# Every lesson answers a learner's mistake with a message, not a traceback (display.friendly).
from .display import friendly as _friendly  # noqa: E402

for _name in [n for n in dir() if n.startswith("show_") or n in ("exercise", "check", "hint", "solution")]:
    globals()[_name] = _friendly(globals()[_name])

# A GPU with no record of its own: the text's figures are the reference record's, said as the chapter starts.
from .display import note_on_another_gpu as _note_on_another_gpu  # noqa: E402
from .. import results as _results  # noqa: E402

_note_on_another_gpu(_results.here())
