"""An exercise's correctness checked on the CPU (gemmlab/cpu), where there is no GPU: the learner's file
built for the CPU runner and run at small awkward shapes with its threads in two orders between
barriers, then at the legal configuration furthest from the exercise's."""
from __future__ import annotations

from pathlib import Path

from .spec import KernelSpec, Problem, UnsupportedShape
from .verdict import Verdict, edge_advice, shape_words, shown_path, wrong_shapes


def cpu_shapes(spec: KernelSpec, params: dict) -> list[Problem]:
    """Primes, K = 1, padded rows with alpha and beta, and a multiple of every tile: small enough for the
    CPU, large enough for several blocks and ragged edges."""
    rows, cols = spec.tile(params)
    k_tile = spec.k_tile(params) if spec.k_tile else 8
    return [Problem(131, 137, 263), Problem(1, 1, 1), Problem(64, 80, 1),
            Problem(200, 136, 72, lda=76, ldb=140, ldc=140, alpha=1.5, beta=0.5),
            Problem(2 * rows, 2 * cols, 2 * k_tile)]


def runnable(spec: KernelSpec, params: dict, p: Problem) -> tuple[Problem | None, str]:
    """The shape, or with its rows padded to multiples of 4 floats where the kernel needs 16-byte rows
    (as the chapter's kernel does); None and the rule where it refuses even that."""
    label = shape_words(p) + (f" (rows {p.lda}, {p.ldb} and {p.ldc} floats apart, alpha {p.alpha:g}, beta "
                               f"{p.beta:g})" if (p.lda, p.ldb, p.ldc) != (p.K, p.N, p.N) else "")
    try:
        spec.check_shape(params, p)
        return p, label
    except UnsupportedShape:
        padded = Problem(p.M, p.N, p.K, *(-(-x // 4) * 4 for x in (p.lda, p.ldb, p.ldc)), p.alpha, p.beta)
        try:
            spec.check_shape(params, padded)
            return padded, f"{label} (rows padded to 16 bytes)"
        except UnsupportedShape as exc:
            return None, f"{label}: refused as the chapter's kernel refuses it ({exc.rule})"


_ORDER = {"forward": "first to last", "reverse": "last to first"}


def steps(spec: KernelSpec, params: dict) -> int:
    """The steps of `on_cpu`, for a progress bar: the build, then each shape and the other configuration."""
    return len(cpu_shapes(spec, params)) + 2


def on_cpu(spec: KernelSpec, params: dict, path: Path, verdict: Verdict, bar=None) -> None:
    """`bar`: the caller's progress bar, moved a step at a time (`steps`); without one, a bar of its own, gone
    when the verdict comes."""
    shapes = cpu_shapes(spec, params)
    if bar is not None:
        _on_cpu_steps(spec, params, path, verdict, shapes, bar)
        return
    from .progress import transient
    with transient(steps(spec, params), "checking on the CPU") as bar:
        _on_cpu_steps(spec, params, path, verdict, shapes, bar)


def _on_cpu_steps(spec: KernelSpec, params: dict, path: Path, verdict: Verdict, shapes, bar) -> None:
    from . import cpu
    try:
        program = cpu.build(spec, params, path)
    except cpu.NoCompiler as exc:
        verdict.not_run.append(f"correctness: {exc}")
        return
    except cpu.BuildError as exc:   # NVRTC took it: what the CPU runner lacks is no mistake of the learner's
        verdict.not_run.append("correctness: the CPU runner, which knows only the part of CUDA the course uses, "
                               "could not build it:\n" + "\n".join(f"      {ln}" for ln in str(exc).splitlines()))
        return
    bar.update()
    if not cpu.sanitizers(tuple(cpu.compiler())):
        verdict.not_run.append("accesses outside A, B, C or a shared array, and misaligned vectors: this C++ "
                               "compiler has no AddressSanitizer (g++ or clang++ have)")
    shown = shown_path(path)
    good, bad, first = [], [], None
    summed = False                  # right at a shape whose K is over 1: one that adds products, not copies one
    for shape in shapes:
        bar.update()
        p, label = runnable(spec, params, shape)
        if p is None:
            verdict.add(True, label)
            continue
        outcome = cpu.run(program, spec, params, p, 1, path, shown)
        fault = next(((s, r) for s, r in outcome.items() if isinstance(r, cpu.Fault)), None)
        if fault:
            verdict.add(False, f"at {label}, threads run {_ORDER[fault[0]]}: {fault[1]}")
            verdict.on_cpu = True
            return
        wrong = {s: r for s, r in outcome.items() if r is not None}
        (bad if wrong else good).append(label)
        summed = summed or (not wrong and p.K > 1)
        if wrong and first is None:
            first = (label, wrong)
    verdict.on_cpu = True
    if not bad:
        verdict.add(True, f"correct on the CPU at {_count(len(good), 'shape')} ({', '.join(good)}), its threads "
                          f"run first to last and last to first between barriers")
        _other_configuration(spec, params, path, verdict)
        bar.update()
        return
    label, wrong = first
    schedule, result = next(iter(wrong.items()))
    text = wrong_shapes(bad, good, " on the CPU") + f"; at {label}: {result}"
    if len(wrong) < len(cpu.SCHEDULES):
        text += (f". Right when threads run {_ORDER[next(s for s in cpu.SCHEDULES if s not in wrong)]}, wrong "
                 f"{_ORDER[schedule]}: threads read what others have not written yet, or overwrite what others "
                 f"still read: a barrier missing or misplaced?")
    else:
        text += edge_advice(result.at_edge, summed)
    verdict.add(False, text)


def _other_configuration(spec: KernelSpec, params: dict, path: Path, verdict: Verdict) -> None:
    """The same file at the legal configuration that differs most from the exercise's (larger tunables first),
    at the first shape it takes: a number written for the exercise's tunables (33 for TILE + 1) is wrong there."""
    from . import cpu
    # what the exercise's change needs stays as it is: its own settings, and every switch (a tunable of 0 or
    # 1 turns a technique on or off, and off the exercise's code may not run at all)
    fixed = {**{p.name: params[p.name] for p in spec.params if set(p.offered) <= {0, 1}}, **spec.exercise.params}
    others = [{**c, **fixed} for c in spec.extreme_configs()]
    others = sorted((spec.resolve(c) for c in others if spec.is_legal(c) and spec.resolve(c) != params),
                    key=lambda c: (-sum(c[k] != v for k, v in params.items()), -sum(c.values())))   # larger tiles first
    if not others:
        return
    other = others[0]
    changed = " ".join(f"{k}={v}" for k, v in other.items() if v != params[k])
    try:
        program = cpu.build(spec, other, path)
    except cpu.BuildError:
        return                      # the exercise's own build passed; NVRTC judges what compiles
    for shape in cpu_shapes(spec, other):
        p, label = runnable(spec, other, shape)
        if p is None:
            continue
        outcome = cpu.run(program, spec, other, p, 1, path, shown_path(path))
        wrong = next((r for r in outcome.values() if r is not None), None)
        verdict.add(wrong is None, f"correct at {changed} too ({label})" if wrong is None else
                    f"wrong at {changed} ({label}), right at the exercise's tunables: {wrong}. A number that "
                    f"holds only for the exercise's tunables?")
        return


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")
