"""The chapters' exercises: the learner's copy of a kernel, and the checker (its verdict is verdict.py's;
without a GPU, cpu_check.py checks correctness on the CPU).

A kernel file marks its exercise with `// exercise: begin` and `// exercise: end` lines. The starter
is the file with those lines' contents replaced by the spec's `Exercise.starter`, so it cannot drift
from the chapter's kernel. The learner's copy lives in a workspace folder that git ignores
(`GEMMLAB_WORKSPACE`, else `notebooks/workspace/` in a checkout, where JupyterLab's file browser and
a notebook's relative link reach it, else `~/gemmlab-workspace`). `check` runs a file through the course's own pipeline: the TODOs, the
chapter's rules, NVRTC, the evidence in the SASS and resources, and on a GPU validation over awkward
shapes and a timing against the chapter's kernel and cuBLAS in one run.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from . import cpu_check, device, registry, sass
from .compile import CompileError, compile_kernel
from .files import UnusableDirectory, private_dir, write_atomic
from .progress import transient
from .spec import IllegalConfig, KernelSpec, Problem, UnsupportedShape
from .verdict import Verdict, edge_advice, shape_words, shown_path, wrong_shapes

BEGIN, END = "// exercise: begin", "// exercise: end"
# Where a GPU check validates: shapes that are not multiples of any tile, K = 1, a padded
# leading dimension, and one multiple of every tile.
SHAPES = ((509, 515, 130), (1, 1, 1), (64, 80, 1), (257, 129, 300), (512, 512, 512))
PADDED = Problem(200, 136, 72, lda=76, ldb=140, ldc=140)
# The verdict on speed: at least this share of the chapter's own kernel, timed in the same run.
PASS_SHARE = 0.90


class NoExercise(LookupError):
    pass


def spec_of(chapter: str | int) -> KernelSpec:
    spec = registry.get(str(chapter))
    if spec.exercise is None:
        raise NoExercise(f"{spec.name} has no exercise")
    return spec


def _region(text: str, name: str) -> tuple[int, int]:
    """Offsets of the text between the begin line and the end line (both lines kept; `# exercise:` lines
    in a Python file)."""
    begin, end = text.find(BEGIN[3:]), text.find(END[3:])
    if begin < 0 or end < begin:
        raise ValueError(f"{name} has no `{BEGIN}` ... `{END}` lines around its exercise")
    return text.index("\n", begin) + 1, text.rfind("\n", 0, end) + 1


def starter_text(spec: KernelSpec) -> str:
    text = spec.path.read_text()
    start, stop = _region(text, spec.path.name)
    return text[:start] + spec.exercise.starter.rstrip("\n") + "\n" + text[stop:]


def solution_region(spec: KernelSpec) -> str:
    text = spec.path.read_text()
    start, stop = _region(text, spec.path.name)
    return text[start:stop]


def workspace() -> Path:
    """Where the learner's copies live (the folder is not made here: `usable_workspace` makes it)."""
    if os.environ.get("GEMMLAB_WORKSPACE"):
        return Path(os.environ["GEMMLAB_WORKSPACE"]).expanduser()
    checkout = Path(__file__).resolve().parent.parent
    notebooks = checkout / "notebooks"
    return notebooks / "workspace" if notebooks.is_dir() else Path.home() / "gemmlab-workspace"


_FIX = "set GEMMLAB_WORKSPACE to a folder of your own"


def usable_workspace() -> Path:
    """The workspace, made if missing, refused (UnusableDirectory, with what to do) where it is a link,
    a file, another user's folder or one that others may write: a learner's copy is never written
    through a link planted there."""
    return private_dir(workspace(), "the exercise workspace", _FIX)


def learner_file(spec: KernelSpec) -> Path:
    return workspace() / getattr(spec, "learner_name", spec.path.name)


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise UnusableDirectory(f"{path} is a symbolic link; gemmlab writes only plain files in the workspace: "
                                f"remove the link, or {_FIX}")


def _attempt_path(path: Path) -> Path:
    """The first free name for an earlier attempt: NAME.attempt1.cu, NAME.attempt2.cu, ..."""
    n = 1
    while (old := path.with_name(f"{path.stem}.attempt{n}{path.suffix}")).exists() or old.is_symlink():
        n += 1
    return old


def start(chapter: str | int, fresh: bool = False) -> Path:
    """The learner's copy of the chapter's starter, made if missing. fresh=True starts over: the copy
    there is kept beside the new one as NAME.attemptN.cu (the first free N), never overwritten."""
    return start_spec(spec_of(chapter), fresh)


def start_spec(spec, fresh: bool = False) -> Path:
    """`start` for an exercise given by its spec (a KernelSpec, or plan_exercise.SPEC)."""
    usable_workspace()
    path = learner_file(spec)
    _refuse_link(path)
    if path.exists() and fresh:
        path.rename(_attempt_path(path))
    if not path.exists():
        write_atomic(path, starter_text(spec))
    return path


def attempts(spec: KernelSpec) -> list[Path]:
    """The learner's earlier attempts kept by start(fresh=True), oldest first."""
    path = learner_file(spec)
    found = path.parent.glob(f"{path.stem}.attempt*{path.suffix}")
    return sorted(found, key=lambda p: int(re.sub(r"\D", "", p.name[len(path.stem):]) or 0))


def _todos(text: str) -> list[int]:
    """Lines where a TODO is still code, not comment."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("//")[0]
        if re.search(r"\bTODO\b", code):
            out.append(n)
    return out


def _compile_lines(exc: CompileError, path: Path) -> str:
    errors = [line for line in exc.log.splitlines() if "error" in line] or exc.log.strip().splitlines()[:1]
    shown = shown_path(path)
    return ("does not compile:\n" + "\n".join(f"      {e.replace(str(path), shown)}" for e in errors[:5])
            + f"\n      (file {shown})")


def _evidence(spec: KernelSpec, mine, theirs, verdict: Verdict) -> None:
    for ev in spec.exercise.evidence:
        if ev.kind in ("opcode", "at_most"):
            ops_mine, ops_theirs = sass.hot_region(mine), sass.hot_region(theirs)
            n_mine = sum(op.startswith(ev.opcode) for op in ops_mine)
            n_theirs = sum(op.startswith(ev.opcode) for op in ops_theirs)
            ok = n_mine >= n_theirs if ev.kind == "opcode" else n_mine <= n_theirs
            verdict.add(ok, f"{n_mine} {ev.opcode} in the hot loop (the chapter's kernel has {n_theirs}): {ev.why}")
        elif ev.kind == "shared_bytes":
            dyn = spec.dynamic_smem(mine.params)
            b_mine, b_theirs = mine.resources.static_smem + dyn, theirs.resources.static_smem + dyn
            verdict.add(b_mine == b_theirs, f"{b_mine} B of shared memory per block (the chapter's kernel: "
                                            f"{b_theirs} B): {ev.why}")
        elif ev.kind == "reuse":
            r_mine, r_theirs = sass.operand_reads(mine), sass.operand_reads(theirs)
            share = lambda r: r["from_cache"] / max(r["ffma"], 1)
            verdict.add(share(r_mine) >= share(r_theirs) - 1e-9,
                        f"{share(r_mine):.2f} of the FFMA operands from the reuse cache (the chapter's kernel: "
                        f"{share(r_theirs):.2f}): {ev.why}")
        else:
            raise ValueError(f"unknown evidence kind {ev.kind!r}")


def _wrong_shapes_message(bad: list[str], good: list[str], first: str, check, summed: bool = False) -> str:
    """Which shapes are wrong, and where in C at the first of them. `summed`: right at a shape whose K is over 1
    (verdict.edge_advice)."""
    return wrong_shapes(bad, good) + f"; at {first}: {check.where}" + edge_advice(check.at_edge, summed)


def _on_gpu(spec: KernelSpec, params: dict, path: Path, verdict: Verdict) -> None:
    from . import bench
    verdict.gpu = device.facts().name
    try:
        mine = bench.Kernel(spec, params, source=path)
    except (IllegalConfig, CompileError) as exc:            # checked before; kept for a changed file
        verdict.add(False, str(exc).splitlines()[0])
        return
    bad, good, first_wrong, summed = [], [], None, False
    for shape in [Problem(*s) for s in SHAPES] + [PADDED]:
        label = f"{shape.M}x{shape.N}x{shape.K}" + (" (padded rows)" if shape.lda != shape.K else "")
        try:
            check = mine.validate(shape, seed=1)
        except UnsupportedShape as exc:
            verdict.add(True, f"{label}: refused as the chapter's kernel refuses it ({exc.rule})")
            continue
        except device.cuda_errors() as exc:     # the context is lost: nothing more can run in this process
            verdict.add(False, f"your kernel crashed at {label}: {device.cuda_error_words(exc)}. "
                               f"`compute-sanitizer python -m gemmlab check {spec.name[:2]} --file {path}` "
                               f"names the line")
            return
        (good if check.ok else bad).append(label)
        summed = summed or (check.ok and shape.K > 1)
        first_wrong = first_wrong or (None if check.ok else (label, check))
    if not verdict.add(not bad, _wrong_shapes_message(bad, good, *first_wrong, summed) if bad else
                       f"correct at {len(good)} shapes (primes, K = 1, padded rows, a multiple of every tile)"):
        return
    timed = Problem(*spec.exercise.timing_shape)
    at = shape_words(timed)
    ops = bench.Operands.random(timed)
    mine(ops)                                  # right at the timed size too, before it is timed
    device.cupy().cuda.runtime.deviceSynchronize()
    check = bench.check(ops)
    if not verdict.add(check.ok, f"at {at}: {check}"):
        return
    theirs = bench.Kernel(spec, params)
    t_mine, t_theirs, t_cublas = bench.time_interleaved(
        [lambda: mine(ops), lambda: theirs(ops), lambda: bench.cublas_sgemm(ops)], reps=10, flush=True)
    flops = timed.flops
    verdict.tflops, verdict.solution_tflops, verdict.cublas_tflops = (
        flops / (t.median_ms * 1e-3) / 1e12 for t in (t_mine, t_theirs, t_cublas))
    share = verdict.tflops / verdict.solution_tflops
    verdict.add(share >= PASS_SHARE,
                f"{verdict.tflops:.1f} TFLOP/s at {at}: {share:.0%} of the chapter's kernel "
                f"({verdict.solution_tflops:.1f}) and {verdict.tflops / verdict.cublas_tflops:.0%} of cuBLAS "
                f"({verdict.cublas_tflops:.1f}), timed in the same run; a pass needs {PASS_SHARE:.0%} of the "
                f"chapter's kernel")


# A learner's kernel may hang (a spin-wait that never ends) or fault (an out-of-bounds access
# poisons the CUDA context for the rest of the process): the GPU half of a check runs in a child
# process with a time limit, so neither takes the notebook or the command line down with it.
GPU_TIMEOUT_S = 300


def _gpu_in_child(spec: KernelSpec, path: Path, verdict: Verdict) -> None:
    import json
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "gemmlab", "check", spec.name[:2], "--file", str(path), "--gpu-part"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=GPU_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        verdict.gpu = device.facts().name
        verdict.add(False, f"your kernel did not finish within {GPU_TIMEOUT_S} s: a loop that never ends, or a "
                           f"spin-wait for a flag nobody sets?")
        return
    line = next((ln for ln in reversed(done.stdout.splitlines()) if ln.startswith("{")), None)
    if line is None:
        said = (done.stderr or done.stdout).strip().splitlines()
        tail = "\n      ".join([ln for ln in said if re.search(r"cudaError|CUDA_ERROR", ln)][-2:] or said[-3:])
        verdict.gpu = device.facts().name
        verdict.add(False, f"the GPU check crashed (an out-of-bounds access or a misaligned vector load?):\n"
                           f"      {tail}\n      `compute-sanitizer python -m gemmlab check {spec.name[:2]} --file "
                           f"{path}` names the line")
        return
    part = json.loads(line)
    verdict.gpu = part["gpu"]
    verdict.tflops, verdict.solution_tflops, verdict.cublas_tflops = (
        part["tflops"], part["solution_tflops"], part["cublas_tflops"])
    verdict.lines += [(ok, text) for ok, text in part["lines"]]


def gpu_part(chapter: str | int, file: str | Path) -> dict:
    """The GPU half of a check, for the child process: validation and timing of `file`."""
    spec = spec_of(chapter)
    verdict = Verdict(spec.name, str(file))
    try:
        _on_gpu(spec, spec.resolve(spec.exercise.params), Path(file), verdict)
    except device.cuda_errors() as exc:          # at the timed size, after every small shape was right
        verdict.add(False, f"your kernel crashed at {shape_words(Problem(*spec.exercise.timing_shape))}: "
                           f"{device.cuda_error_words(exc)}")
    return {"gpu": verdict.gpu, "lines": verdict.lines, "tflops": verdict.tflops,
            "solution_tflops": verdict.solution_tflops, "cublas_tflops": verdict.cublas_tflops}


def check(chapter: str | int, file: str | Path | None = None, which: str = "learner",
          gpu: bool | None = None, cpu: bool = True) -> Verdict:
    """Check the learner's file (or `file`, or the untouched starter with which="starter", or the
    chapter's own kernel with which="solution"). gpu=None: on a GPU when there is one; without one,
    its results are checked on the CPU (cpu=False: the static checks only, and it is not verified)."""
    spec = spec_of(chapter)
    verdict = start_verdict(spec, file, which)
    if verdict.lines:
        return verdict
    path = Path(verdict.file)
    text = path.read_text()
    todos = _todos(text)
    if not verdict.add(not todos, f"TODO still in the code at line(s) {', '.join(map(str, todos))}" if todos
                       else "no TODO left in the code"):
        return verdict
    params = spec.exercise.params
    try:
        full = spec.resolve(params)
    except IllegalConfig as exc:
        verdict.add(False, f"the exercise's configuration breaks a rule: {exc}")
        return verdict
    if gpu is None:
        gpu = device.available()
    # compiling, reading the SASS and running take seconds: one bar from the first step, gone with the verdict
    steps, where = (3, "on the GPU") if gpu else (2 + cpu_check.steps(spec, full), "on the CPU") if cpu else (2, "")
    with transient(steps, f"checking {where}".strip()) as bar:
        _compiled_and_run(spec, full, path, verdict, gpu, cpu, bar)
    return verdict


def _compiled_and_run(spec: KernelSpec, full: dict, path: Path, verdict: Verdict, gpu: bool, cpu: bool, bar) -> None:
    """The checks past the file's text: it compiles, its SASS holds the chapter's change, and its results (and on
    a GPU, its speed)."""
    try:
        mine = compile_kernel(spec, full, source=path)
    except CompileError as exc:
        verdict.add(False, _compile_lines(exc, path))
        return
    bar.update()
    theirs = compile_kernel(spec, full)
    r = mine.resources
    verdict.add(True, f"compiles for {mine.arch}: {r.registers} registers, {r.static_smem + spec.dynamic_smem(full)} B "
                      f"shared memory, {'no spills' if not r.spills else f'{r.spill_stores} B spilled'}")
    if r.spills and not theirs.resources.spills:
        verdict.add(False, f"spills {r.spill_stores} B of registers to local memory; the chapter's kernel spills none")
    _evidence(spec, mine, theirs, verdict)
    bar.update()
    if gpu:
        _gpu_in_child(spec, path, verdict)
        bar.update()
        return
    why = device.why_unavailable().split(";")[0] if not device.available() else "not asked for"
    if cpu:
        cpu_check.on_cpu(spec, full, path, verdict, bar)
    else:
        verdict.not_run.append("correctness: not asked for")
    verdict.not_run.append(f"speed: not measured, it needs a GPU ({why})")


def start_verdict(spec, file: str | Path | None, which: str) -> Verdict:
    """The verdict on the file to check (the learner's, `file`, the starter or the solution: see `check`),
    with a failed line where there is no such file."""
    if which == "solution":
        path = spec.path
    elif which == "starter":
        folder = private_dir(usable_workspace() / ".starters", "the exercise workspace", _FIX)
        path = folder / getattr(spec, "learner_name", spec.path.name)
        write_atomic(path, starter_text(spec))
    else:
        path = Path(file) if file else learner_file(spec)
    verdict = Verdict(spec.name, str(path))
    why = unreadable(path)
    if not path.exists():
        verdict.add(False, f"no file at {shown_path(path)}: gl.exercise(\"{spec.name[:2]}\") (or `python -m gemmlab check "
                           f"{spec.name[:2]} --start`) makes your copy of the starter")
    elif why:
        verdict.add(False, f"{why}: check your copy of the starter, a text file (gl.exercise(\"{spec.name[:2]}\") "
                           f"makes it)")
    return verdict


def unreadable(path: Path) -> str:
    """Why `path` cannot be checked as a learner's source ('' where it can): missing, a folder or another
    thing that is not a plain file, not readable, or not text (a binary file)."""
    shown = shown_path(path)
    if not path.exists():
        return f"no file at {shown}"
    if path.is_dir():
        return f"{shown} is a folder, not a file"
    if not path.is_file():
        return f"{shown} is not a plain file"
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"{shown} cannot be read ({exc.strerror or exc})"
    try:
        data.decode()
    except UnicodeDecodeError:
        return f"{shown} is not a text file (it is not UTF-8)"
    if b"\0" in data:
        return f"{shown} is not a text file (it holds NUL bytes)"
    return ""


def chapters() -> list[KernelSpec]:
    """The kernel chapters' exercises (chapter 14's, in Python, is gemmlab.plan_exercise's)."""
    return [spec for spec in registry.KERNELS.values() if spec.exercise is not None]
