"""On a GPU with no record of its own, measuring cells show the shipped record (the H100's) beside
the live figures, labelled; on the recorded GPU, or with no GPU, they show no second set. Checked
with a pretend live source (its measurements are the record's, scaled), so no GPU is needed."""
import pytest

import gemmlab.lessons as gl
from gemmlab import device, records, registry, results

H100 = records.latest()


def _live(monkeypatch, name: str) -> results.Live:
    """A Live source for a GPU called `name` whose 'measurements' are the record's rows, 1.5x faster."""
    d = H100.device
    facts = device.DeviceFacts(name, tuple(d["compute_capability"]), d["sm_count"], d["clock_mhz"],
                               d["fp32_lanes_per_sm"], d["mem_clock_mhz"], d["bus_width_bits"], d["l2_bytes"],
                               d["smem_per_block_optin"], d["driver_cuda"], d["runtime_cuda"])
    live = results.Live(facts)
    live.__dict__["_copy_gbs"] = 1.0          # no copy to measure

    def result(spec, params, size):
        row = dict(H100.result(spec.name, params, results.shape(size)))
        return {**row, "gflops": row["gflops"] * 1.5, "ratio": row["ratio"] * 1.5}
    live.result = result
    monkeypatch.setattr(results, "here", lambda: live)
    return live


def test_a_gpu_with_no_record_shows_the_h100_record_beside_its_own(monkeypatch, capsys):
    live = _live(monkeypatch, "NVIDIA H200")
    assert live.reference is not None and live.reference.device["name"] == H100.device["name"]
    spec = registry.get("03")
    recorded = H100.result(spec.name, spec.defaults, (4096, 4096, 4096))
    gl.show_vs_cublas("03")
    out = capsys.readouterr().out
    assert f"{recorded['gflops'] * 1.5 / 1e3:.2f}" in out, "the live figure"
    assert f"{recorded['gflops'] / 1e3:.2f}" in out and H100.label in out, "the record's, labelled"
    gl.show_tunable("03", "TILE")
    out = capsys.readouterr().out
    assert f"{H100.device['name']} record: TFLOP/s" in out and "Beside it" in out


def test_on_the_recorded_gpu_and_without_a_gpu_nothing_is_shown_beside(monkeypatch, capsys):
    live = _live(monkeypatch, H100.device["name"])
    assert live.reference is None
    gl.show_tunable("03", "TILE")
    assert "record: TFLOP/s" not in capsys.readouterr().out
    recorded = results.Recorded(H100, "no GPU here")
    assert recorded.reference is None and recorded.beside(registry.get("03"), {}, 4096) is None


@pytest.mark.parametrize("lesson", ["show_sweep", "show_ladder"])
def test_tables_of_many_rows_get_the_two_columns(lesson, monkeypatch, capsys):
    live = _live(monkeypatch, "NVIDIA H200")
    live.sweep = lambda spec, size: [live.result(spec, cfg, size) for cfg in spec.explorer_configs()[:3]]
    live.best = lambda spec, size: live.result(spec, spec.defaults, size)
    getattr(gl, lesson)(*(["03"] if lesson == "show_sweep" else [["02", "03"]]))
    out = capsys.readouterr().out
    assert "record: TFLOP/s | its share of cuBLAS" in out


@pytest.mark.parametrize("lesson,args", [("show_ladder_over_shapes", []), ("show_final_table", ["11"]),
                                         ("show_cublas_sweep", [])])
def test_whole_programmes_get_the_records_programme_beside(lesson, args, monkeypatch, capsys):
    live = _live(monkeypatch, "NVIDIA H200")
    live.campaign = lambda name, what, measure: H100.section(name, what)    # 'measured now': the record's
    getattr(gl, lesson)(*args)
    out = capsys.readouterr().out
    assert "Beside it" in out and H100.label in out


def test_a_chapter_on_a_gpu_with_no_record_says_whose_figures_the_text_quotes(monkeypatch, capsys):
    """The chapter's first cell (`import gemmlab.lessons`) says, on such a GPU, that the text's figures are the
    record's and how this GPU's ceilings differ; with no GPU, or on the recorded GPU, it says nothing."""
    import dataclasses
    import importlib
    live = _live(monkeypatch, "NVIDIA H200")
    live.facts = dataclasses.replace(live.facts, mem_clock_mhz=live.facts.mem_clock_mhz * 1.44)   # faster memory
    importlib.reload(gl)
    out = capsys.readouterr().out
    assert "Live on NVIDIA H200" in out and f"{H100.device['name']} record ({H100.data['date']})" in out
    assert f"rated DRAM bandwidth {live.attributes()['dram_gbs']:.0f} GB/s against {H100.device['dram_gbs']:.0f} GB/s" in out
    assert "the same SMs, FP32 peak" in out, "the ceilings it shares with the record, named once"
    for quiet in (_live(monkeypatch, H100.device["name"]), results.Recorded(H100, "no GPU here")):
        monkeypatch.setattr(results, "here", lambda: quiet)
        importlib.reload(gl)
        assert capsys.readouterr().out == ""


def test_a_live_steps_table_marks_its_profile_columns_as_the_records(monkeypatch, capsys):
    """Live, the steps table's timings are this GPU's and its Nsight Compute columns the record's: each profile
    column's header says whose; every row names its configuration."""
    _live(monkeypatch, "NVIDIA H200")
    gl.show_steps("07_prefetch", operands=False)
    header, _, *rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    whose = f"({H100.device['name'].removeprefix('NVIDIA ')} record)"
    assert f"issued per cycle per scheduler {whose}" in header and f"wait stalls {whose}" in header
    assert "TFLOP/s |" in header.replace(f"TFLOP/s {whose}", "")
    assert [row.split(" | ")[1] for row in rows] == ["BM=64 BK=16 TN=4 PREFETCH=0", "BM=64 BK=16 TN=4",
                                                      "PREFETCH=0", "defaults"]


def test_the_ladder_beside_a_live_one_shows_the_records_figures_as_its_other_tables_do(monkeypatch, capsys):
    """Beside the live ladder, a configuration the record shows elsewhere at a size (chapter 08's best at 4096, in
    the ladder at 4096) has that figure, as the ladder has with no GPU: one configuration at one size, one figure."""
    from gemmlab import course
    live = _live(monkeypatch, "NVIDIA H200")
    live.campaign = lambda name, what, measure: H100.section(name, what)
    gl.show_ladder_over_shapes()
    out = capsys.readouterr().out
    beside = out.split("Beside it")[1]
    spec = registry.get("08")
    shapes = [tuple(s) for s in course.LADDER_SHAPES]
    row = next(r for r in H100.section("ladder", "the ladder") if r["kernel"] == spec.name
               and records.shape_key(r) == (4096, 4096, 4096))
    shown = H100.result(spec.name, row["params"], (4096, 4096, 4096))
    line = next(l for l in beside.splitlines() if l.startswith(f"| {spec.title} |"))
    assert line.split(" | ")[2 + shapes.index((4096, 4096, 4096))] == f"{shown['gflops'] / 1e3:.1f} ({shown['ratio']:.0%})"
