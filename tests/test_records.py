"""Recorded GPU results: present, complete and fresh."""
import pytest

from gemmlab import course, records, registry


def test_a_record_is_shipped():
    assert records.load_all(), "gemmlab/data/ holds no recorded GPU run"


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_record_is_fresh(record):
    stale = record.stale_kernels()
    assert not stale, (f"{record.path.name}: kernels changed since they were recorded: {stale}; "
                       f"re-run `python -m gemmlab record` on a GPU")


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_record_covers_every_kernel_config_and_explorer_size(record):
    for name, spec in registry.KERNELS.items():
        for cfg in spec.explorer_configs():
            for s in course.EXPLORER_SIZES:
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
                                                                   for s in spec.shape_search.shapes]
    for r in rows:
        assert r["reps"] >= registry.get(r["kernel"]).shape_search.reps and r["rel_err"] <= r["tol"]
        assert abs(r["ratio"] - r["gflops"] / r["cublas_gflops"]) < 1e-9
    profiled = {s.name for s in registry.KERNELS.values() if s.stall_profiles}
    assert {s["kernel"] for s in record.data["stalls"]} == profiled | {"cublas"}


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_final_table_uses_the_fastest_configuration_searched_at_each_shape(record):
    search = record.data["final_search"]
    wanted = {(spec.name, tuple(s), tuple(sorted(spec.resolve(c).items())))
              for spec in registry.with_shape_search() for s in spec.shape_search.shapes
              for c in spec.shape_search.candidates}
    assert {(r["kernel"], records.shape_key(r), tuple(sorted(r["params"].items()))) for r in search} == wanted
    assert all(r["rel_err"] <= r["tol"] for r in search)
    for row in record.data["final"]:
        mine = [r for r in search if r["kernel"] == row["kernel"]]
        assert row["params"] == records.fastest_at(mine, records.shape_key(row))


@pytest.mark.parametrize("record", records.load_all(), ids=lambda r: r.path.name)
def test_every_chapter_step_is_recorded_with_its_stall_profile(record):
    size = (course.STEP_SIZE,) * 3
    profiled = {(s["kernel"], tuple(sorted(s["params"].items()))) for s in record.data["stalls"]}
    for name, spec in registry.KERNELS.items():
        for full in spec.step_configs():
            row = record.result(name, full, size)
            assert row["rel_err"] <= row["tol"]
            if spec.stall_profiles:
                assert (name, tuple(sorted(full.items()))) in profiled, (name, full)


def test_stall_profiles_keep_what_ncu_gave_and_fall_back_without_the_level_metrics(monkeypatch):
    """A profile reads the level metrics (bytes per level, wavefronts, clock) where ncu knows them,
    and the stall reasons alone where it refuses the longer list."""
    from gemmlab import recorder
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
def test_the_issue_slot_view_leaves_no_more_than_the_peak(record):
    """Peak x issue rate x FFMA share bounds the measured speed (the rest is at most 1), and the
    profiles counted one FFMA per multiply-add of the problem."""
    from gemmlab.lessons import chapter10
    rows = chapter10.issue_slots(record)
    assert {r["name"].split()[0] for r in rows} >= {"cuBLAS"} and len(rows) >= 2
    for r in rows:
        assert 0.8 < r["rest"] <= 1.0, r
        assert 0.5 < r["ffma_share"] < 1.0
    for p in record.stalls():
        if p["kernel"] != "cublas" and p.get("ffma_thread_instructions"):
            assert p["ffma_thread_instructions"] == p["size"] ** 3
