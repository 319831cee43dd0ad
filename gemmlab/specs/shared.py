"""Rules and pieces that several kernels' specs share."""
from __future__ import annotations

from typing import Callable

from ..spec import Param, Params, Rule, ShapeRule


def block_size_rule(threads: Callable[[Params], int]) -> Rule:
    return Rule(
        "block-size",
        lambda p: 32 <= threads(p) <= 1024,
        lambda p: (f"this configuration makes a block of {threads(p)} threads; CUDA allows at most 1024 "
                   f"and we ask for at least one full warp (32)"),
    )


def divides(name: str, what: str, num: Callable[[Params], int], den: Callable[[Params], int]) -> Rule:
    return Rule(name, lambda p: den(p) > 0 and num(p) % den(p) == 0,
                lambda p: f"{what}: {num(p)} is not a multiple of {den(p)}")


def unroll_within_tile(tunable: str) -> Rule:
    """An unroll factor of the k loop over one tile cannot exceed the tile's BK steps."""
    return Rule("unroll-within-tile", lambda p: p[tunable] <= p["BK"],
                lambda p: f"{tunable}={p[tunable]} is more than the {p['BK']} steps of a tile (BK)")


def vector_rows(kernel_vectorizes: Callable[[Params], bool] = lambda p: True) -> ShapeRule:
    return ShapeRule(
        "16-byte-rows",
        lambda p, pr: not kernel_vectorizes(p) or all(ld % 4 == 0 for ld in (pr.lda, pr.ldb, pr.ldc)),
        lambda p, pr: (f"this kernel moves 4 floats (16 bytes) per access, so every row must start 16-byte "
                       f"aligned: lda, ldb and ldc must be multiples of 4 (got {pr.lda}, {pr.ldb}, {pr.ldc}); "
                       f"pad the rows or use a scalar kernel"),
    )


def tile_load_rules(threads: Callable[[Params], int], per_load: int) -> tuple[Rule, ...]:
    return (
        divides("a-tile-loads", f"the A tile (BM*BK floats) must split evenly into {per_load}-float loads per thread",
                lambda p: p["BM"] * p["BK"], lambda p: per_load * threads(p)),
        divides("b-tile-loads", f"the B tile (BK*BN floats) must split evenly into {per_load}-float loads per thread",
                lambda p: p["BK"] * p["BN"], lambda p: per_load * threads(p)),
    )


def tile_smem(stages: Callable[[Params], int]) -> Callable[[Params], int]:
    """Bytes of the (transposed, padded) A tile and the B tile, times the number of stages."""
    return lambda p: stages(p) * 4 * p["BK"] * (p["BM"] + 4 + p["BN"])


# --- 05-07: one thread per TM x TN patch of the block tile ------------------------------------------

def outer_threads(p: Params) -> int:
    return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])


def outer_owner(p: Params, r: int, c: int) -> int:
    """Thread (tr, tc) owns the TM x TN patch at (tr * TM, tc * TN)."""
    return (r // p["TM"]) * (p["BN"] // p["TN"]) + c // p["TN"]


def outer_thread_tile(p: Params) -> tuple[int, int]:
    return p["TM"], p["TN"]


def outer_smem_word(a_transposed: bool) -> Callable[[Params, str, int, int], int]:
    """KernelModel.smem_word of 05-13: B as Bs[k][n] (rows of BN words); A as As[m][k] (05), or
    transposed with rows padded by 4 words, As[k][m] (06 on)."""
    def word(p: Params, operand: str, k: int, i: int) -> int:
        if operand == "B":
            return k * p["BN"] + i
        return k * (p["BM"] + 4) + i if a_transposed else i * p["BK"] + k
    return word


def outer_rules(vector: bool) -> tuple[Rule, ...]:
    return (
        divides("tm-divides-bm", "BM must split into rows of TM", lambda p: p["BM"], lambda p: p["TM"]),
        divides("tn-divides-bn", "BN must split into columns of TN", lambda p: p["BN"], lambda p: p["TN"]),
        block_size_rule(outer_threads),
        *tile_load_rules(outer_threads, 4 if vector else 1),
    )


# --- 08 and 10: warps own warp tiles of the block tile ---------------------------------------------

def warp_threads(p: Params) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def warp_grid_rules() -> tuple[Rule, ...]:
    """Warp tiles must tile the block tile, and the block must be a legal size."""
    return (
        divides("warps-tile-block-rows", "the block tile's rows must split into warp tiles (BM / WM)",
                lambda p: p["BM"], lambda p: p["WM"]),
        divides("warps-tile-block-cols", "the block tile's columns must split into warp tiles (BN / WN)",
                lambda p: p["BN"], lambda p: p["WN"]),
        block_size_rule(warp_threads),
    )


def accumulators(p: Params) -> int:
    """A thread holds WM*WN/32 accumulators in registers."""
    return (p["WM"] * p["WN"]) // 32


def accumulator_rule() -> Rule:
    return Rule("accumulators-fit-registers", lambda p: accumulators(p) <= 128,
                lambda p: (f"each thread would hold {accumulators(p)} accumulators; more than 128 "
                           f"leaves too few of the 255 registers for operands and addresses"))


def snake_interior_params() -> tuple[Param, ...]:
    # The sliders keep both on; the chapter's steps measure them off.
    return (Param("SNAKE", (0, 1), 1, "1: odd rows of the outer product run backwards (operand reuse); 0: row by row",
                  slider=(1,)),
            Param("INTERIOR", (0, 1), 1, "1: blocks inside the matrices load without bounds checks; 0: every "
                  "load checked", slider=(1,)))


def snake_interior_steps(base: dict) -> tuple[tuple[str, dict], ...]:
    return (("FFMAs row by row, every load checked", {**base, "SNAKE": 0, "INTERIOR": 0}),
            ("+ SNAKE: odd rows backwards", {**base, "SNAKE": 1, "INTERIOR": 0}),
            ("+ INTERIOR: unchecked loads inside", {**base, "SNAKE": 1, "INTERIOR": 1}))
