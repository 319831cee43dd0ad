"""One module per kernel, numbered like its chapter; `shared` holds the rules and pieces several use,
`tiled` and `pipelined` what a family of chapters shares.

`ALL` lists the specs in chapter order: the registry's single source of truth.
"""
from . import (ch01_naive, ch02_smem_tiling, ch03_coalescing, ch04_bank_conflicts, ch05_register_tiling,
               ch06_vectorize, ch07_prefetch, ch08_warp_tiling, ch09_pipeline, ch10_issue_rate, ch11_last_wave, ch12_skinny,
               ch13_split_k)

ALL = tuple(module.SPEC for module in (ch01_naive, ch02_smem_tiling, ch03_coalescing, ch04_bank_conflicts,
                                       ch05_register_tiling, ch06_vectorize, ch07_prefetch, ch08_warp_tiling,
                                       ch09_pipeline, ch10_issue_rate, ch11_last_wave, ch12_skinny, ch13_split_k))
