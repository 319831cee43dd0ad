"""Traffic and intensity models: how many bytes a kernel asks global memory for, and what
that means against the roofline. Pure arithmetic from the registry's parameters."""
from __future__ import annotations

from dataclasses import dataclass

from .spec import KernelSpec, Params, Problem

FLOAT = 4


@dataclass(frozen=True)
class Traffic:
    flops: int
    requested_bytes: int    # what the threads' load/store instructions ask for (before any cache)

    @property
    def intensity(self) -> float:
        """FLOP per byte requested from global memory."""
        return self.flops / self.requested_bytes


def compulsory_bytes(problem: Problem) -> int:
    """Every input read once, the output written once (and read once too where beta != 0)."""
    M, N, K = problem.M, problem.N, problem.K
    return FLOAT * (M * K + K * N) + M * N * FLOAT * (2 if problem.beta else 1)


def traffic(spec: KernelSpec, params: Params, problem: Problem) -> Traffic:
    M, N, K = problem.M, problem.N, problem.K
    out = M * N * FLOAT * (2 if problem.beta else 1)
    if spec.stages_tiles:
        rows, cols = spec.tile(params)
        # every block streams its BM x K strip of A and K x BN strip of B once
        loads = FLOAT * (M * K * -(-N // cols) + K * N * -(-M // rows))
    else:
        loads = FLOAT * 2 * M * N * K  # every thread reads a row of A and a column of B
    return Traffic(problem.flops, loads + out)


def attainable_gflops(intensity: float, peak_gflops: float, bandwidth_gbs: float) -> float:
    """The roofline: min(peak, bandwidth x intensity)."""
    return min(peak_gflops, bandwidth_gbs * intensity)


def ridge_point(peak_gflops: float, bandwidth_gbs: float) -> float:
    """The intensity (FLOP/byte) where a kernel stops being memory-bound."""
    return peak_gflops / bandwidth_gbs
