"""dispatch: gemmlab.matmul's plan. The frozen model is the fit of the shipped record; the fit
predicts shapes it never saw well enough to pick their fastest kernel; the plan says why, is the
same every time, and refuses nothing cuBLAS accepts, on any architecture gemmlab knows. No GPU."""
import copy
import json
import random
import subprocess
import sys

import numpy as np
import pytest

from gemmlab import arch, identity, records, registry
from gemmlab.library import dispatch, time_model
from gemmlab.research import fit, training
from gemmlab.spec import BadProblem, Problem

H100 = {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132, "clock_mhz": 1980.0,
        "fp32_lanes_per_sm": 128, "l2_bytes": 50 * 2**20, "peak_fp32_tflops": 66.9, "dram_gbs": 3352.3,
        "measured_copy_gbs": 2978.1}
# Learners' GPUs as their attributes read (issue 16's list), none of them the fitted one.
T4 = {"name": "Tesla T4", "arch": "sm_75", "sm_count": 40, "clock_mhz": 1590.0, "fp32_lanes_per_sm": 64,
      "l2_bytes": 4 * 2**20, "peak_fp32_tflops": 8.1, "dram_gbs": 320.1}
RTX4090 = {"name": "NVIDIA GeForce RTX 4090", "arch": "sm_89", "sm_count": 128, "clock_mhz": 2520.0,
           "fp32_lanes_per_sm": 128, "l2_bytes": 72 * 2**20, "peak_fp32_tflops": 82.6, "dram_gbs": 1008.1}


@pytest.fixture(scope="module")
def frozen():
    m = time_model.model(H100["name"])
    return m, json.loads(m.path.read_text())


def _model_of(fitted: dict) -> time_model.Model:
    cands = tuple(time_model.Candidate(registry.KERNELS[c["kernel"]], c["params"], c["registers"], c["static_smem"],
                                     c["per_tile_us"], c["per_step_us"]) for c in fitted["candidates"])
    return time_model.Model(records.latest().path, fitted["device"], fitted["record"]["date"], fitted["launch_us"],
                          fitted["alone"], fitted["chain_us"], fitted["ragged"], cands, ())


def _resources(fitted: dict) -> dict:
    """The builds' registers and static shared memory as the fitted model has them: each candidate's, and each
    of its splits'."""
    out = {}
    for c in fitted["candidates"]:
        out[time_model.config_key(c["kernel"], c["params"])] = (c["registers"], c["static_smem"])
        for b in c.get("split_builds", []):
            out[time_model.config_key(c["kernel"], {**c["params"], **b["split"]})] = (b["registers"], b["static_smem"])
    return out


@pytest.mark.slow     # a refit of the model (the heavy tier)
def test_the_frozen_model_is_the_fit_of_the_shipped_record(frozen):
    """`python -m gemmlab fit` made gemmlab/fitted/ from the record: refitting gives the same model
    (the builds' registers as they were then: ptxas may vary by a register between hosts)."""
    m, data = frozen
    rec = records.latest()
    assert data["record"] == {"file": rec.path.name, "date": rec.data["date"]}
    again = fit.fit(rec, _resources(data))
    assert [again[k] for k in ("launch_us", "alone", "chain_us", "ragged")] == \
        [data[k] for k in ("launch_us", "alone", "chain_us", "ragged")]
    assert [(c["kernel"], c["params"]) for c in again["candidates"]] == \
        [(c["kernel"], c["params"]) for c in data["candidates"]]
    for new, old in zip(again["candidates"], data["candidates"]):
        assert new["per_tile_us"] == pytest.approx(old["per_tile_us"], rel=1e-9, abs=1e-9)
        assert new["per_step_us"] == pytest.approx(old["per_step_us"], rel=1e-9)
        assert (new["alone"], new["best_tflops"]) == (old["alone"], old["best_tflops"])
    assert again["ragged_by_kernel"] == data["ragged_by_kernel"]
    assert again["chain_by_kernel"] == data["chain_by_kernel"]
    # 4.1% before chapter 12's kernel joined; its rows (paced by DRAM) fit less closely (docs/dispatch.md)
    assert again["fit"]["median_error"] < 0.07, "the model reproduces the timings it was fitted to"
    assert not m.dropped, "no kernel changed since the fit"
    assert len({c.spec.name for c in m.candidates}) >= 8, "candidates from most chapters"


def _recorded_plan(M: int, N: int, K: int) -> dispatch.Plan:
    """The plan for the record's GPU (what the chapter shows with no GPU), whatever GPU runs the test."""
    return dispatch.plan_for(Problem(M, N, K), records.latest().device, "the record's GPU")


# "level with cuBLAS": within 5% of it (the ratio's run-to-run spread at one shape is a few percent)
LEVEL = 0.95


def _ladder_choice(model: time_model.Model, shape, rows):
    """Among the ladder's configurations at one shape (each kernel's best at 4096), the model's pick,
    the fastest measured, and the model's relative errors."""
    cands = {time_model.config_key(c.spec.name, c.params): c for c in model.candidates}
    picked = []
    for r in rows:
        spec = registry.get(r["kernel"])
        cand = cands.get(time_model.config_key(spec.name, time_model.unsplit(spec, r["params"])))
        if cand is None:
            continue
        one = time_model.Model(model.path, model.device, model.date, model.launch_us, model.alone, model.chain_us,
                             model.ragged, (cand,), ())
        options, _ = dispatch.options(one, Problem(*shape), H100, "H100", True)
        predicted = next(o.predicted_us for o in options if o.launch.params == spec.resolve(r["params"]))
        picked.append((predicted, r["ms"] * 1e3, spec.name))
    return min(picked), min(picked, key=lambda x: x[1]), [abs(p / t - 1) for p, t, _ in picked]


@pytest.mark.slow     # a refit of the model (the heavy tier)
def test_the_fit_picks_the_fastest_at_shapes_it_never_saw():
    """Leave each of the ladder's eight shapes out of every part of the record, refit, and ask the
    model which of the ladder's configurations (one per kernel) is fastest there: what it picks must
    be within 3% of the fastest measured, and its median error under 15% (10% at worst when made:
    4096 x 4096 x 1024, whose K of 1024 is the shortest of any large shape in the record)."""
    rec = records.latest()
    data = json.loads(time_model.fitted_path(H100["name"]).read_text())
    resources = _resources(data)
    ladder = rec.data["ladder"]
    shapes = sorted({records.shape_key(r) for r in ladder})
    assert len(shapes) == 8
    trained = training.rows_of(rec)
    for shape in shapes:
        held_out = copy.deepcopy(rec.data)
        for section in ("results", "final_search", "ladder"):
            held_out[section] = [r for r in held_out.get(section, []) if records.shape_key(r) != shape]
        fitted = fit.fit(records.Record(rec.path, held_out), resources,
                         [r for r in trained if records.shape_key(r) != shape])
        (_, picked_us, picked), (_, best_us, best), errors = _ladder_choice(
            _model_of(fitted), shape, [r for r in ladder if records.shape_key(r) == shape])
        assert picked_us <= 1.03 * best_us, f"{shape}: picked {picked} ({picked_us:.0f} us), {best} ran {best_us:.0f} us"
        assert np.median(errors) < 0.15, f"{shape}: median error {np.median(errors):.0%}"


def test_the_plan_is_the_same_every_time():
    first = dispatch.plan_for(Problem(3000, 3000, 3000), H100, "H100")
    again = dispatch.plan_for(Problem(3000, 3000, 3000), H100, "H100")
    assert first.key == again.key and str(first) == str(again)
    cli = [subprocess.run([sys.executable, "-m", "gemmlab", "plan", "777", "1234", "567"], capture_output=True,
                          text=True) for _ in range(2)]
    assert cli[0].returncode == 0 and cli[0].stdout == cli[1].stdout and "predicted" in cli[0].stdout


def _random_problems(n: int, seed: int):
    rng = random.Random(seed)
    for _ in range(n):
        M, N, K = (rng.randint(1, 3000) for _ in range(3))
        pad = rng.random() < 0.5
        yield Problem(M, N, K, K + rng.randint(0, 7) * pad, N + rng.randint(0, 7) * pad,
                      N + rng.randint(0, 7) * pad), rng.random() < 0.8


# The H100 on 20 random shapes in the fast tier; every architecture on 150 in the heavy one.
@pytest.mark.parametrize("dev,count", [(H100, 20), *(pytest.param(d, 150, marks=pytest.mark.slow)
                                                      for d in (H100, T4, RTX4090))],
                         ids=lambda v: v["arch"] if isinstance(v, dict) else str(v))
def test_the_plan_refuses_nothing_cublas_accepts(dev, count):
    """Every M, N, K >= 1 with any leading dimensions, aligned or not, gets a kernel that accepts it
    and runs on the architecture: random shapes up to 3000, and the extremes of the grid."""
    archs = arch.get(dev["arch"])
    extremes = [(Problem(1, 1, 1), True), (Problem(1, 1, 100_000), False), (Problem(100_000, 1, 1), True),
                (Problem(1, 100_000, 1), True), (Problem(65535 * 128 + 1, 3, 5), True), (Problem(3, 3, 3, 7, 9, 11), False)]
    for problem, aligned in [*extremes, *_random_problems(count, seed=len(dev["name"]))]:
        plan = dispatch.plan_for(problem, dev, dev["name"], aligned)
        for launch in plan.launched:               # the choice's, and each part's where the call is peeled
            spec, params = launch.spec, launch.params
            spec.check_shape(params, launch.problem)
            spec.check_arch(params, archs)
            assert aligned or spec.pointer_alignment(params) == 4
            grid = launch.grid                     # one launch's, of at most ROWS_PER_LAUNCH rows
            assert grid[1] <= 65535 and grid[0] < 2**31
        assert plan.launches == -(-problem.M // dispatch.ROWS_PER_LAUNCH)
        assert plan.choice.predicted_us > 0
    with pytest.raises(BadProblem):
        dispatch.plan(0, 4, 4)


def test_the_plan_says_why_feature_by_feature():
    ragged = dispatch.plan_for(Problem(1000, 1003, 999), H100, "H100", aligned=True)
    waves, k_block, alignment, size = ragged.reasons()
    assert waves.startswith("waves:") and "blocks per slot" in waves and "of the slots' time busy" in waves
    assert k_block.startswith("K per block:")
    assert "not all 16-byte multiples" in alignment
    assert size.startswith("bytes:") and "L2" in size and "ridge" in size
    assert ragged.refused and all("16-byte-rows" in why or "memory-bound-shapes" in why for why in ragged.refused), \
        "the kernels that move 16 bytes at a time are named, with the rule (and the streaming kernel, with its)"
    assert any("16-byte-rows" in why for why in ragged.refused)
    ragged.spec.check_shape(ragged.params, ragged.problem)
    text = str(ragged)
    assert "predicted" in text and "next best" in text and "cannot run it" in text
    big = dispatch.plan_for(Problem(20000, 20000, 100), H100, "H100")
    assert "over the 50 MiB L2" in big.reasons()[3]
    tall = dispatch.plan_for(Problem(3 * dispatch.ROWS_PER_LAUNCH + 1, 8, 8), H100, "H100")
    assert tall.launches == 4 and tall.reasons()[-1].startswith("launches:") and "each of 4 launches" in str(tall)
    if tall.refused:      # each kernel was asked about one launch's rows: the refusal says so, not the call's
        assert f"cannot run a launch of {dispatch.ROWS_PER_LAUNCH:,} of its rows: " in str(tall)
        assert "cannot run it:" not in str(tall)


@pytest.mark.parametrize("shape", [(46, 24, 1000000), (3000, 3000, 3000), (64, 65536, 64), (4096, 8, 4096)])
def test_the_plan_names_which_of_its_two_times_it_predicts(shape):
    """The roofline's side is the shape's; the prediction is the larger of the launch's compute and memory times,
    which can lie on the other side (46 x 24 x 1,000,000 keeps 9% of the slots busy): the reasons name which."""
    p = dispatch.plan_for(Problem(*shape), H100, "H100")
    size = p.reasons()[3]
    larger = "rounds" if p.choice.compute_us >= p.choice.memory_us else "memory floor"
    assert size.endswith(f"the prediction is the {larger})"), size
    assert ("memory-bound" in size) == (p.problem.intensity < p.choice.launch.ridge)


def test_a_split_configuration_that_runs_fewer_pieces_says_why():
    """SPLIT=12 in a plan's configuration asks for up to 12 pieces: where the launch cuts fewer, its reasons say why."""
    p = dispatch.plan_for(Problem(3000, 3000, 3000), H100, "H100")
    launch = p.choice.launch
    why = launch.spec.k_split_why(launch.params, launch.problem)
    k_block = p.reasons()[1]
    assert (why in k_block) if why else ("most pieces" not in k_block)
    if launch.params.get("SPLIT", 1) > launch.k_split and launch.spec.name == "13_split_k":
        assert why and f"here {launch.k_split}" in why


def test_a_grid_that_cannot_fill_the_gpu_is_split_or_made_of_smaller_tiles():
    """Where the course's last kernel at its defaults leaves most SMs idle (512^3: 8 tiles for 132
    SMs), the plan gives at least half of the SMs a block, and predicts it faster."""
    final = registry.with_shape_search()[-1]
    for shape in ((512, 512, 512), (1024, 1024, 1024), (16, 4096, 4096)):
        plan = dispatch.plan_for(Problem(*shape), H100, "H100")
        launch = plan.choice.launch
        assert min(launch.blocks, launch.sm_count) >= launch.sm_count / 2, (shape, str(plan))
        defaults = [o for o in dispatch.options(time_model.model(H100["name"]), Problem(*shape), H100, "H100", True)[0]
                    if o.launch.spec is final and o.launch.params == final.defaults]
        if defaults:
            assert plan.choice.predicted_us < defaults[0].predicted_us


def test_a_kernel_changed_since_the_fit_is_left_out(tmp_path, monkeypatch):
    data = json.loads(time_model.fitted_path(H100["name"]).read_text())
    name = data["candidates"][-1]["kernel"]
    data["sources"][name] = "0" * 16
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(data))
    m = time_model.load(path)
    assert m.dropped == (name,) and all(c.spec.name != name for c in m.candidates)


@pytest.mark.slow     # fits the training rows three times (the heavy tier)
def test_the_fit_leaves_out_training_rows_timed_on_older_code_of_their_kernel():
    rec = records.latest()
    current = copy.deepcopy(training.rows_of(rec))
    rows = [r for r in current if r["kernel"] == "13_split_k"]
    assert rows
    for r in rows:
        r["source"] = identity.code_hash(registry.get("13_split_k").path)
    changed = copy.deepcopy(current)
    for r in [r for r in changed if r["kernel"] == "13_split_k"][::2]:
        r["source"] = "0" * 16
    kept = fit.training_rows(rec, changed)
    assert all(r.get("source") != "0" * 16 for r in kept)

    def key(r):
        return r["kernel"], json.dumps(r["params"], sort_keys=True), records.shape_key(r), r["ms"]
    stale = {key(r) for r in changed if r.get("source") == "0" * 16}
    # the same rows as with every row fresh, less the stale ones (some of which were left out anyway, as disturbed)
    assert sorted(map(key, kept)) == sorted(k for k in map(key, fit.training_rows(rec, current)) if k not in stale)
    assert len(kept) < len(fit.training_rows(rec, current)) - len(rows[::2]) // 2


def test_the_fit_leaves_out_timings_taken_while_the_gpu_was_disturbed():
    """A row whose interleaved cuBLAS run took far longer (or shorter) than cuBLAS's median at its shape was timed
    while something else held the GPU: both its times are off, so the fit leaves it out; a shape with too few rows
    for a median keeps all of them."""
    rows = [r for r in training.rows_of(records.latest()) if r["kernel"] == "13_split_k"]
    shape = records.shape_key(rows[0])
    same = copy.deepcopy([r for r in rows if records.shape_key(r) == shape][:4])
    assert len(same) == 4
    for r in same:
        r["cublas_ms"] = 1.0
    slow, fast = copy.deepcopy(same[0]), copy.deepcopy(same[1])
    slow["cublas_ms"], slow["ms"] = fit.DISTURBED * 1.05, slow["ms"] * 3
    fast["cublas_ms"] = 1 / (fit.DISTURBED * 1.05)
    kept = fit.undisturbed(same + [slow, fast])
    assert kept == same
    assert fit.undisturbed([slow, fast]) == [slow, fast]
    within = copy.deepcopy(same[2])
    within["cublas_ms"] = fit.DISTURBED * 0.95
    assert fit.undisturbed(same + [within]) == same + [within]


def test_a_damaged_model_falls_back_to_a_kernel_that_runs_the_shape(tmp_path, monkeypatch):
    (tmp_path / "nvidia-h100-80gb-hbm3.json").write_text("{ not json")
    monkeypatch.setattr(time_model, "FITTED_DIR", tmp_path)
    time_model.model.cache_clear()
    try:
        with pytest.raises(time_model.NotFitted, match="cannot be read"):
            time_model.model(H100["name"])
        plan = dispatch.plan_for(Problem(100, 200, 300), H100, "H100")
        assert plan.basis.startswith("no model") and "python -m gemmlab fit" in plan.basis
        assert "no prediction" in str(plan)
        plan.spec.check_shape(plan.params, plan.problem)
        t4 = dispatch.plan_for(Problem(100, 200, 300), T4, "T4")
        assert t4.spec.runs_on(t4.params, arch.get("sm_75"))
    finally:
        time_model.model.cache_clear()


def test_the_command_line_plans_and_refuses_with_a_sentence():
    ok = subprocess.run([sys.executable, "-m", "gemmlab", "plan", "4097", "4097", "4097"], capture_output=True, text=True)
    assert ok.returncode == 0 and "waves:" in ok.stdout and "K per block:" in ok.stdout and "16-byte-rows" in ok.stdout
    padded = subprocess.run([sys.executable, "-m", "gemmlab", "plan", "100", "100", "100", "--ld", "104", "104", "100"],
                            capture_output=True, text=True)
    assert padded.returncode == 0 and "every row starts 16-byte aligned" in padded.stdout
    short = subprocess.run([sys.executable, "-m", "gemmlab", "plan", "100", "100", "100", "--ld", "99", "100", "100"],
                           capture_output=True, text=True)
    assert short.returncode == 2 and "lda=99 is shorter than a row" in short.stderr and "Traceback" not in short.stderr
    huge = subprocess.run([sys.executable, "-m", "gemmlab", "plan", str(2**31), "2", "2"], capture_output=True, text=True)
    assert huge.returncode == 2 and "32-bit sizes" in huge.stderr and "Traceback" not in huge.stderr
    with pytest.raises(BadProblem, match="32-bit"):
        dispatch.plan(4, 4, 4, 2**31)
    both = subprocess.run([sys.executable, "-m", "gemmlab", "plan", "100", "100", "100", "--kernel", "11", "--ld", "100",
                           "100", "100"], capture_output=True, text=True)
    assert both.returncode == 2 and "--ld goes with" in both.stderr


def test_the_recorded_suite_ran_the_plans_that_ship():
    """The suite in the record (what chapter 13 and the README show) was timed with the plan the package
    makes today: remade after every refit (`record --matmul`), never left behind by one."""
    for r in records.latest().data["matmul_suite"]:
        p = _recorded_plan(r["M"], r["N"], r["K"])
        # where the call's first use timed the model's near ties and ran another, the row names both
        assert (p.spec.name, p.params, p.core is not None, bool(p.stage_ldb)) == \
            (r.get("model_kernel", r["plan_kernel"]), r.get("model_params", r["params"]), r["peeled"], r["staged"]), \
            (r["M"], r["N"], r["K"])


def test_kernels_that_share_a_copy_code_share_a_copy_path():
    """09-11 check their copies with 09's code and one rule for which tiles take it: one `ragged` for the
    three in the fit; 13's 4-byte copies are its own; kernels with one path have none."""
    paths = {name: time_model.copy_path(registry.KERNELS[name])
             for name in ("08_warp_tiling", "09_pipeline", "10_issue_rate", "11_last_wave", "13_split_k")}
    assert paths["08_warp_tiling"] is None
    assert paths["09_pipeline"] == paths["10_issue_rate"] == paths["11_last_wave"] != paths["13_split_k"]
    # 09 takes the 16-byte path wherever B's rows are 16-byte multiples, whatever the edges
    spec, d = registry.KERNELS["09_pipeline"], registry.KERNELS["09_pipeline"].defaults
    fast_tiles = registry.model(spec).fast_tiles
    assert fast_tiles(d, Problem(1000, 1000, 1000)) == spec.tiles(d, Problem(1000, 1000, 1000))
    assert fast_tiles(d, Problem(1000, 1001, 1000)) == 0


def test_one_slow_tile_on_the_busiest_sm_is_counted_whole():
    """Where a few edge tiles take the slow path in a launch of about one round, the busiest SM runs one of
    them: the share `checked` is at least the busiest SM's one block in its rounds, and all of it where
    the launch is one round or less; every tile checked stays 1; none stays 0."""
    spec = registry.KERNELS["11_last_wave"]
    params = {**spec.defaults, "BM": 128, "BN": 128, "SPLIT": 1}
    fast_tiles = registry.model(spec).fast_tiles
    one_round = Problem(2000, 2000, 2000)            # 256 tiles, 31 on the checked path, on 264 slots
    tiles, fast = spec.tiles(params, one_round), fast_tiles(params, one_round)
    assert 0 < fast < tiles and tiles <= 132 * 2
    assert time_model.features(spec, params, one_round, 132, 2)[4] == 1.0
    many = Problem(8000, 8000, 2000)                 # 3,969 tiles, 125 checked, about 15 rounds
    share = time_model.features(spec, params, many, 132, 2)[4]
    tiles, fast = spec.tiles(params, many), fast_tiles(params, many)
    assert (tiles - fast) / tiles < share == pytest.approx(132 * 2 / tiles)
    assert time_model.features(spec, params, Problem(1001, 1001, 1001), 132, 2)[4] == 1.0
    assert time_model.features(spec, params, Problem(4096, 4096, 4096), 132, 2)[4] == 0.0


def test_a_last_wave_split_is_offered_only_where_it_splits_a_tile():
    """A split build runs its split code even where the launch splits no tile (2.3% slower on the H100 at
    2048^3 and 4096^3, docs/dispatch.md): where nothing is split, only the unsplit build is offered."""
    m = dispatch.model(H100["name"])
    split_offered = unsplit_offered = 0
    for problem in (Problem(2048, 2048, 2048), Problem(4096, 4096, 4096), Problem(8192, 8192, 8192),
                    Problem(3000, 5000, 2000), Problem(777, 1234, 567)):
        found, _ = dispatch.options(m, problem, H100, "H100", True)
        for o in found:
            spec, params = o.launch.spec, o.launch.params
            if spec.split(params) > 1:
                split_offered += 1
                assert spec.split_count(params, problem, H100["sm_count"] * o.launch.blocks_per_sm) > 0, o.label
            elif "SPLIT" in params:
                unsplit_offered += 1
    assert split_offered and unsplit_offered
    for size in (2048, 4096):
        p = dispatch.plan_for(Problem(size, size, size), H100, "H100")
        assert p.spec.split(p.params) == 1, p.label


def test_a_split_past_the_grid_limit_is_refused_and_the_others_plan():
    """A shape whose split launch would pass CUDA's grid (2^31 - 1 blocks) refuses that split alone (the
    filter of splits that split nothing asks the launch too); another kernel plans it."""
    problem = Problem(dispatch.ROWS_PER_LAUNCH, 2**31 - 1, 64)
    p = dispatch.plan_for(problem, H100, "H100")     # raised the split's UnsupportedShape when the filter did not
    assert p.predicted_us > 0 and p.spec.split(p.params) == 1


# Training shapes where the last refit (2026-11-28, chapter 13's A_QUADS) chose a configuration no round has timed
# there: the session's device time ran out before another round (docs/dispatch-history.md). The next
# `record --matmul-training-new` and fit should empty this; no shape may join it.
UNTIMED_CHOICES = {(225, 254, 404), (3681, 33, 4500), (5155, 59, 15064)}


@pytest.mark.slow     # plans every training shape (the heavy tier)
def test_a_training_round_times_shapes_where_the_plan_runs_what_no_round_timed():
    """`record --matmul-training-new` revisits a shape where no training row times the configuration the plan
    now runs there (a refit's new choice), and leaves a shape whose choice was timed."""
    shape = (1584, 2282, 1536)
    launch = dispatch.plan_for(Problem(*shape), *dispatch.device_facts(), reshape=False).choice.launch
    # a training row times the configuration as the model priced it (chapter 13 runs a ragged B's launch on its
    # checked build: time_model.as_priced)
    row = {"kernel": launch.spec.name, "params": time_model.as_priced(launch.spec, launch.params),
           "M": shape[0], "N": shape[1], "K": shape[2]}
    other = {**row, "params": {**row["params"], "GROUP": 9}}
    assert training.untried_shapes([shape], [row]) == ()
    assert training.untried_shapes([shape], [other]) == (shape,)
    assert training.untried_shapes([shape], []) == (shape,)
    untimed = set(training.untried_shapes(training.DISPATCH_TRAINING_SHAPES, training.rows_of(records.latest())))
    assert untimed <= UNTIMED_CHOICES, \
        (f"the shipped training rows time every training shape's choice but {sorted(untimed - UNTIMED_CHOICES)}: run "
         f"record --matmul-training-new, then fit")
    assert untimed == UNTIMED_CHOICES, \
        f"{sorted(UNTIMED_CHOICES - untimed)} are timed now: take them out of UNTIMED_CHOICES"


def test_class_draws_are_each_of_their_class_and_none_of_the_suites():
    """`.ci/matmul-classes --draw` judges the plan on shapes drawn as the training rounds draw theirs, with another
    seed: each shape belongs to the class it is labelled with, the seed decides the draw, and no draw is a suite's
    shape."""
    drawn = training.class_draws(60, seed=2028)
    assert drawn == training.class_draws(60, seed=2028) != training.class_draws(60, seed=41)
    suites = set(training.MATMUL_SUITE) | {s for group in training.CLASS_SUITE.values() for s in group}
    for cls, (M, N, K) in drawn:
        assert (M, N, K) not in suites
        if cls == "few rows or columns":
            assert 2 <= min(M, N) <= 64 and K >= 1024
        elif cls == "K of 32 or less":
            assert K <= 32 and min(M, N) >= 256
        elif cls == "M or N not a multiple of 4":
            assert M % 4 or N % 4
        elif cls == "primes":
            assert all(d > 1 and all(d % q for q in range(2, int(d ** 0.5) + 1)) for d in (M, N, K))
        else:
            assert cls == "short-wide and tall-thin" and 16 <= min(M, N) <= 128 and max(M, N) >= 8192 and K <= 128
    assert {cls for cls, _ in drawn} == set(training.DRAWN_CLASSES)


@pytest.mark.parametrize("shape", [(2047, 2047, 2047), (2048, 2048, 2048)])
def test_a_training_shape_times_its_best_configurations_each_once(monkeypatch, shape):
    """The `tries` options timed at a shape are distinct configurations (each at its best split), not the
    splits of one configuration; the runners-up are other kernels; and beside them, where C's rows are ragged,
    each option's twin that its kernel's model cannot tell from it (chapter 13's other store of C), none where
    they are not."""
    timed = []
    monkeypatch.setattr(training.bench, "bench",
                        lambda spec, params, shape, budget_s: timed.append((spec, params)) or _Row())
    training.measure_training([shape], 4, progress=False)
    keys = [time_model.config_key(spec.name, time_model.unsplit(spec, params)) for spec, params in timed]
    assert len(keys) == len(set(keys))
    options, twins = timed[:4 + dispatch.RUNNERS_UP], timed[4 + dispatch.RUNNERS_UP:]
    assert len({spec.name for spec, _ in options[4:]}) == dispatch.RUNNERS_UP
    every = [(spec.name, twin) for spec, params in options for twin in registry.model(spec).twins(params, Problem(*shape))]
    assert bool(every) == (shape[1] % 4 != 0)
    assert [(spec.name, params) for spec, params in twins] == [
        twin for twin in every if twin not in [(spec.name, params) for spec, params in options]]


class _Row:
    def as_row(self):
        return {}


def test_narrow_tiles_are_legal_and_timed_at_every_width_a_plan_may_pad_to():
    assert training.NARROW_TILES and all(registry.get("13_split_k").is_legal(c) for c in training.NARROW_TILES)
    assert training.padded_widths(24) == (24, 32, 64) and training.padded_widths(48) == (48, 64)
    assert training.padded_widths(dispatch.PAD_BELOW) == (dispatch.PAD_BELOW,)
    jobs = training.narrow_tile_jobs([(3000, 24, 5000)])
    assert {shape for _, _, shape in jobs} == {(3000, 24, 5000), (3000, 32, 5000), (3000, 64, 5000)} - {(3000, 24, 5000)}
    assert all(cfg["BN"] <= shape[1] for _, cfg, shape in jobs)


def test_48_row_tiles_are_timed_at_every_training_shape_of_33_to_96_rows_at_the_height_a_plan_runs():
    spec = registry.get("13_split_k")
    assert training.SHORT_TILES and all(spec.is_legal(c) and c["BM"] == 48 for c in training.SHORT_TILES)
    assert not any(c["BM"] == 48 for c in spec.explorer_configs()), "no slider offers them"
    jobs = training.short_tile_jobs([(47, 68482, 93), (83, 26827, 44), (48, 4096, 14336), (32, 4096, 4096),
                                     (97, 4096, 4096), (40, 100, 5000)])
    by_shape = {}
    for kernel, cfg, shape in jobs:
        spec.check_shape(spec.resolve(cfg), Problem(*shape))
        by_shape.setdefault(shape, set()).add((cfg["BN"], cfg["SPLIT"], cfg["STAGE_C"]))
    # fewer than 48 rows at 48 (padded as a plan pads them); 32 and 97 rows: none; STAGE_C=1 only where N is ragged
    assert set(by_shape) == {(48, 68482, 93), (83, 26827, 44), (48, 4096, 14336), (48, 100, 5000)}
    assert {c[2] for c in by_shape[(48, 68482, 93)]} == {0, 1} and {c[2] for c in by_shape[(48, 4096, 14336)]} == {0}
    assert {c[0] for c in by_shape[(48, 100, 5000)]} == {64}, "128 columns do not fit 100"
    assert dispatch.row_pad_sizes(40) == (48, 64) and dispatch.pad_sizes(40) == (64,)
    assert dispatch.row_pad_sizes(24) == (32, 64) and dispatch.row_pad_sizes(48) == (64,)
    assert not dispatch.row_pad_sizes(64)


def test_the_small_k_side_is_timed_past_the_sliders_at_the_smallest_edge_that_holds_k():
    spec = registry.get("12_skinny")
    jobs = training.small_k_tile_jobs([(41, 66570, 47), (4104, 5999, 18), (2048, 2048, 1), (119, 26146, 121)])
    by_shape = {}
    for kernel, cfg, shape in jobs:
        assert kernel == spec.name and spec.is_legal(cfg) and cfg["SIDE"] == 2
        spec.check_shape(spec.resolve(cfg), Problem(*shape))            # each takes its shape (rule k-fits)
        by_shape.setdefault(shape, set()).add(cfg["EDGE"])
    assert by_shape == {(41, 66570, 47): {12}, (4104, 5999, 18): {8}, (2048, 2048, 1): {1}}   # K of 121: none
    assert any(cfg["ACROSS"] > 1 and cfg not in spec.explorer_configs() for _, cfg, _ in jobs)
    assert all(shape[2] <= 64 for shape in training.SHORT_WIDE_TRAINING_SHAPES)


def test_a_c_stored_4_bytes_at_a_time_costs_its_tiles_more_at_a_small_k():
    """Kernels with a 16-byte store path (09-11, 13) store C 4 bytes at a time where its rows are not 16-byte
    multiples or it is not aligned (time_model.scalar_stores); the model adds its fitted `store` to such a tile's
    per-tile cost alone: the same launch, only C's row stride changed, is priced higher, and more so at a small K."""
    eleven, three = registry.KERNELS["11_last_wave"], registry.KERNELS["03_coalescing"]
    assert time_model.scalar_stores(eleven, Problem(1000, 1001, 8)) == 1.0
    assert time_model.scalar_stores(eleven, Problem(1000, 1000, 8)) == 0.0
    assert time_model.scalar_stores(eleven, Problem(1000, 1000, 8), aligned=False) == 1.0
    assert time_model.scalar_stores(three, Problem(1000, 1001, 8)) == 0.0, "03 has one store path"
    dev, gpu = dispatch.device_facts()
    m = time_model.model(dev["name"])
    assert m.store_by_kernel.get("11_last_wave", 0) > 0

    def priced(M, N, K, ldc):
        found, _ = dispatch.options(m, Problem(M, N, K, K, N, ldc), dev, gpu, True)
        return {o.label: o.compute_us for o in found if o.launch.spec is eleven}
    for K, least in ((8, 1.3), (4096, 1.0)):
        packed, ragged = priced(4096, 4096, K, 4096), priced(4096, 4096, K, 4098)
        assert packed and packed.keys() == ragged.keys()
        ratios = [ragged[k] / packed[k] for k in packed]
        assert all(r >= 1 for r in ratios) and max(ratios) > least


def test_a_launch_with_tiles_on_the_4_byte_copy_path_runs_the_checked_build_at_the_fitted_price():
    """Chapter 13's RAGGED_B=1 (its model's checked_build) is what gemmlab.matmul runs where any tile copies B 4 bytes
    at a time (B's rows ragged, or an operand off 16 bytes), priced as the configuration the model was fitted to;
    where every tile takes the 16-byte path it runs that configuration's own build."""
    dev, gpu = dispatch.device_facts()
    m = time_model.model(dev["name"])

    def split_k(problem, aligned=True):
        found, _ = dispatch.options(m, problem, dev, gpu, aligned)
        return [o for o in found if o.launch.spec.name == "13_split_k"]
    ragged = split_k(Problem(997, 8191, 127))
    assert ragged and all(o.launch.fast_tiles < o.launch.tiles and o.launch.params["RAGGED_B"] == 1 for o in ragged)
    for o in ragged[:5]:                 # the price is the fitted configuration's, found by its key alone
        priced = time_model.as_priced(o.launch.spec, o.launch.params)
        assert priced["RAGGED_B"] == 0
        key = time_model.config_key("13_split_k", time_model.unsplit(o.launch.spec, priced))
        alone, _ = dispatch.options(m, Problem(997, 8191, 127), dev, gpu, True, only=key)
        assert o.predicted_us in [a.predicted_us for a in alone]
    whole = split_k(Problem(1024, 1024, 1024))
    assert whole and all(o.launch.fast_tiles == o.launch.tiles and o.launch.params["RAGGED_B"] == 0 for o in whole)
    assert all(o.launch.params["RAGGED_B"] == 1 for o in split_k(Problem(1024, 1024, 1024), aligned=False))
    plan = dispatch.plan(997, 8191, 127)
    assert plan.spec.name != "13_split_k" or "RAGGED_B=1" in plan.label, "the plan's label names the build it runs"
    assert plan.spec.name != "13_split_k" or any("RAGGED_B=1: the kernel's build" in r for r in plan.reasons())
    assert not any("checked_build" in r for r in dispatch.plan(1024, 1024, 1024).reasons())
