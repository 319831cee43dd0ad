"""Compile a registered kernel with NVRTC (from pip) to a cubin for an explicit architecture.

Works with no GPU. Resources (registers, shared memory, stack) are read from the cubin itself
(cubin.py) and spills from its SASS (sass.py); the ptxas report in NVRTC's log is only
cross-checked where it is there (see cubin.py for why). Results are cached on disk, keyed by the
source's bytes, the headers it includes from the kernels folder (kernels/ptx.cuh), the options
(architecture and tunables) and the compiler build.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import struct
import sys
import threading
from dataclasses import asdict, dataclass, field
from lzma import LZMAError
from pathlib import Path

from . import arch as archs, cubin, files, identity, prebuilt as shipped_cubins, registry, sass, toolchain
from .spec import KernelSpec, Params

DEFAULT_ARCH = archs.DEFAULT
ARCHS = tuple(archs.ARCHS)
BASE_OPTIONS = ("-std=c++17", "--ptxas-options=-v")


class CompileError(RuntimeError):
    """NVRTC refused the source; the message carries the compiler log, whose lines read
    `kernels/NN_name.cu(LINE): error: ...`."""

    def __init__(self, kernel: str, params: Params, arch: str, log: str):
        self.kernel, self.params, self.arch, self.log = kernel, dict(params), arch, log
        errors = [line for line in log.splitlines() if "error" in line]
        first = errors[0] if errors else log.strip().splitlines()[0] if log.strip() else "unknown error"
        super().__init__(f"{kernel} ({registry.KERNELS[kernel].config_label(params) if kernel in registry.KERNELS else ''}) "
                         f"failed to compile for {arch}: {first}\n{log}")


@dataclass(frozen=True)
class Resources:
    """Per-thread registers, static shared memory per block, stack frame, and the bytes that
    local-memory stores/loads move (spills, as ptxas counts them: static, per thread)."""
    registers: int
    static_smem: int
    stack_frame: int
    spill_stores: int
    spill_loads: int

    @classmethod
    def of(cls, cubin_bytes: bytes, opcodes: list[str]) -> "Resources":
        r = cubin.resources(cubin_bytes)
        return cls(r["registers"], r["static_smem"], r["stack_frame"],
                   _local_bytes(opcodes, "STL"), _local_bytes(opcodes, "LDL"))

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)


def _local_bytes(opcodes: list[str], op: str) -> int:
    widths = {"64": 8, "128": 16}
    return sum(next((widths[p] for p in o.split(".")[1:] if p in widths), 4)
               for o in opcodes if o.split(".")[0] == op)


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limited_by: str
    # What each resource allows: blocks per SM by threads, the block limit, registers and shared
    # memory; and the budget behind them (registers per warp as allocated, shared bytes per block
    # with the system's reserve, and the SM's own totals).
    limits: dict = field(default_factory=dict)
    budget: dict = field(default_factory=dict)

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm

    def shared_need(self) -> str:
        """'<tiles> B + 1 KiB reserved = <total> B': a block's shared memory as the SM counts it."""
        b = self.budget
        reserved = b["reserved_per_block"]
        return (f"{b['shared_per_block'] - reserved} B + "
                + (f"{reserved // 1024} KiB reserved" if reserved else "nothing reserved")
                + f" = {b['shared_per_block']} B")


def occupancy(resources: Resources, threads: int, arch: str, dynamic_smem: int = 0) -> Occupancy:
    """Blocks resident per SM from registers, shared memory and thread limits of `arch` (the CUDA
    occupancy calculator's rules: registers allocated per warp in units of 256, and on sm_80 and
    newer 1 KiB of shared memory reserved per block). UnknownArch for an architecture not in arch.py."""
    a = archs.get(arch)
    warps = -(-threads // 32)
    regs_per_warp = -(-max(resources.registers, 1) * 32 // a.register_unit) * a.register_unit
    limits = {
        "threads": a.max_threads_per_sm // (warps * 32),
        "blocks": a.max_blocks_per_sm,
        "registers": (a.registers_per_sm // regs_per_warp) // warps,
    }
    smem = resources.static_smem + dynamic_smem
    if smem:
        limits["shared memory"] = a.shared_per_sm // (smem + a.reserved_shared_per_block)
    limited_by = min(limits, key=limits.get)
    blocks = limits[limited_by]
    budget = {"threads_per_sm": a.max_threads_per_sm, "blocks_per_sm": a.max_blocks_per_sm,
              "registers_per_sm": a.registers_per_sm, "shared_per_sm": a.shared_per_sm, "warps_per_block": warps,
              "registers_per_warp": regs_per_warp,
              "shared_per_block": smem + a.reserved_shared_per_block if smem else 0,
              "reserved_per_block": a.reserved_shared_per_block, "schedulers_per_sm": a.schedulers_per_sm}
    return Occupancy(blocks, blocks * warps, a.max_warps_per_sm, limited_by, limits, budget)


@dataclass(frozen=True)
class Build:
    kernel: str
    params: dict
    arch: str
    cubin_path: Path
    log: str
    resources: Resources
    compiler: str
    cached: bool
    shipped: bool = False      # unpacked from gemmlab's shipped cubins (prebuilt.py), not compiled here

    @property
    def spec(self) -> KernelSpec:
        return registry.KERNELS[self.kernel]

    @property
    def cubin(self) -> bytes:
        return self.cubin_path.read_bytes()

    @property
    def occupancy(self) -> Occupancy:
        return occupancy(self.resources, self.spec.threads(self.params), self.arch,
                         self.spec.dynamic_smem(self.params))

    def report(self) -> str:
        r, o = self.resources, self.occupancy
        spills = (f"{r.spill_stores} B spill stores, {r.spill_loads} B spill loads" if r.spills else "no spills")
        dyn = self.spec.dynamic_smem(self.params)
        smem = f"{r.static_smem + dyn} B shared memory" + (f" ({dyn} B dynamic)" if dyn else "")
        # the configuration alone on the first line: it is the long one, and a narrow output wraps it at its spaces
        return (f"{self.kernel} [{self.spec.config_label(self.params)}]\n"
                f"  for {self.arch}, NVRTC {self.compiler}\n"
                f"  {r.registers} registers/thread, {smem}, {r.stack_frame} B stack, {spills}\n"
                f"  {self.spec.threads(self.params)} threads/block -> {o.blocks_per_sm} block{'s' if o.blocks_per_sm != 1 else ''}/SM, "
                f"{o.warps_per_sm}/{o.max_warps_per_sm} warps ({o.fraction:.0%} occupancy, limited by {o.limited_by})")


def cache_dir() -> Path:
    """The compile cache: $GEMMLAB_CACHE, else $XDG_CACHE_HOME/gemmlab or ~/.cache/gemmlab; a folder
    this user owns and nobody else may write to (files.UnusableDirectory says why not)."""
    root = os.environ.get("GEMMLAB_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gemmlab"
    return files.private_dir(Path(root), "the compile cache",
                             "set GEMMLAB_CACHE to a folder of your own (it is only a cache: any empty folder will do)")


# Damaged cache entries already reported in this process (each is rebuilt, and said once).
_reported: set[Path] = set()


def _read_entry(cubin_path: Path, log_path: Path, res_path: Path) -> tuple[str, Resources] | None:
    """A complete, sound cache entry, or None. A damaged one (a file missing, empty, cut short, not UTF-8 or
    of the wrong types; a cubin whose ELF sections do not parse, or whose resources are not the entry's) is
    reported once, deleted and then rebuilt by the caller."""
    if not res_path.exists():          # the resources are written last: no entry yet (or one being written)
        return None
    try:
        if not cubin_path.exists() or not log_path.exists():
            raise ValueError(f"its {'cubin' if not cubin_path.exists() else 'log'} is missing")
        image = cubin_path.read_bytes()
        counts = json.loads(res_path.read_text())
        names = [f.name for f in dataclasses.fields(Resources)]
        if not isinstance(counts, dict) or sorted(counts) != sorted(names):
            raise ValueError(f"its resources are not the counts {', '.join(names)}")
        wrong = [k for k in names if isinstance(counts[k], bool) or not isinstance(counts[k], int) or counts[k] < 0]
        if wrong:
            raise ValueError(f"{', '.join(wrong)} not whole numbers")
        resources = Resources(**counts)
        in_cubin = cubin.resources(image)      # its ELF sections parsed: ValueError where they are damaged
        if any(in_cubin[k] != getattr(resources, k) for k in in_cubin):
            raise ValueError("the cubin's registers, shared memory or stack are not the entry's")
        return log_path.read_text(), resources
    except (OSError, ValueError, TypeError, struct.error) as exc:     # JSON and UTF-8 included
        if cubin_path not in _reported:
            _reported.add(cubin_path)
            print(f"gemmlab: damaged compile-cache entry {cubin_path.with_suffix('')} ({exc}); rebuilding it",
                  file=sys.stderr)
        for path in (res_path, log_path, cubin_path):   # the marker of a whole entry first
            with contextlib.suppress(OSError):
                path.unlink()
        return None


def _options(params: Params, arch: str) -> list[str]:
    archs.get(arch)   # UnknownArch for a name that is not an architecture gemmlab has limits for
    return [f"-arch={arch}", *BASE_OPTIONS, *(f"-D{k}={v}" for k, v in sorted(params.items()))]


# One NVRTC compile at a time in a process: compiles run side by side in threads of one process were
# seen to give different code now and then (a spill, a few more registers or instructions; never
# reproduced on demand: docs/toolchain.md). compile_aside.precompile runs compiles in parallel in processes.
_ONE_COMPILE_AT_A_TIME = threading.Lock()


def nvrtc_compile(source: bytes, name: str, options: list[str],
                  headers: dict[str, bytes] | None = None) -> tuple[bool, bytes, str]:
    """(compiled?, cubin, log) of one source with NVRTC; what compile_kernel and the probes share.
    `headers`: the text of each header the source includes, by the name it includes it by."""
    with _ONE_COMPILE_AT_A_TIME:
        return _nvrtc_compile(source, name, options, headers or {})


def _nvrtc_compile(source: bytes, name: str, options: list[str],
                   headers: dict[str, bytes]) -> tuple[bool, bytes, str]:
    nvrtc = toolchain.nvrtc()  # cuda.bindings.nvrtc: every call returns (nvrtcResult, *outputs)
    success = nvrtc.nvrtcResult.NVRTC_SUCCESS
    status, prog = nvrtc.nvrtcCreateProgram(source, name.encode(), len(headers), list(headers.values()),
                                            [n.encode() for n in headers])
    if status != success:
        raise RuntimeError(f"nvrtcCreateProgram failed: {status.name}")
    try:
        status, = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = bytes(buf).split(b"\0", 1)[0].decode(errors="replace")
        if status != success:
            return False, b"", log or f"NVRTC: {status.name}"
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        image = bytearray(size)
        err, = nvrtc.nvrtcGetCUBIN(prog, image)
        if err != success:
            raise RuntimeError(f"nvrtcGetCUBIN failed: {err.name}")
        return True, bytes(image), log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def inputs(spec: KernelSpec, params: Params, arch: str, source: Path | None = None) -> tuple[bytes, dict, list[str]]:
    """What decides a cubin, the compiler aside: the source's bytes (`source`: a learner's file compiled under
    this kernel's spec), the headers it includes from the kernels folder (ptx.cuh) by the name it includes them
    by, for a learner's copy elsewhere too, and NVRTC's options. NVRTC is given the headers' text, which it takes
    before any file of that name: so the cubin is made of exactly what these hold, whatever folder a search would
    have looked in first. The compile cache's key and a shipped cubin's name (prebuilt.py) are made of them."""
    text = (source or spec.path).read_bytes()
    included = identity.headers(text.decode(errors="replace"), spec.path.parent)
    return text, {name: path.read_bytes() for name, path in included.items()}, _options(params, arch)


def _entry(name: str, arch: str, text: bytes, headers: dict[str, bytes], options: list[str], compiler) -> Path:
    """A build's cache entry (its files add .cubin, .log, .json). The key is what decides the cubin, so two
    checkouts of the same sources share cache entries."""
    key = hashlib.sha256(json.dumps([text.hex(), {n: h.hex() for n, h in headers.items()}, options, compiler])
                         .encode()).hexdigest()[:24]
    return cache_dir() / f"{name}-{arch}-{key}"


def _resolved(kernel: str | KernelSpec, params: Params | None, arch: str) -> tuple[KernelSpec, dict]:
    """The spec and full configuration of a build, its rules and the architecture's limits checked (raising)."""
    spec = kernel if isinstance(kernel, KernelSpec) else registry.get(kernel)
    full = spec.resolve(params)
    spec.check_arch(full, archs.get(arch))
    return spec, full


def _cached_cubin(spec: KernelSpec, arch: str, text: bytes, headers: dict[str, bytes], options: list[str]) -> Path | None:
    """This machine's compile of these inputs in the cache (its resources written: the entry complete), or None."""
    entry = _entry(spec.name, arch, text, headers, options, toolchain.nvrtc_build())
    cubin_path = entry.with_suffix(".cubin")
    return cubin_path if entry.with_suffix(".json").exists() and cubin_path.exists() else None


def built(kernel: str | KernelSpec, params: Params | None = None, arch: str = DEFAULT_ARCH,
          disassembled: bool = False) -> bool:
    """Whether compile_kernel finds this build in the cache (and, with `disassembled`, its SASS text beside it), so
    asking for it costs no compile. A configuration refused by rule counts as built: there is nothing to build."""
    try:
        spec, full = _resolved(kernel, params, arch)
    except Exception:          # an unknown kernel, refused by rule, or an unknown architecture: compile_kernel says which
        return True
    try:
        cubin_path = _cached_cubin(spec, arch, *inputs(spec, full, arch, None))
    except Exception:          # no NVRTC, an unreadable source: the compile says what is wrong
        return False
    return cubin_path is not None and (not disassembled or sass.kept(cubin_path))


def ready(kernel: str | KernelSpec, params: Params | None = None, arch: str = DEFAULT_ARCH) -> bool:
    """Whether compile_kernel(..., prebuilt=True) has this build without compiling it: in the cache, or shipped."""
    try:
        spec, full = _resolved(kernel, params, arch)
        text, headers, options = inputs(spec, full, arch, None)
        return (shipped_cubins.find(spec.name, arch, shipped_cubins.source_key(text, headers, options)) is not None
                or _cached_cubin(spec, arch, text, headers, options) is not None)
    except Exception:          # refused, unreadable, no NVRTC: compile_kernel says why
        return False


def compile_kernel(kernel: str | KernelSpec, params: Params | None = None, arch: str = DEFAULT_ARCH,
                   use_cache: bool = True, source: Path | None = None, prebuilt: bool = False) -> Build:
    """Check the rules, then compile (or fetch from the cache). Raises IllegalConfig before
    compiling, CompileError with file and line when NVRTC refuses the source. `source`: another
    file to compile under this kernel's spec (a learner's version of it); errors name that file.
    `prebuilt`: a cubin gemmlab ships for exactly this source and these options (prebuilt.py) is
    taken, with no compile and without loading NVRTC (what gemmlab.matmul asks for)."""
    spec, full = _resolved(kernel, params, arch)      # what this architecture cannot hold, refused by rule
    text, headers, options = inputs(spec, full, arch, source)
    where = str(source) if source else f"kernels/{spec.path.name}"
    shipped = None
    if prebuilt and use_cache and source is None:
        shipped_key = shipped_cubins.source_key(text, headers, options)
        shipped = shipped_cubins.find(spec.name, arch, shipped_key)
    compiler = shipped["nvrtc"] if shipped else toolchain.nvrtc_build()
    entry = _entry(spec.name, arch, text, headers, options, compiler)
    cubin_path, log_path, res_path = (entry.with_suffix(s) for s in (".cubin", ".log", ".json"))
    found = _read_entry(cubin_path, log_path, res_path) if use_cache else None
    if not found and shipped:
        # unpacked into the cache like a compile's output (the resources last), under its compiler's key
        try:
            image = shipped_cubins.cubin_of(shipped_cubins.entry_name(spec.name, arch, shipped_key))
        except (OSError, LZMAError):
            image = None
        if image is not None:
            files.write_atomic(cubin_path, image)
            files.write_atomic(log_path, shipped["log"])
            files.write_atomic(res_path, json.dumps(shipped["resources"]))
            found = _read_entry(cubin_path, log_path, res_path)
        if not found:                  # a damaged shipped entry: compiled here, as any other build
            return compile_kernel(spec, full, arch, use_cache, source, prebuilt=False)
    if found:
        log, resources = found
    else:
        ok, image, log = nvrtc_compile(text, where, options, headers)
        if not ok:
            raise CompileError(spec.name, full, arch, log)
        # Each file whole or not at all; the resources last, as a reader needs all three.
        files.write_atomic(cubin_path, image)
        files.write_atomic(log_path, log)
        # Spills go to local memory, which lives in the stack frame: with no frame there are none to count,
        # and nvdisasm (a third to a half of a compile's time) is not run
        frame = cubin.resources(image)["stack_frame"]
        resources = Resources.of(image, sass.opcodes(cubin_path) if frame else [])
        files.write_atomic(res_path, json.dumps(asdict(resources)))
    return Build(spec.name, full, arch, cubin_path, log, resources, compiler, found is not None, shipped is not None)
