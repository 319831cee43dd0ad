"""One module per kernel, numbered like its chapter; `shared` holds the rules and pieces several use,
`tiled` and `pipelined` what a family of chapters shares.

Each kernel's module defines its `SPEC` (the contract, spec.KernelSpec), and where it has one, its
`MODEL` (models of its code, kernel_model.KernelModel) and its `PROGRAMME` (what the course measures
of it, course.Programme). `ALL` lists the specs in chapter order: the registry's single source of
truth; `MODELS` and `PROGRAMMES` hold the others by kernel name (the defaults where a module has none).
"""
from ..course import Programme
from ..kernel_model import KernelModel
from . import (ch01_naive, ch02_smem_tiling, ch03_coalescing, ch04_bank_conflicts, ch05_register_tiling,
               ch06_vectorize, ch07_prefetch, ch08_warp_tiling, ch09_pipeline, ch10_issue_rate, ch11_last_wave, ch12_skinny,
               ch13_split_k)

MODULES = (ch01_naive, ch02_smem_tiling, ch03_coalescing, ch04_bank_conflicts, ch05_register_tiling, ch06_vectorize,
           ch07_prefetch, ch08_warp_tiling, ch09_pipeline, ch10_issue_rate, ch11_last_wave, ch12_skinny, ch13_split_k)

ALL = tuple(module.SPEC for module in MODULES)
MODELS = {module.SPEC.name: getattr(module, "MODEL", KernelModel()) for module in MODULES}
PROGRAMMES = {module.SPEC.name: getattr(module, "PROGRAMME", Programme()) for module in MODULES}
