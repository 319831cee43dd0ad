"""A course kernel run on the CPU with CUDA's semantics, to check a learner's kernel where there is no GPU.

The kernel file itself is compiled by the host's C++ compiler (g++ or clang++; or the one the `ziglang`
package ships) with `cuda_on_cpu.h` in front of it and `runtime.cpp` beside it, under AddressSanitizer
and UndefinedBehaviorSanitizer's alignment check. Each launch runs twice, its threads scheduled first
to last and then last to first between barriers, so that a missing barrier gives a wrong answer (see
the header's comment for the rest). The result is validated against float64 on the host, as the GPU
check validates (bench.Check's two tests), and a wrong element is named by row and column.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import bench
from ..spec import KernelSpec, Params, Problem

HERE = Path(__file__).resolve().parent
RUNTIME = (HERE / "cuda_on_cpu.h", HERE / "runtime.cpp")
SCHEDULES = ("forward", "reverse")          # the order of the runner's two launches
RUN_TIMEOUT_S = 30     # a right launch at these shapes takes a second or two
# Blocks a GPU runs at once, where a kernel plans a split of its last wave: an H100's SMs, one block each,
# so that small shapes take the split path as they would there.
SLOTS = 132
FLAGS = ["-std=c++17", "-O1", "-g", "-fno-omit-frame-pointer", "-Wno-unknown-pragmas", "-Wno-unused-result",
         "-DGEMMLAB_CPU"]
SANITIZERS = ["-fsanitize=address,alignment", "-fno-sanitize-recover=all"]
# The sanitizers abort on the first error, where the runner names the CUDA thread that ran. (Whether AddressSanitizer
# keeps fake stacks to catch a use after return is left to its default: on from GCC 13, off before; runtime.cpp keeps
# each fiber's across its switches.)
ASAN_OPTIONS = "detect_leaks=0:abort_on_error=1:symbolize=1:halt_on_error=1"


class NoCompiler(RuntimeError):
    """No C++ compiler here: a check on the CPU cannot run (it says so; it never passes)."""


class BuildError(RuntimeError):
    """The host compiler refused the file (its first errors, with the learner's file and line)."""


@dataclass
class Fault:
    """The kernel stopped: an access outside an array, a misaligned vector, a barrier or shuffle not every
    thread reaches, a wait that never ends. `what` is the runtime's or sanitizer's sentence, `where` the
    CUDA thread and block and the source line."""
    what: str
    where: str

    def __str__(self) -> str:
        return f"{self.what} ({self.where})" if self.where else self.what


@functools.lru_cache(maxsize=None)
def sanitizers(cxx: tuple[str, ...]) -> tuple[str, ...]:
    """SANITIZERS where this compiler builds and links with them (g++ and clang++ do; zig's clang has no
    AddressSanitizer runtime), else none: accesses outside the arrays then go unchecked, and the verdict says so."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.cpp"
        probe.write_text("int main() { return 0; }\n")
        done = subprocess.run([*cxx, *SANITIZERS, str(probe), "-o", str(Path(tmp) / "probe")], capture_output=True)
    return tuple(SANITIZERS) if done.returncode == 0 else ()


def compiler() -> list[str]:
    """The C++ compiler: $CXX, else g++, else clang++, else `python -m ziglang c++` where that package is installed."""
    for name in (os.environ.get("CXX"), "g++", "clang++"):
        if name and shutil.which(name.split()[0]):
            return name.split()
    try:
        import ziglang  # noqa: F401
        return [sys.executable, "-m", "ziglang", "c++"]
    except ImportError:
        raise NoCompiler("no C++ compiler here (g++ or clang++, or `pip install ziglang`), so the kernel could "
                         "not be run on the CPU") from None


# extern __shared__ float smem[];  ->  the runtime's dynamic shared buffer, on the same line
_DYNAMIC_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([\w:]+)\s+(\w+)\s*\[\s*\]\s*;")


def _cpu_source(text: str, path: Path) -> str:
    body = _DYNAMIC_SHARED.sub(lambda m: f"{m[1]}* const {m[2]} = static_cast<{m[1]}*>(glcpu::dynamic_shared());",
                               text)
    return f'#include "cuda_on_cpu.h"\n#line 1 "{path}"\n{body}'


def _cache_dir() -> Path:
    from .. import compile as compiler_module
    return compiler_module.cache_dir() / "cpu"


def build(spec: KernelSpec, params: Params, source: Path | None = None) -> Path:
    """The runner program for `source` (else the chapter's kernel) at `params`, built once (cached by the
    code, the defines, the runtime and the compiler)."""
    path = Path(source) if source else spec.path
    text = path.read_text()
    cxx = compiler()
    defines = [f"-D{k}={v}" for k, v in params.items()]
    include = ["-I", str(HERE), "-I", str(spec.path.parent)]
    flags = [*FLAGS, *sanitizers(tuple(cxx))]
    key = hashlib.sha256("\x1f".join([text, str(path), *defines, *cxx, *flags,
                                      *(p.read_text() for p in RUNTIME), *_headers(spec)]).encode()).hexdigest()[:24]
    folder = _cache_dir() / key
    program = folder / "runner"
    if program.exists():
        return program
    runtime = _runtime_object(cxx, flags)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        unit = Path(tmp) / (path.stem + ".cpp")
        unit.write_text(_cpu_source(text, path))
        out = Path(tmp) / "runner"
        done = subprocess.run([*cxx, *flags, *include, *defines, "-x", "c++", str(unit), "-x", "none", str(runtime),
                               "-o", str(out), "-lm"], capture_output=True, text=True)
        if done.returncode:
            errors = [ln for ln in done.stderr.splitlines() if "error" in ln] or done.stderr.strip().splitlines()
            raise BuildError("\n".join(errors[:5]))
        os.replace(out, program)
    return program


def _runtime_object(cxx: list[str], flags: list[str]) -> Path:
    """runtime.cpp compiled once for every kernel's runner (it takes no kernel's defines): three quarters of a
    runner's build time, so a learner's next check builds only the kernel. Cached by its code and the compiler."""
    key = hashlib.sha256("\x1f".join([*cxx, *flags, *(p.read_text() for p in RUNTIME)]).encode()).hexdigest()[:24]
    folder = _cache_dir() / f"runtime-{key}"
    obj = folder / "runtime.o"
    if obj.exists():
        return obj
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        out = Path(tmp) / "runtime.o"
        done = subprocess.run([*cxx, *flags, "-I", str(HERE), "-c", str(RUNTIME[1]), "-o", str(out)],
                              capture_output=True, text=True)
        if done.returncode:
            raise BuildError("gemmlab's CPU runtime did not compile here:\n" + done.stderr.strip()[-2000:])
        os.replace(out, obj)
    return obj


def _headers(spec: KernelSpec) -> list[str]:
    """The kernels folder's headers, which a kernel may include (part of what a build depends on)."""
    return [p.read_text() for p in sorted(spec.path.parent.glob("*.cuh"))]


def operands(problem: Problem, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B and C (C is read where beta != 0) as the GPU allocates them: rows * leading dimension floats."""
    rng = np.random.default_rng(seed)
    p = problem
    a = rng.uniform(-1, 1, (p.M, p.lda)).astype(np.float32)
    b = rng.uniform(-1, 1, (p.K, p.ldb)).astype(np.float32)
    c = rng.uniform(-1, 1, (p.M, p.ldc)).astype(np.float32)
    return a, b, c


@dataclass
class Wrong:
    """Where a result is wrong: the first wrong element and the pattern of all of them."""
    row: int
    col: int
    expected: float
    got: float
    where: str
    at_edge: bool

    def __str__(self) -> str:
        return (f"C[{self.row}, {self.col}] is {self.got:.6g}, expected {self.expected:.6g}; {self.where}")


def validate(problem: Problem, a, b, c0, out) -> Wrong | None:
    """bench.Check's two tests on the host: normwise within 16 u sqrt(K), every element within its
    worst-case FP32 bound, nothing non-finite. The first wrong element in row order, else None."""
    p = problem
    A, B = a[:, :p.K].astype(np.float64), b[:, :p.N].astype(np.float64)
    C0 = c0[:, :p.N].astype(np.float64)
    got = out[:, :p.N].astype(np.float64)
    ref = p.alpha * A @ B + (p.beta * C0 if p.beta else 0.0)
    err = np.abs(got - ref)
    scale = abs(p.alpha) * (np.abs(A) @ np.abs(B)) + (abs(p.beta) * np.abs(C0) if p.beta else 0.0)
    bound = (p.K + 2) * bench.UNIT_ROUNDOFF * scale + 1e-30
    bad = ~np.isfinite(got) | (err > bound)
    rel = float(np.linalg.norm(np.where(np.isfinite(err), err, 0))) / (float(np.linalg.norm(ref)) or 1.0)
    if not bad.any() and rel <= bench.tolerance(p.K):
        return None
    if not bad.any():
        bad = err >= err.max()
    rows, cols = np.nonzero(bad.any(axis=1))[0], np.nonzero(bad.any(axis=0))[0]
    r, c = (int(x) for x in np.argwhere(bad)[0])
    (in_rows, last_rows), (in_cols, last_cols) = bench.span(rows, p.M, "row"), bench.span(cols, p.N, "column")
    return Wrong(r, c, float(ref[r, c]), float(got[r, c]),
                 f"{int(bad.sum()):,} of {bad.size:,} elements wrong, in {in_rows} and {in_cols}", last_rows or last_cols)


_ASAN_KIND = re.compile(r"ERROR: AddressSanitizer: ([\w-]+)")
_MISALIGNED = re.compile(r"misaligned address (0x[0-9a-f]+) for type '(?:const )?(?:struct )?(\w+)', which requires "
                         r"(\d+) byte alignment")
_UBSAN = re.compile(r"^(.*?):(\d+):\d+: runtime error: (.*)$", re.M)
_FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (\S+) (\S+?):(\d+)")
_OURS = re.compile(r"^gemmlab-cpu: (?!launch |the report above )(.*?)(?:; (thread .*?|block .*?), line (\d+))?$", re.M)
_WHO = re.compile(r"gemmlab-cpu: the report above is from CUDA (.*)$", re.M)


def _fault(stderr: str, path: Path, shown: str) -> Fault:
    """The runtime's or a sanitizer's report, in one sentence, with the thread, block and the learner's line."""
    text = stderr.replace(str(path), shown)
    who = _WHO.search(text)
    thread = who[1] if who else ""
    if m := _UBSAN.search(text):
        what = m[3]
        if a := _MISALIGNED.search(what):
            what = (f"misaligned address: a {a[2]} ({a[3]} bytes at once) at {a[1]}, not a multiple of {a[3]} "
                    f"bytes, as a vector access needs")
        return Fault(what, ", ".join(x for x in (thread, f"{m[1]} line {m[2]}") if x))
    if m := _ASAN_KIND.search(text):
        frames = [f for f in _FRAME.finditer(text) if f[2].endswith((".cu", ".cuh")) or shown in f[2]]
        line = f"{frames[0][2]} line {frames[0][3]}" if frames else ""
        access = re.search(r"(READ|WRITE) of size (\d+)", text)
        kind = {"heap-buffer-overflow": "outside A, B or C", "global-buffer-overflow": "outside a shared array",
                "stack-buffer-overflow": "outside a local array"}.get(m[1], m[1])
        what = f"{access[1].lower()} of {access[2]} bytes {kind}" if access else kind
        return Fault(what, ", ".join(x for x in (thread, line) if x))
    if m := _OURS.search(text):
        return Fault(m[1], f"{m[2]}, {shown} line {m[3]}" if m[2] else "")
    tail = [ln for ln in text.strip().splitlines() if ln.strip()][-3:]
    return Fault("the kernel stopped: " + " / ".join(tail), "")


_LAUNCH = re.compile(r"^gemmlab-cpu: launch (\w+)$", re.M)


def run(program: Path, spec: KernelSpec, params: Params, problem: Problem, seed: int,
        path: Path, shown: str) -> dict[str, Wrong | Fault | None]:
    """Two launches on the CPU at `problem`, threads first to last and then last to first: for each
    schedule (SCHEDULES), None where the result is right, else what is wrong. A fault ends the program:
    the schedules from it on have the fault."""
    full = spec.resolve(params)
    grid, block = spec.launch(full, problem, SLOTS)
    a, b, c = operands(problem, seed)
    p = problem
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp) / n for n in ("a.bin", "b.bin", "c.bin", "forward.bin", "reverse.bin")]
        for array, f in zip((a, b, c), files):
            array.tofile(f)
        cmd = [str(program), *map(str, grid), str(block[0]), str(spec.dynamic_smem(full)),
               str(p.M), str(p.N), str(p.K), repr(p.alpha), repr(p.beta), str(p.lda), str(p.ldb), str(p.ldc),
               *map(str, files)]
        env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS, UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1")
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env)
        except subprocess.TimeoutExpired:
            hang = Fault(f"the kernel did not finish within {RUN_TIMEOUT_S} s on the CPU: a loop that never ends?", "")
            return {s: hang for s in SCHEDULES}
        out = {}
        for schedule, f in zip(SCHEDULES, files[3:]):
            if f.exists() and f.stat().st_size == p.M * p.ldc * 4:
                out[schedule] = validate(problem, a, b, c, np.fromfile(f, dtype=np.float32).reshape(p.M, p.ldc))
            else:
                out[schedule] = _fault(done.stderr, path, shown) if done.returncode else Fault("no result", "")
    return out
