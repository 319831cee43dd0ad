"""This GPU's load latencies (shared memory, L2, DRAM) in SM cycles, from the pointer chases in
kernels/probes/memory.cu, and its L2 read bandwidth: what Little's law and the hierarchical
roofline take from the hardware."""
from __future__ import annotations

import functools
import hashlib

import numpy as np

from . import compile as compiler
from . import device, files
from .spec import KERNEL_DIR

SOURCE = KERNEL_DIR / "probes" / "memory.cu"
KERNELS = ("chase_global", "chase_shared", "read_l2")
STRIDE = 128              # bytes between entries: one cache line per step
WINDOW = 16 << 20         # the chain finishes one 16 MiB window before the next: see _order
SHARED_WORDS = 1024       # 4 KiB of shared memory (the kernel holds up to 4096 words)
MIB = 1 << 20


@functools.lru_cache(maxsize=None)
def compile_probe(arch: str = compiler.DEFAULT_ARCH) -> bytes:
    """The probe's cubin for `arch`, from the same NVRTC as the kernels; needs no GPU."""
    ok, image, log = compiler.nvrtc_compile(SOURCE.read_bytes(), "kernels/probes/memory.cu",
                                            [f"-arch={arch}", "-std=c++17"])
    if not ok:
        raise RuntimeError(f"the memory probes failed to compile for {arch}:\n{log}")
    return image


def _module(cp, arch: str):
    # CuPy loads cubins from a file; the cache directory keeps one per source and compiler.
    image = compile_probe(arch)
    path = compiler.cache_dir() / f"probes-{arch}-{hashlib.sha256(image).hexdigest()[:16]}.cubin"
    if not path.exists():
        files.write_atomic(path, image)
    return cp.RawModule(path=str(path))


def _order(slots: int, window: int, rng) -> np.ndarray:
    """A random visiting order of the slots, one window (at most `window` slots, all about the
    same size) at a time, the windows in random order too. Random within a window defeats
    prefetching; staying in one window for a while keeps its pages in the TLB, so a DRAM step
    costs a DRAM access and not also a page walk."""
    edges = np.linspace(0, slots, -(-slots // window) + 1).astype(np.int64)
    pieces = [a + rng.permutation(b - a) for a, b in zip(edges[:-1], edges[1:])]
    return np.concatenate([pieces[i] for i in rng.permutation(len(pieces))])


def measure(steps: int = 4096, repeats: int = 5, seed: int = 0) -> dict:
    """Cycles per dependent load from shared memory, L2 and DRAM (medians of `repeats` runs)."""
    cp = device.cupy()
    facts = device.facts()
    l2_bytes = max(MIB, min(facts.l2_bytes // 4, 8 * MIB)) // STRIDE * STRIDE
    dram_bytes = 4 * facts.l2_bytes // STRIDE * STRIDE
    dram_slots, warmup = dram_bytes // STRIDE, 256
    if warmup + steps > dram_slots // -(-dram_slots // (WINDOW // STRIDE)):
        raise ValueError(f"steps={steps} would leave the DRAM chain's first window (and time the TLB too)")
    module = _module(cp, facts.arch)
    chase_global, chase_shared = (module.get_function(k) for k in ("chase_global", "chase_shared"))
    rng = np.random.default_rng(seed)
    cycles, last, i32 = cp.zeros(1, cp.int64), cp.zeros(1, cp.uint64), np.int32

    def median(kernel, args, before=lambda: None) -> float:
        runs = []
        for _ in range(repeats):
            before()
            kernel((1,), (1,), args)
            runs.append(int(cycles.get()[0]))   # .get() waits for the kernel
        return round(float(np.median(runs)) / steps, 1)

    def chain(footprint: int):
        """A buffer whose entries, STRIDE bytes apart, each hold the address of the next."""
        order = _order(footprint // STRIDE, WINDOW // STRIDE, rng)
        buf = cp.zeros(footprint // 8, cp.uint64)
        base = buf.data.ptr
        addresses = np.uint64(base) + np.roll(order, -1).astype(np.uint64) * np.uint64(STRIDE)
        buf[cp.asarray(order * (STRIDE // 8))] = cp.asarray(addresses)
        return buf, np.uint64(base + int(order[0]) * STRIDE)

    # Shared: a random cycle over SHARED_WORDS words; the warm-up goes once around it.
    order = rng.permutation(SHARED_WORDS)
    nxt = np.empty(SHARED_WORDS, np.uint32)
    nxt[order] = np.roll(order, -1)
    shared = median(chase_shared, (cp.asarray(nxt), i32(SHARED_WORDS), i32(SHARED_WORDS), i32(steps), cycles,
                                   cp.zeros(1, cp.uint32)))

    # L2: well inside L2, far beyond L1; the warm-up walks the whole chain, so every line is in L2.
    buf, start = chain(l2_bytes)
    l2 = median(chase_global, (start, i32(l2_bytes // STRIDE), i32(steps), cycles, last))
    del buf

    # DRAM: 4x L2. A write of twice L2 before each run evicts the chain (the upload left part of
    # it in L2); the short warm-up and the timed steps then touch lines no load has brought in.
    buf, start = chain(dram_bytes)
    scratch = cp.empty(2 * facts.l2_bytes // 4, cp.float32)
    dram = median(chase_global, (start, i32(warmup), i32(steps), cycles, last), lambda: scratch.fill(0))
    del buf

    return {"shared_cycles": shared, "l2_cycles": l2, "dram_cycles": dram, "clock_mhz": facts.clock_mhz,
            "steps": steps, "footprints": {"shared": SHARED_WORDS * 4, "l2": l2_bytes, "dram": dram_bytes}}


def measure_l2_bandwidth(passes: int = 50, reps: int = 5) -> float:
    """GB/s that a full grid reads from a buffer a quarter of L2's size, `passes` times over (after
    the first pass every load hits L2); the median of `reps` timed launches after a warm-up."""
    cp = device.cupy()
    facts = device.facts()
    buf = cp.ones(facts.l2_bytes // 4 // 4, dtype=cp.float32)     # a quarter of L2, in floats
    out = cp.zeros(1, dtype=cp.float32)
    kernel = _module(cp, facts.arch).get_function("read_l2")
    args = (buf, np.int64(buf.size // 4), np.int32(passes), out)
    grid, block = (facts.sm_count * 8,), (256,)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for i in range(reps + 1):
        start.record()
        kernel(grid, block, args)
        stop.record()
        stop.synchronize()
        if i:                                  # the first launch is the warm-up
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    times.sort()
    return buf.nbytes * passes / times[len(times) // 2] / 1e9
