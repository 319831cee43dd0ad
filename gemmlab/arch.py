"""What each GPU architecture gemmlab compiles for can hold: the per-SM and per-block limits behind
occupancy, the rules that refuse a configuration before compiling, and the FP32 peak.

From the CUDA C++ Programming Guide, "Compute Capabilities" (feature and technical-specification
tables, CUDA 13.0), and the Ampere, Ada, Hopper and Blackwell tuning guides for the FP32 lanes per
SM. No GPU needed. An architecture not in the table is refused: another one's limits would give an
occupancy that looks right and is not.
"""
from __future__ import annotations

from dataclasses import dataclass

KIB = 1024


@dataclass(frozen=True)
class Arch:
    name: str                    # "sm_90": what NVRTC's -arch takes
    family: str
    examples: str                # GPUs learners meet with it
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int           # bytes: the largest carve-out of the unified L1 / shared memory
    shared_per_block: int        # bytes a block may have (dynamic, with cudaFuncAttributeMaxDynamicSharedMemorySize)
    reserved_shared_per_block: int   # bytes the system keeps per resident block (sm_80 and newer: 1 KiB)
    fp32_lanes_per_sm: int       # FP32 FMA units: one FMA (2 flops) each per clock
    cp_async: bool               # cp.async (LDGSTS), asynchronous global -> shared copies: sm_80 and newer
    registers_per_sm: int = 64 * KIB
    max_registers_per_thread: int = 255
    max_threads_per_block: int = 1024
    static_shared_per_block: int = 48 * KIB   # a __shared__ array beyond this does not compile
    register_unit: int = 256     # registers are allocated per warp in units of 256
    schedulers_per_sm: int = 4

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // 32

    @property
    def compute_capability(self) -> tuple[int, int]:
        digits = self.name.removeprefix("sm_")
        return int(digits[:-1]), int(digits[-1])


ARCHS: dict[str, Arch] = {a.name: a for a in (
    Arch("sm_75", "Turing", "T4, RTX 20", 1024, 16, 64 * KIB, 64 * KIB, 0, 64, False),
    Arch("sm_80", "Ampere", "A100, A30", 2048, 32, 164 * KIB, 163 * KIB, KIB, 64, True),
    Arch("sm_86", "Ampere", "RTX 30, A10, A40", 1536, 16, 100 * KIB, 99 * KIB, KIB, 128, True),
    Arch("sm_87", "Ampere", "Jetson AGX Orin", 1536, 16, 164 * KIB, 163 * KIB, KIB, 128, True),
    Arch("sm_89", "Ada", "RTX 40, L4, L40S", 1536, 24, 100 * KIB, 99 * KIB, KIB, 128, True),
    Arch("sm_90", "Hopper", "H100, H200", 2048, 32, 228 * KIB, 227 * KIB, KIB, 128, True),
    Arch("sm_100", "Blackwell", "B200, GB200", 2048, 32, 228 * KIB, 227 * KIB, KIB, 128, True),
    Arch("sm_120", "Blackwell", "RTX 50, RTX PRO 6000", 1536, 32, 128 * KIB, 99 * KIB, KIB, 128, True),
)}
DEFAULT = "sm_90"
# The most shared memory any listed architecture gives a block: what no configuration may exceed.
MAX_SHARED_PER_BLOCK = max(a.shared_per_block for a in ARCHS.values())


class UnknownArch(ValueError):
    """An architecture gemmlab has no limits for (or a name that is not one)."""


def get(name: str) -> Arch:
    """The facts of `name` ("sm_90"); UnknownArch naming the ones there are."""
    if name in ARCHS:
        return ARCHS[name]
    known = ", ".join(ARCHS)
    if name.lower() in ARCHS:
        raise UnknownArch(f"architecture {name!r}: write it in lower case, {name.lower()!r}")
    raise UnknownArch(f"gemmlab has no limits for architecture {name!r}; it knows {known} "
                      f"(compute capability 7.5 and newer)")


def of_compute_capability(cc: tuple[int, int]) -> Arch:
    return get(f"sm_{cc[0]}{cc[1]}")
