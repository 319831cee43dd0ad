"""gemmlab.matmul's training and its suite: the measurements behind its model and its table (`record
--matmul-training`, `record --matmul`), at the shapes of research/training_shapes.py."""
from __future__ import annotations

import json
from pathlib import Path

from .. import bench, device, files, library, records, registry
from ..compile_aside import precompile
from ..library import dispatch, time_model
from ..spec import Problem, UnsupportedShape
# the suites and draws, named here too: the record and the .ci scripts take them from the measurements' module
from .training_shapes import (CLASS_SUITE, CLASS_TRAINING_SHAPES, DISPATCH_TRAINING_SHAPES, DISPATCH_TRIES,
                              DRAWN_CLASSES, FEW_COLUMNS_TRAINING_SHAPES, HEATMAP_K, HEATMAP_SIZES, MATMUL_REPS,
                              MATMUL_SUITE, RAGGED_TRAINING_SHAPES, SHORT_WIDE_TRAINING_SHAPES, class_draws)

# The plan's training rows (`record --matmul-training`), kept beside the record they belong to but out of
# it: the course's record, which ships, holds what the chapters show.
TRAINING_DIR = Path(__file__).resolve().parent / "data"


def training_path(record_path: Path) -> Path:
    return TRAINING_DIR / f"{record_path.stem}.training.json"


def rows_of(rec: records.Record) -> list[dict]:
    """The training rows recorded for `rec`'s GPU (none where training never ran there)."""
    path = training_path(rec.path)
    if not path.exists():
        return []
    try:
        return json.loads(path.read_text())["dispatch_training"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise records.NotRecorded(f"the training rows {path} cannot be read ({exc}); restore the file from the "
                                  f"repository, or time them anew: `python -m gemmlab record --matmul-training`") \
            from None


def save_rows(record_path: Path, rows: list[dict]) -> None:
    """Whole or not at all, beside the record."""
    path = training_path(record_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, json.dumps({"record": record_path.name, "dispatch_training": rows}, indent=1) + "\n")

bench_matmul = library.bench_matmul

def padded_widths(N: int) -> tuple[int, ...]:
    """The widths a plan may run a C of N columns at: N itself, and those dispatch may pad it to."""
    return (N, *dispatch.pad_sizes(N))


def narrow_tile_kernel():
    """Chapter 13's kernel: the one whose tiles may be 32 columns wide, each split along K."""
    return registry.by_chapter(13)


# Chapter 13's narrow tiles, which no slider offers (its BN is 64 or 128): 32 columns in one warp's width,
# or 64 in one or two, tiles of 64-256 rows, each tile split in 4 or 8 along K (a C of a few columns has few
# tiles), A copied 4 bytes at a time or (A_QUADS=1, where K is a multiple of 4) 16. Timed at the few-columns
# shapes below, at every width a plan may run them at, so that the fit can make them candidates where they are
# fastest.
NARROW_TILES = tuple(cfg for cfg in (
    {"BM": bm, "BN": bn, "WM": wm, "WN": wn, "BK": bk, "STAGES": 3, "GROUP": 1, "SPREAD": 2, "SPLIT": split,
     "MINB": 2 if (bm // wm) * (bn // wn) <= 4 else 1, "A_QUADS": a_quads}
    for bn, wn, bks in ((32, 32, (16, 32)), (64, 64, (16,)))
    for bm in (64, 128, 256) for wm in (32, 64) for bk in bks for split in (4, 8) for a_quads in (0, 1))
    if narrow_tile_kernel().is_legal(cfg))


def narrow_tile_jobs(shapes) -> list[tuple[str, dict, tuple[int, int, int]]]:
    """(kernel, configuration, shape) of NARROW_TILES at each shape's widths (padded_widths) that C holds a
    tile of."""
    spec = narrow_tile_kernel()
    jobs = [(spec.name, cfg, (M, width, K)) for M, N, K in shapes for width in padded_widths(N)
            for cfg in NARROW_TILES if cfg["BN"] <= width and cfg["BM"] <= M]
    return [job for job in jobs if takes_shape(spec, job[1], job[2])]


# Chapter 13's 48-row tiles (BM=48: one warp row of three 16-row sub-tiles), which no slider offers: for a C of 33
# to 96 rows, which 32- and 64-row tiles cover with up to twice its rows. 64 or 128 columns in warps 32 wide, each
# tile split in 1 to 16 along K (few rows make few tiles), C staged through shared memory too where its rows are
# ragged. Timed at every training shape of 33 to 96 rows, at the height a plan runs it (a C of fewer than 48 rows
# padded to 48), so that the fit can make them candidates where they are fastest.
SHORT_ROWS = (33, 96)
SHORT_TILES = tuple(narrow_tile_kernel().resolve(cfg) for cfg in (     # whole: a round skips those timed before
    {"BM": 48, "WM": 48, "BN": bn, "WN": 32, "SPLIT": split, "STAGE_C": stage_c}
    for bn in (64, 128) for split in (1, 2, 4, 8, 16) for stage_c in (0, 1))
    if narrow_tile_kernel().is_legal(cfg))


def short_tile_jobs(shapes) -> list[tuple[str, dict, tuple[int, int, int]]]:
    """(kernel, configuration, shape) of SHORT_TILES at each shape of SHORT_ROWS rows, at least 48 rows tall (padded
    as a plan pads it); STAGE_C=1 only where C's rows are ragged (elsewhere it runs the same stores)."""
    spec = narrow_tile_kernel()
    low, high = SHORT_ROWS
    jobs = [(spec.name, cfg, (max(M, cfg["BM"]), N, K)) for M, N, K in shapes if low <= M <= high
            for cfg in SHORT_TILES if cfg["BN"] <= N and (N % 4 or not cfg["STAGE_C"])]
    return [job for job in jobs if takes_shape(spec, job[1], job[2])]


def takes_shape(spec, cfg: dict, shape) -> bool:
    """Whether a configuration takes a shape (13's tiles must fit inside C): a shape is timed with the
    configurations that run it."""
    try:
        spec.check_shape(spec.resolve(cfg), Problem(*shape))
        return True
    except UnsupportedShape:
        return False


# Chapter 12's small-K side (SIDE=2) as no slider offers it: warps side by side (ACROSS of 2 to 8) in blocks of 128
# threads too, 64 rows a warp. Timed at every training shape whose K it holds, each at the smallest EDGE that holds
# that K (12 and 16, which no slider offers, among them), so that the fit can make them candidates where they are
# fastest.
SMALL_K_TILES = tuple({"SIDE": 2, "ACROSS": across, "UNROLL": unroll, "LANES": lanes, "THREADS": threads,
                       "EVICT_FIRST": 1}
                      for across, unroll, lanes, threads in ((4, 2, 32, 128), (4, 2, 32, 256), (2, 2, 32, 128),
                                                             (4, 2, 16, 128), (8, 2, 64, 256), (4, 4, 64, 128),
                                                             (2, 4, 32, 128), (4, 1, 32, 128), (8, 2, 32, 256)))


def small_k_tile_jobs(shapes) -> list[tuple[str, dict, tuple[int, int, int]]]:
    """(kernel, configuration, shape) of SMALL_K_TILES at each shape whose K chapter 12's small-K side holds."""
    spec = registry.by_chapter(12)
    edges = spec.tunable("EDGE").values
    jobs = []
    for M, N, K in shapes:
        edge = next((e for e in edges if 4 * e >= K), None)
        for cfg in SMALL_K_TILES:
            cfg = {**cfg, "EDGE": edge}
            if edge is not None and spec.is_legal(cfg):
                jobs.append((spec.name, cfg, (M, N, K)))
    return jobs


def time_jobs(jobs, desc: str, progress: bool = True) -> list[dict]:
    """Each (kernel, configuration, shape) validated, then timed against cuBLAS (bench.bench): a training row. The
    builds are compiled side by side first (compile_aside.precompile): one at a time, a round of new shapes waited on
    NVRTC."""
    from tqdm.auto import tqdm
    if device.available():
        precompile([(getattr(kernel, "name", kernel), cfg, device.facts().arch) for kernel, cfg, _ in jobs], progress)
    return [bench.bench(kernel, cfg, shape, budget_s=0.25).as_row()
            for kernel, cfg, shape in tqdm(jobs, desc=desc, disable=not progress)]


def measure_suite(shapes, reps: int, progress: bool = True) -> list[dict]:
    """gemmlab.matmul against cuBLAS FP32 at each shape, as bench_matmul times it, with the plan it ran."""
    from tqdm.auto import tqdm
    rows = []
    for shape in tqdm(shapes, desc="gemmlab.matmul against cuBLAS", disable=not progress):
        m = bench_matmul(shape, reps=reps)
        model_plan, plan = dispatch.plan(*shape), library.ran(*shape)     # the model's, and what the call ran
        rows.append({**m.as_row(), "kernel": "matmul", "params": plan.params, "plan_kernel": plan.spec.name,
                     "predicted_us": plan.predicted_us, "peeled": plan.core is not None,
                     "staged": bool(plan.stage_ldb) and not plan.pad_n, "padded": plan.pad_n,
                     "padded_rows": plan.pad_m,
                     **({} if plan is model_plan else {"model_kernel": model_plan.spec.name,
                                                       "model_params": model_plan.params})})
    return rows


def untried_shapes(shapes, trained: list[dict]) -> tuple[tuple[int, int, int], ...]:
    """The shapes where no training row times the configuration the plan runs there as it is (the whole call
    unreshaped): one no round has timed, or where a refit chose a configuration never timed there. Timing its
    best options there is how a refit's guess about a new candidate is checked."""
    timed: dict[tuple, set] = {}
    for r in trained:
        timed.setdefault(records.shape_key(r), set()).add(time_model.config_key(r["kernel"], r["params"]))
    dev, gpu = dispatch.device_facts()
    out = []
    for shape in shapes:
        choice = dispatch.plan_for(Problem(*shape), dev, gpu, reshape=False).choice.launch
        if time_model.config_key(choice.spec.name, time_model.as_priced(choice.spec, choice.params)) \
                not in timed.get(tuple(shape), ()):
            out.append(tuple(shape))
    return tuple(out)


def measure_training(shapes, tries: int, progress: bool = True) -> list[dict]:
    """At each shape, the plan's `tries` best options by the model, and the best option of each of up to
    dispatch.RUNNERS_UP kernels those leave out, each validated then timed against cuBLAS: what the
    model is refitted on (research.fit.training_rows), where its choices are made. The other kernels' best
    are there for the model's mistakes against them: a kernel it under-rates is otherwise never timed."""
    dev, gpu = dispatch.device_facts()
    m = time_model.model(dev["name"])
    jobs = []
    for shape in shapes:
        found, _ = dispatch.options(m, Problem(*shape), dev, gpu, True)
        ranked = sorted(found, key=lambda o: o.rank)
        seen, configs = [], set()
        for o in ranked:
            # `tries` configurations, each at its best split: the splits of one configuration share its fit's
            # constants, and four of them at one shape had left every other configuration untimed there. Each
            # is timed as the model priced it (time_model.as_priced): its rows are the fit's
            priced = time_model.as_priced(o.launch.spec, o.launch.params)
            config = time_model.config_key(o.launch.spec.name, time_model.unsplit(o.launch.spec, priced))
            if len(seen) < tries and config not in configs:
                configs.add(config)
                seen.append((o.launch.spec, priced))
        kernels, others = {spec.name for spec, _ in seen}, []
        for o in ranked:
            if o.launch.spec.name not in kernels and len(others) < dispatch.RUNNERS_UP:
                kernels.add(o.launch.spec.name)
                others.append((o.launch.spec, time_model.as_priced(o.launch.spec, o.launch.params)))
        # and their twins (the kernel's model: what its features cannot tell apart), each beside its own
        twins = [(spec, twin) for spec, params in seen + others
                 for twin in registry.model(spec).twins(params, Problem(*shape))
                 if spec.is_legal(twin) and (spec, twin) not in seen + others]
        jobs += [(spec, params, shape) for spec, params in seen + others + twins]
    return time_jobs(jobs, "gemmlab.matmul's training shapes", progress)


def measure_heatmap(spec, sizes, ks, progress: bool = True) -> list[dict]:
    """Over M, N in `sizes` and K in `ks`: the ratio to cuBLAS of `spec` at its defaults (one kernel at
    one configuration: before dispatch) and of gemmlab.matmul (after), each timed interleaved with
    cuBLAS in its own run, validated first."""
    from tqdm.auto import tqdm
    rows = []
    for shape in tqdm([(m, n, k) for k in ks for m in sizes for n in sizes], desc="before and after dispatch",
                      disable=not progress):
        before = bench.bench(spec, spec.defaults, shape, budget_s=0.3)
        after = bench_matmul(shape)
        rows.append({"M": shape[0], "N": shape[1], "K": shape[2], "kernel": spec.name,
                     "before_ratio": before.ratio, "after_ratio": after.ratio, "plan": after.params["plan"],
                     "cublas_gflops": after.cublas_gflops})
    return rows
