"""plan.launch: a shape's launch in numbers (tiles, waves, copy path, roofline) and the findings that
explain why a shape runs slower than a large square. Arithmetic from the spec, the build and the
GPU's facts (this GPU's or the record's): it needs no GPU."""
import subprocess
import sys

import pytest

from gemmlab import launch as plan, registry, spec
from gemmlab.library import dispatch
from gemmlab.spec import Problem, UnsupportedShape


def test_a_large_multiple_of_the_tile_has_nothing_to_report():
    launch = plan.launch(4096, 4096, 4096)
    assert launch.tiles == 32 * 16 and launch.fast_tiles == launch.tiles and launch.covered == 1
    assert launch.findings() == []
    assert "nothing here costs speed" in str(launch)


def test_the_waves_are_those_the_kernel_header_counts():
    """kernels/11's header: at 6144 x 6144 the 1,152 tiles of 128 x 256 make 8.73 waves on 132 SMs."""
    launch = plan.launch(6144, 6144, 6144)
    assert launch.tiles == 1152
    if launch.slots == 132:
        assert f"{launch.tiles / launch.slots:.2f}" == "8.73"
    assert launch.slot_use == pytest.approx(launch.tiles / launch.slots / -(-launch.tiles // launch.slots))


def test_a_ragged_shape_leaves_the_fast_copy_path():
    launch = plan.launch(4095, 4095, 4095)
    assert launch.fast_tiles == 0
    (finding,) = [f for f in launch.findings() if "copy path" in f]
    assert "K = 4095 is not a multiple of BK = 16" in finding and "4095 floats" in finding
    padded_rows = plan.launch(4096, 4096, 4095)
    assert padded_rows.fast_tiles == 0, "K not a multiple of BK: every block takes the checked path"
    assert plan.launch(4100, 4096, 4096).fast_tiles == (4100 // 128) * (4096 // 256), "edge tiles only"
    assert plan.launch(4095, 4095, 4095, params={"INTERIOR": 0, "SPREAD": 0}).fast_tiles == 0, "B's rows misaligned"
    assert plan.launch(4096, 4096, 4095, params={"INTERIOR": 0, "SPREAD": 0}).fast_tiles == 512, \
        "without INTERIOR every block with aligned rows copies 16 bytes at a time"


def test_a_small_grid_and_a_skinny_product_are_named():
    small = plan.launch(512, 512, 512)
    assert small.tiles == 8 and small.slot_use == pytest.approx(8 / small.slots)
    assert any(f"{small.slot_use:.0%} of the slots' time busy" in f for f in small.findings())
    skinny = plan.launch(16, 4096, 4096)
    assert skinny.findings()[0].startswith("memory-bound"), "the roofline's other side comes first"
    assert skinny.covered == pytest.approx(16 / 128)
    assert not plan.launch(4096, 4096, 4096).intensity < plan.launch(4096, 4096, 4096).ridge


def test_a_short_k_loop_is_named_for_tiled_kernels_only():
    """A tiled kernel's block of few K steps spends much of its time outside its loop; chapter 12's streaming
    kernel has no tile loop (K is split over its threads, or held whole at a small K), so it is not told so."""
    tiled = plan.launch(4096, 4096, 64, kernel="05_register_tiling")
    (finding,) = [f for f in tiled.findings() if "along K" in f]
    assert finding.startswith(f"each block runs {tiled.piece_steps} steps of ") and "outside its K loop" in finding
    assert not [f for f in plan.launch(4096, 4096, 4096, kernel="05_register_tiling").findings() if "along K" in f]
    streaming = plan.launch(4096, 4096, 27, kernel="12_skinny", params={"SIDE": 2, "EDGE": 8, "UNROLL": 2})
    assert not [f for f in streaming.findings() if "along K" in f]


def test_a_split_last_wave_is_counted_as_the_launcher_plans_it():
    whole = plan.launch(6144, 6144, 6144)
    split = plan.launch(6144, 6144, 6144, params={"SPLIT": 4})
    assert split.split_tiles > 0 and split.blocks == split.tiles + split.split_tiles * 3
    assert split.slot_use > whole.slot_use
    assert split.wave_time == spec.split_time(split.tiles, split.k_steps, split.slots, 4, split.split_tiles)


def test_the_command_line_prints_the_plan_and_refuses_with_the_rule():
    final = plan.final_kernel().name
    ok = subprocess.run([sys.executable, "-m", "gemmlab", "plan", "4097", "4097", "4097", "--kernel", final],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "561 tiles" in ok.stdout and "checked 4-byte copy path" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "gemmlab", "plan", "512", "512", "512", "-D", "BK=8"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unroll-within-tile" in bad.stderr and "Traceback" not in bad.stderr
    shape = subprocess.run([sys.executable, "-m", "gemmlab", "plan", "509", "515", "130", "--kernel", "07"],
                           capture_output=True, text=True)
    assert shape.returncode == 2 and "16-byte-rows" in shape.stderr and "Traceback" not in shape.stderr


def test_chapter_11_shows_the_final_kernels_shape_costs():
    """Chapter 11's table of shape costs is the final kernel's (its words on the table are claim markers in the
    notebook, checked by gemmlab.research.claims against plan.launch)."""
    import json
    from pathlib import Path
    nb = json.loads((Path(__file__).resolve().parent.parent / "notebooks" / "11_last_wave.ipynb").read_text())
    final = plan.final_kernel().name
    assert any(f'gl.show_shape_costs("{final}"' in "".join(c["source"]) for c in nb["cells"])


def test_a_one_element_product_reads_as_one_tile_and_a_sliver_of_the_slots():
    """1 x 1 x 1: '1 tile' and '1 K step', not '1 tiles'; a share of the slots that rounds to 0% reads 'under 1%'
    and its blocks per slot keep a digit."""
    one = plan.launch(1, 1, 1, "12_skinny")
    text = str(one)
    assert "1 tile of" in text and "1 tiles" not in text and "1 K step a tile" in text
    assert "under 1% of the slots' time busy" in text and "0.00 blocks" not in text
    reasons = dispatch.plan(1, 1, 1).reasons()
    assert reasons[0].startswith("waves: 1 tile of") and "under 1%" in reasons[0] and " 0.00 " not in reasons[0]


def test_a_c_smaller_than_every_tile_is_sent_to_another_kernel_not_to_smaller_tiles():
    spec = registry.get("13_split_k")
    with pytest.raises(UnsupportedShape, match="No tile of this kernel fits .* chapter 12's"):
        spec.check_shape(spec.resolve({}), Problem(1, 1, 1))
    with pytest.raises(UnsupportedShape, match=r"Pick smaller tiles \(BM, BN\), down to 32 x 32"):
        spec.check_shape(spec.resolve({}), Problem(40, 1000, 100))


def test_a_runner_up_whose_launch_cuts_fewer_pieces_than_its_split_says_so():
    """At 4096^3 chapter 13's SPLIT values all run as one piece and are priced alike: the runner-up's label says
    what runs, where it names more pieces than its launch cuts."""
    text = str(dispatch.plan(4096, 4096, 4096))
    (line,) = [ln for ln in text.splitlines() if ln.strip().startswith("next best")]
    entry = next(part for part in line.split("; ") if "13_split_k" in part)
    assert "SPLIT=" not in entry or "run as 1 piece)" in entry
    assert "run as" not in next(part for part in line.split("; ") if "10_issue_rate" in part)


def test_a_call_of_several_launches_is_rated_over_all_of_them():
    """2^31 - 1 rows make 4,097 launches, each priced alike: the rate is the whole call's FLOPs over all of them,
    not over one (which read 234 TFLOP/s, over three times the FP32 peak)."""
    p = dispatch.plan(2**31 - 1, 1, 1)
    first = str(p).splitlines()[0]
    assert p.launches == 4097 and f"for each of {p.launches:,} launches" in first
    rate = float(first.rsplit("(", 1)[1].split()[0])
    assert rate == pytest.approx(p.problem.flops / (p.predicted_us * p.launches * 1e-6) / 1e12, abs=0.05) and rate < 1
