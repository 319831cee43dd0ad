"""The GPU, if there is one: detection, facts and ceilings.

With no GPU (or no CuPy) every function here still answers: `available()` is False and
`facts()` returns None, so callers fall back to recorded results.
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

from . import arch as archs, toolchain

# cudaDeviceAttr numbers (stable across CUDA 12 and 13; properties lost some fields in 13).
_ATTR = {"clock_khz": 13, "mem_clock_khz": 36, "bus_width": 37, "l2_bytes": 38, "sm_count": 16,
         "cc_major": 75, "cc_minor": 76, "smem_optin": 97}


@functools.lru_cache(maxsize=None)
def _load_cupy():
    toolchain.preload_nvrtc()   # CuPy then takes the wheel's NVRTC too, not a system CUDA's
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        if _unsupported(cupy):
            return None
        return cupy
    except Exception:  # no CuPy, no driver, or no device: all mean "no GPU" here
        return None


def available() -> bool:
    return _load_cupy() is not None


def cupy():
    """The CuPy module, on a machine where it sees a GPU; RuntimeError saying why not elsewhere."""
    cp = _load_cupy()
    if cp is None:
        raise RuntimeError(why_unavailable())
    return cp


def _compute_capability(cupy) -> tuple[int, int]:
    rt = cupy.cuda.runtime
    dev = cupy.cuda.Device().id
    return rt.deviceGetAttribute(_ATTR["cc_major"], dev), rt.deviceGetAttribute(_ATTR["cc_minor"], dev)


def _unsupported(cupy) -> str:
    """Why gemmlab cannot use this GPU ('' if it can): an architecture it has no limits for."""
    try:
        archs.of_compute_capability(_compute_capability(cupy))
        return ""
    except archs.UnknownArch as exc:
        return str(exc)


def why_unavailable() -> str:
    try:
        import cupy
    except Exception as exc:
        return f"CuPy is not installed or does not load ({type(exc).__name__}); timings come from recorded runs"
    try:
        unsupported = cupy.cuda.runtime.getDeviceCount() > 0 and _unsupported(cupy)
    except Exception:
        unsupported = ""
    if unsupported:
        return f"this GPU cannot run the course: {unsupported}; timings come from recorded runs"
    return "no CUDA device is visible to CuPy; timings come from recorded runs"


@dataclass(frozen=True)
class DeviceFacts:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    clock_mhz: float
    fp32_lanes_per_sm: int
    mem_clock_mhz: float
    bus_width_bits: int
    l2_bytes: int
    smem_per_block_optin: int
    driver_cuda: str
    runtime_cuda: str

    @property
    def arch(self) -> str:
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    @property
    def peak_fp32_tflops(self) -> float:
        """SMs x FP32 lanes per SM x 2 flops (one FMA) x clock."""
        return self.sm_count * self.fp32_lanes_per_sm * 2 * self.clock_mhz * 1e6 / 1e12

    @property
    def dram_gbs(self) -> float:
        """From attributes: 2 transfers a clock (DDR) x memory clock x bus width."""
        return 2 * self.mem_clock_mhz * 1e6 * self.bus_width_bits / 8 / 1e9

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(arch=self.arch, peak_fp32_tflops=round(self.peak_fp32_tflops, 2), dram_gbs=round(self.dram_gbs, 1))
        return d


def cuda_errors() -> tuple[type, ...]:
    """What CuPy raises when a kernel faults (through the runtime or the driver API)."""
    from cupy_backends.cuda.api import driver, runtime
    return runtime.CUDARuntimeError, driver.CUDADriverError


_FAULTS = {"ILLEGALADDRESS": "an access outside A, B, C or the shared tiles",
           "MISALIGNEDADDRESS": "a vector access at an address that is not a multiple of its width",
           "ILLEGALINSTRUCTION": "often a barrier that not every thread of the block reaches",
           "LAUNCHFAILED": "the kernel faulted"}


def cuda_error_words(exc: Exception) -> str:
    """CUDA's own name for a fault, and what usually causes it in a GEMM kernel."""
    text = str(exc).strip()
    key = text.split(":")[0].upper().replace("_", "").removeprefix("CUDAERROR")
    gloss = _FAULTS.get(key)
    return f"{text} ({gloss})" if gloss else text


@functools.lru_cache(maxsize=None)
def facts() -> DeviceFacts | None:
    cp = _load_cupy()
    if cp is None:
        return None
    rt = cp.cuda.runtime
    dev = cp.cuda.Device().id
    attr = {k: rt.deviceGetAttribute(v, dev) for k, v in _ATTR.items()}
    cc = (attr["cc_major"], attr["cc_minor"])
    name = rt.getDeviceProperties(dev)["name"]
    name = name.decode() if isinstance(name, bytes) else name

    def version(v: int) -> str:
        return f"{v // 1000}.{v % 1000 // 10}"
    return DeviceFacts(
        name=name, compute_capability=cc, sm_count=attr["sm_count"], clock_mhz=attr["clock_khz"] / 1000,
        fp32_lanes_per_sm=archs.of_compute_capability(cc).fp32_lanes_per_sm, mem_clock_mhz=attr["mem_clock_khz"] / 1000,
        bus_width_bits=attr["bus_width"], l2_bytes=attr["l2_bytes"], smem_per_block_optin=attr["smem_optin"],
        driver_cuda=version(rt.driverGetVersion()), runtime_cuda=version(rt.runtimeGetVersion()),
    )


def measure_copy_bandwidth(nbytes: int = 1 << 30, reps: int = 10) -> float:
    """GB/s of a device-to-device copy, counting bytes read plus bytes written (median)."""
    cp = cupy()
    src = cp.empty(nbytes // 4, dtype=cp.float32)
    src.fill(1.0)
    dst = cp.empty_like(src)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for i in range(reps + 2):
        start.record()
        dst[...] = src
        stop.record()
        stop.synchronize()
        if i >= 2:  # two warm-ups
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    times.sort()
    return 2 * nbytes / times[len(times) // 2] / 1e9

