"""Models of what a kernel's code does, beside its contract (spec.KernelSpec).

A `KernelModel` says, in Python, what a kernel's index arithmetic and copy paths do: which thread
owns which element of the block's C tile, which shared-memory words a lane reads, which tiles take
the fast copy path, whether its blocks stream an operand. The pictures and lessons draw them, the
launch findings and the library's plan price them; none of it is part of the launch contract (the
kernel runs the same without them). Each kernel's model sits beside its spec in `gemmlab/specs/`;
`registry.model` finds it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .spec import Params, Problem


@dataclass(frozen=True)
class KernelModel:
    # Which thread of the block computes element (r, c) of the block's C tile: a model of the
    # kernel's index arithmetic, drawn by pictures.thread_map (a test checks it is a fair partition).
    owner: Callable[[Params, int, int], int] | None = None
    # For the bank-conflict picture: the shared-memory word each lane of warp 0 reads at step k.
    bank_words: Callable[[Params, int], list[int]] | None = None
    # Where the inner loop of an outer-product kernel finds its operands: the 4-byte shared-memory
    # word, counted from the tile's start (which is 128-byte aligned: bank = word % 32), of element
    # (k, i) of the A tile (operand "A", i = row of the block's C tile) or of the B tile ("B",
    # i = column). Drawn by the picture of 128-bit shared loads and their banks; None: not modelled.
    smem_word: Callable[[Params, str, int, int], int] | None = None
    # Quantities the kernel derives from its tunables (e.g. 08's sub-tile counts), for pictures.
    geometry: Callable[[Params], dict[str, int]] = field(default=lambda p: {})
    # How many tiles of a problem take the kernel's fast copy path (a model of its code, for
    # launch.py's findings); None: not modelled.
    fast_tiles: Callable[[Params, Problem], int] | None = None
    # How much a tile off the fast copy path costs, relative to the kernel's defaults' tile (dispatch's model
    # scales its fitted `ragged` by it): 1 where every configuration's slow path costs alike
    slow_weight: Callable[[Params], float] = field(default=lambda p: 1.0)
    # True for a kernel whose epilogue stores C 16 bytes at a time where C's rows are 16-byte multiples and 4 bytes
    # at a time where they are not: dispatch's model charges a tile of the latter more (time_model.scalar_stores)
    vector_stores: bool = False
    # Configurations the model's features cannot tell from this one at a problem, but whose code differs there
    # (chapter 13's store paths of a ragged C): the plan's training times them beside it, so that the fit learns
    # each from its own timings at the same shapes
    twins: Callable[[Params, Problem], list[Params]] = field(default=lambda p, pr: [])
    # Tunables a launch with tiles off the fast copy path runs with, beside the configuration the model priced: a
    # build whose slow path is faster and whose fast path is the same code (chapter 13's RAGGED_B). The plan keeps
    # the price of the configuration as fitted, and its training and first-use timing name it by that configuration
    checked_build: dict = field(default_factory=dict)
    # True for a kernel on the memory-bound side (chapter 12): its blocks stream an operand, so dispatch's
    # model charges it by the megabytes it moves as well as by its waves
    streams: bool = False
