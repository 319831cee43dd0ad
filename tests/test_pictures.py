"""The pictures drawn from a kernel's parameters (no GPU): each runs at the default and extreme
configurations of its chapter's kernel, refuses (in words) a kernel without what it needs, and the
numbers it computes hold on known cases; the reworked plots run on the record's data."""
from collections import Counter

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import gemmlab.lessons as gl  # noqa: E402
from gemmlab import config_plots, course, pictures, plots, records, registry, results, roofline, sass  # noqa: E402
from gemmlab.compile import compile_kernel  # noqa: E402
from gemmlab.lessons import chapter09, models  # noqa: E402
from gemmlab.spec import Problem  # noqa: E402


@pytest.fixture(autouse=True)
def no_windows(monkeypatch):
    """plt.show closes the figure instead; every test counts the figures it drew."""
    shown = []

    def show(*args, **kwargs):
        shown.append(plt.gcf())
        plt.close("all")
    monkeypatch.setattr(plt, "show", show)
    yield shown
    plt.close("all")


def configs(name):
    return registry.get(name).extreme_configs()   # the defaults first, then the extremes


def ids(name):
    return [registry.get(name).changes_label(c) or "defaults" for c in configs(name)]


# --- every picture at the default and extreme configurations ------------------------------------

PICTURES = [  # (lesson, kernel of its chapter, extra arguments)
    (gl.show_tile_walk, "02_smem_tiling", {}),
    (gl.show_sectors, "02_smem_tiling", {}),
    (gl.show_sectors, "03_coalescing", {}),
    (gl.show_outer_product, "05_register_tiling", {"k": 1}),
    (gl.show_shared_loads, "05_register_tiling", {}),
    (gl.show_shared_loads, "08_warp_tiling", {"operand": "A"}),
    (gl.show_shared_loads, "08_warp_tiling", {"operand": "B"}),
    (gl.show_prefetch_timeline, "07_prefetch", {}),
    (gl.show_stage_ring, "09_pipeline", {}),
    (gl.show_ffma_order, "08_warp_tiling", {}),
    (gl.show_ffma_order, "10_issue_rate", {}),
    (gl.show_last_wave, "11_last_wave", {"slots": 132}),
]
# The defaults in the fast tier, the extremes in the heavy one. The last wave is drawn block slot by block
# slot (about a second a picture): its defaults and two extremes; the wave model itself is checked below on
# known cases.
CASES = [pytest.param(show, name, extra, cfg, marks=[pytest.mark.slow] if i else [],
                      id=f"{show.__name__}-{name}-{registry.get(name).changes_label(cfg) or 'defaults'}")
         for show, name, extra in PICTURES
         for i, cfg in enumerate(configs(name)[:3] if show is gl.show_last_wave else configs(name))]


@pytest.mark.parametrize("show,name,extra,cfg", CASES)
def test_every_picture_draws_at_default_and_extreme_configs(show, name, extra, cfg, no_windows):
    show(name, **extra, **cfg)
    assert len(no_windows) == 1


def test_the_last_wave_takes_its_slots_from_the_builds_occupancy(no_windows, capsys):
    gl.show_last_wave("11_last_wave")
    per_sm = compile_kernel("11_last_wave").occupancy.blocks_per_sm
    assert f"{132 * per_sm:,} slots (132 SMs x {per_sm} block" in capsys.readouterr().out
    assert len(no_windows) == 1


@pytest.mark.parametrize("show,name", [
    (gl.show_tile_walk, "01_naive"),               # stages no tiles
    (gl.show_sectors, "05_register_tiling"),       # loads its tiles with a mapping of its own
    (gl.show_outer_product, "03_coalescing"),      # inner products
    (gl.show_shared_loads, "04_bank_conflicts"),   # no model of its shared reads (smem_word)
    (gl.show_prefetch_timeline, "08_warp_tiling"),  # no PREFETCH to switch
    (gl.show_stage_ring, "07_prefetch"),           # no STAGES
    (gl.show_ffma_order, "02_smem_tiling"),        # no register patch
])
def test_a_kernel_without_what_the_picture_needs_is_refused_in_words(show, name, no_windows, capsys):
    show(name)
    assert no_windows == []
    assert registry.get(name).name in capsys.readouterr().out


# --- the numbers the pictures compute ------------------------------------------------------------

def _requests(name, size=4096, **params):
    spec = registry.get(name)
    return models.warp_requests(spec, spec.resolve(params), Problem(size, size, size))


def test_the_naive_row_mapping_moves_more_sectors_per_request_than_coalescing():
    before, after = _requests("02_smem_tiling"), _requests("03_coalescing")
    for operand in "ABC":
        assert models.sectors_per_request(before, operand) == 32     # one sector per lane
        assert models.sectors_per_request(after, operand) == 4       # 32 floats in a row: 128 bytes
    # narrower tiles put two rows in a warp: still far apart before, two sectors a row after
    before, after = _requests("02_smem_tiling", TILE=16), _requests("03_coalescing", TILE=16)
    assert models.sectors_per_request(before, "A") == 16 and models.sectors_per_request(after, "A") == 4
    naive = _requests("01_naive")
    assert [models.sectors_per_request(naive, o) for o in "ABC"] == [32, 1, 32]   # B: one float, broadcast


def test_the_sector_model_agrees_with_the_recorded_counters():
    rec = records.latest()
    checked = 0
    for name in registry.KERNELS:
        spec = registry.get(name)
        if models.sectors_supported(spec):
            continue
        for entry in rec.counters(name):
            c = {records.COUNTERS[k]: v for k, v in entry["counters"].items() if k in records.COUNTERS}
            requests = _requests(name, entry["size"], **entry["params"])
            loads = [len(r.sectors) for r in requests if r.operand in "AB"]
            stores = [len(r.sectors) for r in requests if r.operand == "C"]
            assert sum(loads) / len(loads) == pytest.approx(c["global load sectors"] / c["global load requests"], rel=0.01)
            assert sum(stores) / len(stores) == pytest.approx(c["global store sectors"] / c["global store requests"],
                                                              rel=0.01)
            checked += 1
    assert checked >= 4


def _loads(name, operand, **params):
    spec = registry.get(name)
    return models.shared_loads(spec, spec.resolve(params), operand)


def test_128_bit_shared_loads_go_in_phases_of_8_lanes():
    for load in _loads("08_warp_tiling", "B") + _loads("11_last_wave", "A") + _loads("07_prefetch", "B"):
        assert load.width == 4 and load.phase_lanes == 8
        assert [len(p) for p in load.phases()] == [8, 8, 8, 8]
    scalar = _loads("05_register_tiling", "B", BM=64, BK=16, TN=1)       # one column a thread: LDS.32
    assert scalar[0].width == 1 and [len(p) for p in scalar[0].phases()] == [32]


def test_banks_per_phase_on_known_cases():
    passes = lambda loads: Counter(ld.wavefronts(p) for ld in loads for p in ld.phases())
    # 08: a sub-tile's lanes read consecutive 16-byte vectors of B: one pass each phase
    assert set(passes(_loads("08_warp_tiling", "B"))) == {1}
    assert set(passes(_loads("11_last_wave", "B"))) == {1} and set(passes(_loads("11_last_wave", "A"))) == {1}
    # 07 with TN=8: lanes 32 bytes apart, lanes 0 and 4 of a phase meet in banks 0-3: 2-way
    assert set(passes(_loads("07_prefetch", "B"))) == {2}
    assert set(passes(_loads("07_prefetch", "B", BM=64, BK=16, TN=4))) == {1}
    first = _loads("07_prefetch", "B")[0]
    assert [first.words[lane] % 32 for lane in range(8)] == [0, 8, 16, 24, 0, 8, 16, 24]


# Chapter 08's patch (what its chapter shows) in the fast tier; the rest are builds of their own (the heavy tier).
@pytest.mark.parametrize("name,params", [
    pytest.param("05_register_tiling", {}, marks=pytest.mark.slow),
    pytest.param("05_register_tiling", {"BM": 64, "BK": 16, "TN": 1}, marks=pytest.mark.slow),
    pytest.param("07_prefetch", {}, marks=pytest.mark.slow), ("08_warp_tiling", {"WN": 64, "TM": 8}),
    pytest.param("11_last_wave", {}, marks=pytest.mark.slow)])
def test_the_shared_load_model_counts_the_loads_in_the_sass(name, params):
    """Per tile, as many loads of each width as the hot loop's SASS (its k loop fully unrolled)."""
    spec = registry.get(name)
    full = spec.resolve(params)
    model = Counter({4: "LDS.128", 2: "LDS.64", 1: "LDS"}[ld.width] for op in "AB" for ld in _loads(name, op, **params))
    ops = Counter(op.split()[0] for op in sass.hot_region(compile_kernel(spec, full)))
    assert {k: ops[k] for k in model} == dict(model)


def test_the_snake_order_shares_an_operand_between_every_two_ffmas():
    rows, cols = 8, 8
    straight, snake = models.ffma_order(rows, cols, False), models.ffma_order(rows, cols, True)
    assert sorted(straight) == sorted(snake) == [(i, j) for i in range(rows) for j in range(cols)]
    assert models.reused_operands(straight).count("") == rows - 1     # each new row starts afresh
    assert "" not in models.reused_operands(snake)
    assert models.reused_operands(snake).count("b") == rows - 1


def test_prefetching_hides_the_load_in_the_model():
    spec = registry.get("07_prefetch")
    costs = models.tile_costs(spec, spec.resolve())
    end = lambda bars: max(s + d for _, s, d, _ in bars)
    assert end(models.timeline(costs, 3, True)) < end(models.timeline(costs, 3, False))
    assert {b[0] for b in models.timeline(costs, 3, True)} == {"global loads in flight", "shared stores", "barrier",
                                                               "compute (FFMAs)"}


def test_the_last_wave_at_6144_cubed_splits_its_96_tiles():
    spec = registry.get("11_last_wave")
    problem = Problem(6144, 6144, 6144)
    whole = models.waves(spec, spec.resolve(), problem, 132)
    split = models.waves(spec, spec.resolve({"SPLIT": 4}), problem, 132)
    assert whole.tiles == 1152 and whole.last_wave == 96 and whole.split == 0 and whole.makespan == 9
    assert split.split == 96 and split.blocks == 1152 - 96 + 96 * 4
    assert split.blocks == spec.launch(spec.resolve({"SPLIT": 4}), problem, 132)[0][0]
    assert sum(1 for run in split.runs if run[3].startswith("piece")) == 96 * 4
    assert split.makespan < whole.makespan


def test_the_stage_ring_holds_tile_t_in_buffer_t_mod_stages(no_windows, monkeypatch):
    drawn = {}
    monkeypatch.setattr(pictures, "stage_ring", lambda spec, params, cells, columns, stages, label: drawn.update(cells))
    chapter09.show_stage_ring("09_pipeline", tiles=6, STAGES=3)
    for t in range(6):
        assert drawn[(t + 1, t % 3)] == ("computing", t)
        if t + 2 < 6:
            assert drawn[(t + 1, (t + 2) % 3)] == ("copies issued now", t + 2)


# --- the reworked plots, on the record's data ------------------------------------------------------

@pytest.fixture(scope="module")
def record():
    return records.latest()


@pytest.mark.parametrize("name", list(registry.KERNELS))
def test_config_bars_draw_every_recorded_sweep(name, record, no_windows):
    rows = record.at(name, (4096,) * 3)
    config_plots.config_bars(registry.get(name), rows, record.label)
    assert len(no_windows) == 1


def test_many_configurations_become_a_heatmap(record, no_windows):
    rows = record.at("08_warp_tiling", (4096,) * 3)
    assert len(rows) > 16
    config_plots.config_bars(registry.get("08_warp_tiling"), rows, record.label)
    assert any(ax.images for ax in no_windows[0].axes), "a heatmap, not a bar per row"


def test_explorer_bars_of_the_naive_kernel_use_a_log_axis(record):
    row = record.result("01_naive", registry.get("01_naive").defaults, (4096,) * 3)
    fig = config_plots.explorer_bars("01 naive", row["gflops"], row["cublas_gflops"], 66900.0, record.label)
    assert fig.axes[0].get_xscale() == "log"


def test_the_ladder_joins_no_unrelated_shapes(record, no_windows):
    rows, shapes = record.data["ladder"], [tuple(s) for s in course.LADDER_SHAPES]
    plots.ladder(rows, shapes, record.label, {n: s.title for n, s in registry.KERNELS.items()})
    ax = no_windows[0].axes[0]
    assert ax.get_xlabel() == "M x N x K"
    cubes = {i for i, s in enumerate([s for s in shapes if s[0] == s[1] == s[2]])}
    for line in ax.get_lines():
        if line.get_linestyle() not in ("None", "none", ""):
            assert len(line.get_xdata()) <= len(cubes), "a line runs only through the cubes"


def test_the_final_search_is_a_heatmap(no_windows):
    gl.show_final_search("11_last_wave")
    assert any(ax.images for ax in no_windows[0].axes)


def test_the_ridge_label_sits_where_no_point_is(record, no_windows):
    peak, bw = 66900.0, 3350.0
    ridge = roofline.ridge_point(peak, bw)
    points = [("on the ridge", ridge, peak / 30), ("naive", 0.25, 500.0), ("near", ridge * 1.3, peak / 2)]
    plots.roofline(points, peak, bw, record.label)
    ax = no_windows[0].axes[0]
    label = next(t for t in ax.texts if t.get_text().startswith("ridge"))
    fig = no_windows[0]
    fig.canvas.draw()
    box = label.get_window_extent()
    for _, x, y in points:
        px, py = ax.transData.transform((x, y / 1e3))
        assert not (box.x0 - 3 <= px <= box.x1 + 3 and box.y0 - 3 <= py <= box.y1 + 3), "a point under the label"


def test_the_hierarchical_roofline_draws_no_point_for_a_level_a_kernel_leaves_alone(record, no_windows):
    """The naive kernel declares no shared memory (one wavefront per warp is what ncu counts for it):
    no shared-memory point for it; every kernel that stages tiles in shared memory keeps its own."""
    from gemmlab.lessons import profiles
    assert compile_kernel("01_naive", registry.get("01_naive").defaults).resources.static_smem == 0
    for chapter, naive_in in (("01_naive", True), ("02_smem_tiling", True), ("03_coalescing", False)):
        no_windows.clear()
        gl.show_hierarchical_roofline(chapter)
        ax = no_windows[0].axes[0]
        rows = [(caption, p) for caption, p in profiles.compared(record, chapter) if profiles.intensities(p)]
        drawn = {line.get_label(): len(line.get_xdata()) for line in ax.get_lines()
                 if line.get_label() in dict(rows)}
        for caption, p in rows:
            levels = profiles.intensities(p)
            expected = len(levels) - (p["kernel"] == "01_naive")
            assert drawn[caption] == expected, caption
        assert any(p["kernel"] == "01_naive" for _, p in rows) == naive_in


def test_chapter_12s_roofline_names_each_shape_once_and_no_name_covers_another(no_windows):
    """Chapter 12's roofline from the record: one name a shape, at the kernel's point, with cuBLAS's point hollow in
    the same colour beside it and a legend saying which is which; no name covers another, nor the peak's label, as
    the figure draws them (a guess of 5.5 pixels a character, 20% short at the notebook's 100 dpi, let 7 pairs
    overlap; a name for each of the two points of a shape crowded 24 names)."""
    import matplotlib.text as mtext
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from gemmlab.lessons import chapter12
    shapes = chapter12.fastest_at_regime_shapes(results.record(), chapter12._streaming_kernel())
    chapter12.show_skinny_roofline()
    fig = no_windows[0]
    ax = fig.axes[0]
    canvas = FigureCanvasAgg(fig)                      # the figure was closed when shown: drawn again here
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(t.get_text(), mtext.Text.get_window_extent(t, renderer)) for t in ax.texts
             if not t.get_text().startswith("ridge")]
    names = {name for name, _ in boxes if not name.startswith("FP32 peak")}
    assert names == {records.shape_label(shape) for shape in shapes}
    hollow = [line for line in ax.lines if line.get_marker() == "o" and line.get_markerfacecolor() == "none"]
    assert len(hollow) == len(shapes)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "12_skinny (fastest recorded configuration)", "cuBLAS FP32, same run"]
    crossed = [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:] if box.overlaps(other)]
    assert not crossed, crossed


def test_point_labels_stay_inside_the_axes_however_crowded(record, no_windows):
    """Chapter 12's roofline has two dozen points, pairs of them at one intensity: every name lands inside the axes
    (not under the x axis's title), and the ridge's label stays."""
    peak, bw = 66900.0, 3350.0
    points = []
    for i, (m, k) in enumerate([(1, 2048), (8, 2048), (48, 2048), (128, 4096), (2048, 8192), (8192, 1024),
                                (6144, 3072), (4096, 4), (3000, 7), (6144, 9), (2048, 16), (8192, 27)]):
        x = 0.5 + k / 64
        points += [(f"{m}x4096x{k}", x, 1000.0 + 300 * i), (f"cuBLAS {m}x4096x{k}", x, 1100.0 + 300 * i)]
    plots.roofline(points, peak, bw, record.label)
    fig = no_windows[0]
    ax = fig.axes[0]
    fig.canvas.draw()
    axes_box = ax.get_window_extent()
    names = [t for t in ax.texts if t.get_text() in {p[0] for p in points}]
    assert len(names) == len(points)
    for t in names:
        box = t.get_window_extent()
        assert axes_box.x0 - 1 <= box.x0 and box.x1 <= axes_box.x1 + 1 and axes_box.y0 - 1 <= box.y0 \
            and box.y1 <= axes_box.y1 + 1, t.get_text()
    assert any(t.get_text().startswith("ridge") for t in ax.texts)


def test_chapter_12s_roofline_draws_the_records_points_under_the_records_roof(no_windows, monkeypatch):
    """Its points are the record's on any machine, so the roof is the record's GPU's too: on another GPU (an H200's
    4,814 GB/s) the ridge it names stays the record's (20 FLOP/B on the H100's record, where 14 was drawn)."""
    from gemmlab.lessons import chapter12
    rec = results.record()
    other = {**rec.device, "name": "NVIDIA H200", "dram_gbs": 4814.0}

    class OtherGPU:
        def device(self):
            return other
    monkeypatch.setattr(results, "here", OtherGPU)
    chapter12.show_skinny_roofline()
    ridge = [t.get_text() for t in no_windows[0].axes[0].texts if t.get_text().startswith("ridge")]
    expected = rec.device["peak_fp32_tflops"] * 1e3 / rec.device["dram_gbs"]
    assert ridge == [f"ridge {expected:.0f} FLOP/B"] and round(expected) != round(66.9e3 / 4814.0)


def test_a_search_of_many_tunables_wraps_its_panels_to_a_notebooks_width(no_windows):
    """Chapter 10's search varies 8 tunables: its panels wrap, at most config_plots.TUNING_COLUMNS a row, so that the
    figure stays about a notebook's width (in one row it was 18.6 inches, shrunk to half on the page), one panel a
    tunable and none empty shown."""
    gl.show_tuning("10")
    fig = no_windows[0]
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 8 and fig.get_figwidth() <= 2.2 * config_plots.TUNING_COLUMNS + 1
    assert {ax.get_xlabel() for ax in shown} == {"BN", "BK", "STAGES", "KUNROLL", "GROUP", "SNAKE", "INTERIOR", "SPREAD"}
