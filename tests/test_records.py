"""Recorded GPU results: present, complete and fresh."""
import copy
import json

import pytest

from gemmlab import course, identity, records, registry
from gemmlab.research import training
from gemmlab.spec import Problem, UnsupportedShape


def test_a_record_is_shipped():
    assert records.load_all(), "gemmlab/data/ holds no recorded GPU run"


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_record_is_fresh(record):
    stale = record.stale_kernels()
    assert not stale, (f"{record.path.name}: kernels changed since they were recorded: {stale}; "
                       f"re-run `python -m gemmlab record` on a GPU")


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_record_covers_every_kernel_config_and_explorer_size(record):
    """Every configuration the sliders offer at every explorer size, but where it refuses the size by a rule of its
    own (chapter 12's SIDE=2 takes a K of 32 or less): there the explorer names the rule instead."""
    for name, spec in registry.KERNELS.items():
        for cfg in spec.explorer_configs():
            for s in course.EXPLORER_SIZES:
                try:
                    spec.check_shape(spec.resolve(cfg), Problem(s, s, s))
                except UnsupportedShape as refused:
                    assert refused.rule == "k-fits", refused
                    continue
                row = record.result(name, cfg, (s, s, s))
                assert row["rel_err"] <= row["tol"], "only validated results are recorded"
                assert 0 < row["gflops"] < record.device["peak_fp32_tflops"] * 1e3


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_record_says_where_and_when(record):
    d = record.data
    assert d["device"]["name"] and d["date"] and d["versions"]["nvrtc"]
    assert record.label.startswith("recorded on ")
    assert [r["size"] for r in d["chapter00"]["cublas_sweep"]] == list(course.CUBLAS_SIZES)


def test_stale_source_is_refused(monkeypatch):
    record = records.latest()
    monkeypatch.setitem(record.data["sources"], "01_naive", "0" * 16)
    with pytest.raises(records.StaleRecord, match="older version"):
        record.results("01_naive")


def test_a_training_row_is_judged_by_its_own_source_where_it_has_one():
    record = records.latest()
    row = next(r for r in training.rows_of(record) if r["kernel"] == "13_split_k")
    current = identity.code_hash(registry.get("13_split_k").path)
    assert record.row_is_fresh({**row, "source": current})
    assert not record.row_is_fresh({**row, "source": "0" * 16}), "a row timed on other code is stale"
    assert not record.row_is_fresh({**row, "kernel": "99_gone", "source": current})
    unsourced = {k: v for k, v in row.items() if k != "source"}
    assert record.row_is_fresh(unsourced) == (record.data["sources"]["13_split_k"] == current)


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_every_training_row_of_the_record_was_timed_on_its_kernel_as_it_is(record):
    stale = sorted({r["kernel"] for r in training.rows_of(record) if not record.row_is_fresh(r)})
    assert not stale, (f"{record.path.name}: training rows timed on older code of {stale}; run "
                       f"`python -m gemmlab record --matmul-refresh` on a GPU, then `python -m gemmlab fit`")


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_ladder_covers_every_kernel_at_every_ladder_shape(record):
    rows = record.data["ladder"]
    for name in registry.KERNELS:
        shapes = {(r["M"], r["N"], r["K"]) for r in rows if r["kernel"] == name}
        assert shapes == set(course.LADDER_SHAPES), name
    assert all(r["rel_err"] <= r["tol"] for r in rows)


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_final_table_is_interleaved_validated_and_complete(record):
    rows = record.data["final"]
    searched = registry.with_shape_search()
    assert [(r["kernel"], records.shape_key(r)) for r in rows] == [(spec.name, tuple(s)) for spec in searched
                                                                   for s in registry.programme(spec).shape_search.shapes]
    for r in rows:
        assert r["reps"] >= registry.programme(r["kernel"]).shape_search.reps and r["rel_err"] <= r["tol"]
        assert abs(r["ratio"] - r["gflops"] / r["cublas_gflops"]) < 1e-9
    assert {s["kernel"] for s in record.data["stalls"]} == set(registry.KERNELS) | {"cublas"}


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_final_table_uses_the_fastest_configuration_searched_at_each_shape(record):
    search = record.data["final_search"]
    wanted = {(spec.name, tuple(s), tuple(sorted(spec.resolve(c).items())))
              for spec in registry.with_shape_search() for s in registry.programme(spec).shape_search.shapes
              for c in registry.programme(spec).shape_search.candidates}
    assert {(r["kernel"], records.shape_key(r), tuple(sorted(r["params"].items()))) for r in search} == wanted
    assert all(r["rel_err"] <= r["tol"] for r in search)
    for row in record.data["final"]:
        mine = [r for r in search if r["kernel"] == row["kernel"]]
        assert row["params"] == records.fastest_at(mine, records.shape_key(row))


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_every_kernel_is_profiled_at_its_defaults_best_and_steps(record):
    size = (course.STEP_SIZE,) * 3
    profiled = {(s["kernel"], tuple(sorted(s["params"].items()))) for s in record.data["stalls"]}
    for name, spec in registry.KERNELS.items():
        for full in spec.step_configs():
            row = record.result(name, full, size)
            assert row["rel_err"] <= row["tol"]
            assert (name, tuple(sorted(full.items()))) in profiled, (name, full)
        best = records.best_config(record.data["results"], name, course.STEP_SIZE, spec.defaults)
        for full in (spec.defaults, best):
            assert (name, tuple(sorted(full.items()))) in profiled, (name, "defaults and best", full)


def test_a_configuration_profiled_twice_shows_one_profile_everywhere(monkeypatch):
    """Chapter 10's defaults are also its last step, and the record profiled them twice (0.89 and 0.88 issued per
    cycle): the steps table and the profile table show the same one, the later."""
    from gemmlab import results
    from gemmlab.lessons import display, profiles, register_tiles
    record = results.record()
    spec = registry.get("10_issue_rate")
    twice = [p for p in record.data["stalls"] if p["kernel"] == spec.name and p["params"] == spec.defaults]
    assert len(twice) == 2 and twice[0]["issued_per_scheduler"] != twice[1]["issued_per_scheduler"]
    shown = []
    monkeypatch.setattr(display, "markdown", shown.append)
    monkeypatch.setattr(profiles, "markdown", shown.append)
    monkeypatch.setattr(register_tiles, "markdown", shown.append)
    monkeypatch.setattr(profiles.plots, "stall_stack", lambda *a, **k: None)
    register_tiles.show_steps(spec.name, operands=False)
    profiles.show_profile(spec.name)
    steps, profile = shown[0], shown[1]
    issued = f"{twice[1]['issued_per_scheduler']:.2f}"
    last_step = [line for line in steps.splitlines() if line.startswith("|")][-1]
    defaults = next(line for line in profile.splitlines() if "defaults" in line)
    assert f" {issued} " in last_step, last_step
    assert f" {issued} " in defaults, defaults


def test_stall_profiles_keep_what_ncu_gave_and_fall_back_without_the_level_metrics(monkeypatch):
    """A profile reads the level metrics (bytes per level, wavefronts, clock) where ncu knows them,
    and the stall reasons alone where it refuses the longer list."""
    from gemmlab.research import measure_all as recorder
    calls = []

    def fake_ncu(metrics, run_args):
        calls.append(len(metrics))
        if any(m in recorder.LEVEL_METRICS for m in metrics) and run_args[0] == "old":
            return None
        return {m: 1.0 for m in metrics}
    monkeypatch.setattr(recorder, "_ncu_csv", fake_ncu)
    new, old = recorder.profile_stalls([("new", {}), ("old", {})], size=64)
    assert new["l2_bytes"] == 1.0 and new["shared_wavefronts"] == 1.0 and new["issued_per_scheduler"] == 1.0
    assert "l2_bytes" not in old and old["stalls"]["wait"] == 1.0
    assert calls[0] > calls[-1]


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_the_issue_slot_product_is_the_speed_of_the_profiled_launch(record):
    """Peak x clock share x SMs busy x issue rate x FFMA share is the speed of the launch the
    counters came from (within 5%: the counters are averages), and near the timed speed (within
    15%); the profiles counted one FFMA per multiply-add of the problem (an epilogue may add one per
    element of C)."""
    from gemmlab.lessons import profiles
    for spec in registry.KERNELS.values():
        rows = profiles.issue_slots(record, profiles.compared(record, spec.name))
        assert rows and rows[-1]["caption"] == "cuBLAS FP32", spec.name
        for r in rows:
            assert abs(r["product"] / r["profiled"] - 1) < 0.05, (spec.name, r)
            assert abs(r["product"] / r["timed"] - 1) < 0.15, (spec.name, r)
    for p in record.stalls():
        if p["kernel"] != "cublas" and p.get("ffma_thread_instructions"):
            assert abs(p["ffma_thread_instructions"] / p["size"] ** 3 - 1) < 1e-3, p["kernel"]   # + the epilogue's


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_latencies_are_recorded_and_ordered(record):
    lat = record.section("latency", "the memory latencies")
    assert 0 < lat["shared_cycles"] < lat["l2_cycles"] < lat["dram_cycles"]


@pytest.mark.gpu
def test_refresh_times_anew_the_training_rows_of_older_code_and_only_those(tmp_path, monkeypatch):
    from gemmlab import device
    from gemmlab.research import measure_all as recorder
    data = copy.deepcopy(records.latest().data)
    small = sorted((r for r in training.rows_of(records.latest()) if r["kernel"] == "13_split_k"),
                   key=lambda r: r["M"] * r["N"] * r["K"])[:2]
    old, fresh = {**small[0], "source": "0" * 16}, small[1]
    path = tmp_path / f"{records.slug(device.facts().name)}.json"
    path.write_text(json.dumps(data))
    monkeypatch.setattr(training, "TRAINING_DIR", tmp_path / "training")
    training.save_rows(path, [old, fresh])
    recorder.record(matmul_refresh=True, out_dir=tmp_path, progress=False)
    again, kept = training.rows_of(records.Record(path, data))
    assert kept == fresh, "a row timed on the kernel as it is stays as it was"
    assert again["source"] == identity.code_hash(registry.get("13_split_k").path)
    assert (again["params"], records.shape_key(again)) == (old["params"], records.shape_key(old))
    assert again["rel_err"] <= again["tol"] and again["reps"] > 0
