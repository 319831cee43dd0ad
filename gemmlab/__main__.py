"""gemmlab's command line: info, compile, sass, plan, fit, bench, run, sweep, tune, check, record."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import cli_args, device, registry
from .cli_args import UsageError
from .spec import BadProblem, IllegalConfig, UnsupportedShape


def cmd_archs(args) -> int:
    """Each kernel compiled for every architecture gemmlab knows, or the rule that refuses it: at the
    defaults, the shipped table where it holds for the code (support.py); with -D, compiled now;
    with --write, the whole table compiled now and written where it ships."""
    from . import support, toolchain
    if args.write:
        if args.kernel or args.arch or args.define:
            raise UsageError("--write compiles the whole table at the defaults: give no kernel, --arch or -D with it")
        path = support.write()
        rows, note = support.table().rows, f"wrote {path}"
    elif args.define:              # not the defaults: nothing precomputed holds
        if not args.kernel:
            raise UsageError("-D sets a tunable of one kernel: name it (for example `archs 05 -D BM=64`)")
        defines = cli_args.defines(args.define)
        for kernel in args.kernel:     # a configuration no architecture may run is a mistake: IllegalConfig, exit 2
            registry.get(kernel).resolve(defines)
        rows = support.matrix(args.kernel, args.arch or None, defines, progress=True)
        note = f"Compiled now with NVRTC {toolchain.nvrtc_build()}."
    else:
        found = support.table(args.kernel or None, args.arch or None, progress=True)
        rows, note = found.rows, found.note()
    names = [c.arch for c in rows[0]]
    width = max(24, *(len(c.text) + 2 for row in rows for c in row))
    print(f"{'kernel':<20}" + "".join(f"{a:<{width}}" for a in names))
    for row in rows:
        print(f"{row[0].kernel:<20}" + "".join(f"{c.text:<{width}}" for c in row))
    for detail in dict.fromkeys(c.detail for row in rows for c in row if not c.runs):
        print(f"  {detail}")
    print(note)
    return 0


def cmd_info(args) -> int:
    from . import toolchain
    facts = device.facts()
    if facts is None:
        print(f"GPU: no GPU ({device.why_unavailable()})")
    else:
        print(f"GPU: {facts.name}, {facts.arch}, {facts.sm_count} SMs at {facts.clock_mhz:.0f} MHz, "
              f"FP32 peak {facts.peak_fp32_tflops:.1f} TFLOP/s, DRAM {facts.dram_gbs:.0f} GB/s (attributes), "
              f"L2 {facts.l2_bytes / 2**20:.0f} MiB, driver CUDA {facts.driver_cuda}")
    try:
        print(f"NVRTC: {toolchain.nvrtc_build()} ({toolchain.nvrtc_location()})")
        print(f"nvdisasm: {toolchain.nvdisasm_version()} ({toolchain.nvdisasm()})")
    except toolchain.ToolchainMissing as exc:
        print(f"toolchain: {exc}")
        return 1
    try:
        import cupy
        print(f"CuPy: {cupy.__version__}")
    except Exception:
        print("CuPy: not installed")
    print("kernels: " + ", ".join(registry.KERNELS))
    return 0


def cmd_compile(args) -> int:
    from .compile import CompileError, compile_kernel
    try:
        print(compile_kernel(args.kernel, cli_args.defines(args.define), args.arch).report())
    except (IllegalConfig, CompileError, registry.UnknownKernel) as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


def cmd_sass(args) -> int:
    from . import sass
    from .compile import compile_kernel
    build = compile_kernel(args.kernel, cli_args.defines(args.define), args.arch)
    print(sass.disassemble(build) if args.full else sass.summary(build))
    return 0


def cmd_plan(args) -> int:
    args.size = (args.M, args.N, args.K)
    if args.kernel == "":
        raise UsageError("--kernel '' names no kernel: give a kernel name or chapter number, or leave --kernel out "
                         "for the dispatcher's plan")
    if args.kernel or args.define:               # one kernel's launch, as the final chapter shows it
        from . import launch
        if args.ld:
            raise UsageError("--ld goes with the dispatcher's plan (no --kernel): a kernel's launch is for packed rows")
        print(launch.launch(*args.size, kernel=args.kernel, params=cli_args.defines(args.define)))
        return 0
    from .library import dispatch
    cli_args.problem_of(args.size, args.ld)                 # sizes and strides checked as a user's mistake first
    print(dispatch.plan(*args.size, *(args.ld or ())))
    return 0


def cmd_fit(args) -> int:
    """Fit gemmlab.matmul's model to the newest record and freeze it into gemmlab/fitted/."""
    from . import compile as compiler, records
    from .library import time_model
    try:
        from .research import fit
    except ImportError:                     # a wheel: the research part stays in the repository
        print("fit is a research command: run it from a checkout of the course's repository", file=sys.stderr)
        return 2
    record = records.latest()
    # where it writes, and the compile cache it fills, checked before minutes of work
    out = (cli_args.output_file(args.out, "--out") if args.out is not None else
           cli_args.output_file(str(time_model.fitted_path(record.device["name"])), "the fitted model's file"))
    compiler.cache_dir()
    fitted = fit.fit(record)
    path = fit.write(fitted, out)
    f = fitted["fit"]
    print(f"fitted {len(fitted['candidates'])} configurations to {f['rows']} timings of {fitted['device']['name']} "
          f"({fitted['record']['date']}): median error {f['median_error']:.1%}, worst {f['worst_error']:.1%}; "
          f"launch {fitted['launch_us']} us, {fitted['chain_us']} us per piece of a split tile's chain, a tile on the "
          f"checked copy path x{1 + fitted['ragged']:.2f}; wrote {path}")
    return 0


def cmd_bench(args) -> int:
    from . import bench
    size = tuple(args.size) if args.size else (4096, 4096, 4096)
    rows = []
    for kernel in args.kernel:
        try:
            if kernel == "matmul":               # the library call, with the plan it makes for this shape
                from . import library
                m = library.bench_matmul(size, reps=args.reps)
            else:
                m = bench.bench(kernel, cli_args.defines(args.define), size, reps=args.reps)
        except (IllegalConfig, UnsupportedShape, bench.ValidationFailed) as exc:
            print(exc, file=sys.stderr)
            return 2
        rows.append(m)
    print(f"{'kernel':<18} {'config':<24} {'size':<16} {'ms':>8} {'spread':>7} {'GFLOP/s':>9} "
          f"{'cuBLAS':>9} {'ratio':>7}  check")
    for m in rows:
        config = m.params["plan"] if m.kernel == "matmul" else registry.get(m.kernel).config_label(m.params)
        print(f"{m.kernel:<18} {config:<24} {f'{m.M}x{m.N}x{m.K}':<16} "
              f"{m.kernel_time.median_ms:>8.3f} {m.kernel_time.spread:>7.1%} {m.gflops:>9.0f} "
              f"{m.cublas_gflops:>9.0f} {m.ratio:>7.1%}  {m.check}")
    print(f"device: {device.facts().name}; cuBLAS FP32 timed interleaved in the same run")
    return 0


def cmd_run(args) -> int:
    """One launch on fresh random inputs, then validation: what a profiler wraps."""
    from . import bench
    ops = bench.Operands.random(cli_args.problem_of(args.size or (2048, 2048, 2048), args.ld))
    if args.kernel == "cublas":   # the baseline, for profiling it the same way
        bench.cublas_sgemm(ops)
        label = "cuBLAS FP32"
    else:
        kernel = bench.Kernel(args.kernel, cli_args.defines(args.define))
        kernel(ops)
        label = f"{kernel.spec.name} [{kernel.spec.config_label(kernel.params)}]"
    check = bench.check(ops)
    print(f"{label}: {check}")
    return 0 if check.ok else 1


def cmd_sweep(args) -> int:
    from tqdm.auto import tqdm
    from . import bench
    spec = registry.get(args.kernel)
    size = tuple(args.size) if args.size else (4096, 4096, 4096)
    rows = [bench.bench(spec, cfg, size) for cfg in tqdm(spec.explorer_configs(), desc=spec.name)]
    rows.sort(key=lambda m: -m.gflops)
    for m in rows:
        print(f"{spec.config_label(m.params):<24} {m.gflops:>9.0f} GFLOP/s {m.ratio:>7.1%} of cuBLAS "
              f"({m.cublas_gflops:.0f})  spread {m.kernel_time.spread:.1%}  err {m.check.rel_err:.1e}")
    return 0


def cmd_tune_matmul(shapes) -> int:
    """gemmlab.matmul's first-use tuning, ahead of time (library/first_use.py): of each shape's class on a GPU with no
    fitted model; on the fitted GPU, of each shape whose best options the model cannot tell apart."""
    from . import library
    from .library import dispatch
    for shape in shapes:
        model_plan, plan = dispatch.plan(*shape), library.ran(*shape)
        how = "the model's plan" if plan is model_plan else plan.basis.rsplit("; ", 1)[-1]
        print(f"{'x'.join(map(str, shape))}: {plan.label} ({how})")
    return 0


def cmd_tune(args) -> int:
    from . import tune
    if args.matmul:
        return cmd_tune_matmul(args.matmul)
    size, only = args.plan
    search = tune.tune(args.kernel, size, only=only)
    spec = registry.get(args.kernel)
    for cfg, why in search.refused:
        print(f"refused {spec.config_label(cfg)}: {why}")
    if not search.rows:
        print("no configuration could run this shape", file=sys.stderr)
        return 1
    for row in sorted(search.rows, key=lambda r: -r["gflops"])[:args.top]:
        print(f"{spec.config_label(row['params']):<64} {row['gflops']:>9.0f} GFLOP/s {row['ratio']:>7.1%} of cuBLAS "
              f"({row['cublas_gflops']:.0f})  spread {row['spread']:.1%}")
    best = search.best
    print(f"best of {len(search.rows)} for {spec.name} at {'x'.join(map(str, size))}: "
          f"{spec.config_label(best['params'])}: {best['gflops']:.0f} GFLOP/s, {best['ratio']:.1%} of cuBLAS "
          f"(same run); remembered in {tune.store_path()}")
    return 0


def cmd_check(args) -> int:
    from . import exercises
    from .library import exercise as plan_exercise
    python = plan_exercise.is_it(args.kernel)           # chapter 14's exercise is Python
    try:
        if not python:
            exercises.spec_of(args.kernel)               # an unknown chapter is said first
        if args.file is not None and not args.gpu_part:  # the file named is checked before anything runs
            if args.start or args.fresh or args.starter or args.solution:
                raise UsageError("--file names your file to check: leave out --start, --fresh, --starter and "
                                 "--solution with it")
            why = exercises.unreadable(Path(args.file)) if args.file else "--file '' names no file"
            if why:
                raise UsageError(f"{why}: give --file the path of your copy of the exercise (`python -m gemmlab "
                                 f"check {args.kernel} --start` makes one and prints its path)")
        elif not (args.solution or args.gpu_part):       # the workspace, said to be unusable where it is
            place = exercises.workspace()
            if place.exists() and not place.is_dir():
                exercises.usable_workspace()             # UnusableDirectory: which folder, what to set
        if args.start or args.fresh:
            spec = plan_exercise.SPEC if python else exercises.spec_of(args.kernel)
            kept = exercises.attempts(spec)
            path = exercises.start_spec(spec, fresh=args.fresh)
            print(f"your copy of the starter: {path}")
            if args.fresh and exercises.attempts(spec) != kept:
                print(f"your earlier copy is kept beside it: {exercises.attempts(spec)[-1]}")
            return 0
        if args.gpu_part:                # the child process of a check (exercises._gpu_in_child)
            import json
            import os
            print(json.dumps(exercises.gpu_part(args.kernel, args.file)), flush=True)
            os._exit(0)                  # a faulted CUDA context can make the interpreter's exit fail noisily
        which = "starter" if args.starter else "solution" if args.solution else "learner"
        verdict = (plan_exercise.check(args.file, which) if python else
                   exercises.check(args.kernel, args.file, which))
    except (exercises.NoExercise, registry.UnknownKernel) as exc:
        print(exc, file=sys.stderr)
        return 2
    print(verdict)
    return verdict.exit_status


def cmd_record(args) -> int:
    try:
        from .research import measure_all as recorder
    except ImportError:                     # a wheel: the research part stays in the repository
        print("record is a research command: run it from a checkout of the course's repository", file=sys.stderr)
        return 2
    path = recorder.record(args.kernel or None, ladder=args.ladder, final=args.final, profiles=args.profiles,
                           memory=args.memory, matmul=args.matmul, matmul_training=args.matmul_training,
                           matmul_refresh=args.matmul_refresh, only=args.only_sets or None)
    print(f"wrote {path}")
    return 0


# The commands that launch kernels; elsewhere they are refused with the reason.
ON_GPU = ("bench", "run", "sweep", "tune", "record")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemmlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="the GPU (or 'no GPU') and toolchain versions").set_defaults(fn=cmd_info)
    p = sub.add_parser("archs", help="which kernels compile for which GPU architecture, and the rules that refuse")
    p.add_argument("kernel", nargs="*", help="kernels (default: all)")
    p.add_argument("--arch", action="append", type=cli_args.arch_name,
                   help="an architecture (default: all gemmlab knows)")
    p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE", help="set a tunable (one kernel)")
    p.add_argument("--write", action="store_true",
                   help="compile the whole table at the defaults and write it where it ships "
                        "(gemmlab/precomputed/support.json, what chapter 00 shows)")
    p.set_defaults(fn=cmd_archs)
    for name, fn, help_ in (("compile", cmd_compile, "compile and print the resource report"),
                            ("sass", cmd_sass, "instruction mix (or --full disassembly)")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("kernel", help="kernel name or chapter number: " + ", ".join(registry.KERNELS))
        p.add_argument("--arch", default="sm_90", type=cli_args.arch_name)
        p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE", help="set a tunable")
        if name == "sass":
            p.add_argument("--full", action="store_true")
        p.set_defaults(fn=fn)
    p = sub.add_parser("plan", help="which kernel, configuration, grid and split gemmlab.matmul runs for a shape, "
                                    "and why; or, with --kernel, one kernel's launch in numbers (no GPU needed)")
    # three positionals, not one of nargs=3: argparse cannot print a tuple metavar for a positional (help and
    # its "required" error both failed on it)
    for dim, rows in (("M", "rows of A and C"), ("N", "columns of B and C"), ("K", "columns of A, rows of B")):
        p.add_argument(dim, type=cli_args.positive, help=rows)
    p.add_argument("--ld", nargs=3, type=cli_args.positive, metavar=("LDA", "LDB", "LDC"),
                   help="row strides of A, B and C in floats (default: the rows are packed)")
    p.add_argument("--kernel", help="one kernel's launch instead: a kernel name or chapter number")
    p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE",
                   help="set a tunable of that kernel (the final kernel's without --kernel)")
    p.set_defaults(fn=cmd_plan)
    p = sub.add_parser("fit", help="fit gemmlab.matmul's model to the newest record, freeze it into gemmlab/fitted/ "
                                   "(no GPU needed)")
    p.add_argument("--out", help="where to write it (default: gemmlab/fitted/<GPU>.json)")
    p.set_defaults(fn=cmd_fit)
    p = sub.add_parser("bench", help="validate and time kernels against cuBLAS (GPU); 'matmul' times gemmlab.matmul")
    p.add_argument("kernel", nargs="+")
    p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE")
    p.add_argument("--size", nargs=3, type=cli_args.positive, metavar=("M", "N", "K"))
    p.add_argument("--reps", type=cli_args.positive, default=None)
    p.set_defaults(fn=cmd_bench)
    p = sub.add_parser("run", help="launch once and validate (for profilers such as ncu) (GPU)")
    p.add_argument("kernel", help="a kernel, or 'cublas' for the baseline")
    p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE")
    p.add_argument("--size", nargs=3, type=cli_args.positive, metavar=("M", "N", "K"))
    p.add_argument("--ld", nargs=3, type=cli_args.positive, metavar=("LDA", "LDB", "LDC"),
                   help="row strides of A, B and C in floats (default: the rows are packed)")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("sweep", help="every configuration the sliders offer, at one size (GPU)")
    p.add_argument("kernel")
    p.add_argument("--size", nargs=3, type=cli_args.positive, metavar=("M", "N", "K"))
    p.set_defaults(fn=cmd_sweep)
    p = sub.add_parser("tune", help="sweep, validate, time and remember the best configuration (GPU); with --matmul, "
                                    "what gemmlab.matmul's first calls of those shapes would tune, ahead of time")
    p.add_argument("kernel", nargs="?", help="a kernel name or chapter number (not with --matmul)")
    p.add_argument("--matmul", nargs="+", type=cli_args.shape, metavar="MxNxK",
                   help="shapes whose classes gemmlab.matmul tunes now (what a first call would do)")
    p.add_argument("--size", nargs=3, type=cli_args.positive, metavar=("M", "N", "K"))
    p.add_argument("--only", action="append", metavar="NAME=V1,V2",
                   help="search only these values of a tunable (repeatable)")
    p.add_argument("--top", type=cli_args.positive, default=15, help="how many of the best to list")
    p.add_argument("--sliders", action="store_true", help="only the values the chapter's sliders offer")
    p.add_argument("--max", type=cli_args.positive, default=cli_args.TUNE_MAX,
                   help=f"refuse a search of more configurations than this (default {cli_args.TUNE_MAX}, about 5 minutes)")
    p.set_defaults(fn=cmd_tune)
    p = sub.add_parser("check", help="check a chapter's exercise: static checks anywhere, correctness and speed on a GPU")
    p.add_argument("kernel", help="chapter number or kernel name")
    p.add_argument("--file", help="the file to check (default: your copy in the workspace)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--starter", action="store_true", help="check the untouched starter (it must fail)")
    which.add_argument("--solution", action="store_true", help="check the chapter's own kernel (it must pass)")
    which.add_argument("--start", action="store_true", help="make your copy of the starter, print its path")
    which.add_argument("--fresh", action="store_true",
                       help="start over: a new copy of the starter, your old copy kept beside it as NAME.attemptN.cu")
    which.add_argument("--gpu-part", action="store_true", help=argparse.SUPPRESS)   # the checker's child process
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("record", help="measure every kernel over the explorer configurations (GPU)")
    p.add_argument("kernel", nargs="*", help="only these kernels (default: everything)")
    p.add_argument("--ladder", action="store_true", help="re-measure the ladder over sizes and shapes")
    p.add_argument("--final", action="store_true", help="re-measure the final kernel's per-shape search and table")
    p.add_argument("--profiles", action="store_true",
                   help="re-profile every kernel (or those named) with Nsight Compute")
    p.add_argument("--memory", action="store_true", help="re-measure the memory latencies and bandwidths")
    p.add_argument("--matmul-training", action="store_const", const=True, default=False,
                   help="time the plan's best few options at its training shapes (then `fit` refits the model)")
    p.add_argument("--matmul-training-new", action="store_const", const="new", dest="matmul_training",
                   help="the same, at the training shapes where no earlier round has timed the plan's "
                        "choice (a new shape, or a refit's new choice)")
    p.add_argument("--matmul-refresh", action="store_true",
                   help="time anew the training launches of kernels whose code changed since (then `fit`)")
    p.add_argument("--matmul", action="store_true", help="gemmlab.matmul against cuBLAS over issue 17's shape suite")
    p.add_argument("--only", action="append", metavar="NAME=V1,V2",
                   help="with kernels: time anew only their configurations with these values (repeatable)")
    p.set_defaults(fn=cmd_record)
    args = parser.parse_args(argv)
    from . import bench, records
    from .library import time_model
    from .compile import CompileError
    from .files import UnusableDirectory
    try:
        if args.command == "tune" and (args.matmul is None) == (args.kernel is None):
            raise UsageError("tune takes a kernel, or --matmul with shapes (MxNxK), not both")
        if args.command == "tune" and args.kernel is not None:
            args.plan = cli_args.tune_plan(args)       # refused before asking for a GPU
        if args.command == "record":
            args.only_sets = cli_args.record_only(args)
        if args.command in ON_GPU:             # a mistake in the kernels or -D said first, GPU or not
            defines = cli_args.defines(getattr(args, "define", None))
            named = args.kernel if isinstance(args.kernel, list) else [args.kernel] if args.kernel else []
            for name in named:
                if name not in ("matmul", "cublas"):   # bench's library call, run's baseline
                    registry.get(name).resolve(defines)
        if args.command in ON_GPU and not device.available():
            print(f"{args.command} needs a GPU: {device.why_unavailable()}", file=sys.stderr)
            return 2
        return args.fn(args)
    except (UsageError, BadProblem, IllegalConfig, UnsupportedShape, registry.UnknownKernel, CompileError,
            UnusableDirectory, bench.TooLarge, records.NotRecorded, records.StaleRecord, time_model.NotFitted) as exc:
        # a mistake in the input, not in gemmlab: its message, and how to fix it, without a traceback
        print(str(exc).splitlines()[0] if not isinstance(exc, CompileError) else exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:          # Ctrl-C: one line, no traceback (compile workers are stopped where raised)
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:            # the reader of the output stopped early (`| head`): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # Python's own flush at exit stays quiet
        return 0


if __name__ == "__main__":
    sys.exit(main())
