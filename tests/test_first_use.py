"""gemmlab.matmul on a GPU with no fitted model: its first call of a shape's class times the model's best few
options once, keeps the fastest that is right, remembers it and says so (gemmlab/library/first_use.py).
The timing is faked here; on a GPU, .ci/matmul-first-use measures the whole of it."""
import json
import math

import pytest

from gemmlab import bench
from gemmlab.library import dispatch, first_use
from gemmlab.spec import Problem


@pytest.fixture
def no_model(tmp_path, monkeypatch):
    """A GPU with no model of its own (the plans still come from the H100's, scaled), a store in tmp_path."""
    monkeypatch.setattr(first_use, "has_model", lambda gpu: False)
    monkeypatch.setattr(first_use, "_gpu_key", lambda: "Some GPU|driver 13000|gemmlab 0.1.0")
    monkeypatch.setattr(first_use, "_store_path", lambda: tmp_path / first_use.STORE_NAME)
    monkeypatch.setattr(first_use, "_adjusted", {})
    return tmp_path / first_use.STORE_NAME


def test_a_class_is_the_sizes_rounded_up_and_the_rows_alignment():
    assert first_use.class_key(Problem(3000, 4096, 1000), True) == "3072x4096x1024"
    assert [first_use._bucket(n) for n in (1, 3, 5, 6, 7, 5000, 6144, 8192)] == [1, 3, 6, 6, 8, 6144, 6144, 8192]
    assert first_use.class_key(Problem(1, 2, 3), True) == "1x2x3 N%4 K%4"
    assert first_use.class_key(Problem(4096, 4095, 4096), False) == "4096x4096x4096 unaligned N%4"


def test_a_gpu_with_a_model_of_its_own_keeps_the_plan(on_record):
    plan = dispatch.plan(4096, 4096, 4096)          # the record's GPU, which has a model
    assert first_use.adjusted(plan, timer=lambda options: pytest.fail("timed")) is plan


def test_the_first_call_times_the_best_options_keeps_the_fastest_right_one_and_says_so(no_model, capsys):
    plan = dispatch.plan(2048, 2048, 2048)
    timed = []

    def timer(options):
        timed.append([o.label for o in options])
        return [float(len(options) - i) for i in range(len(options))]      # the model's last option is fastest
    wrong = set()
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: o.label not in wrong)
    assert len(timed) == 1 and len(timed[0]) == first_use.CANDIDATES
    assert chosen.choice.label == timed[0][-1] and chosen.choice.label != plan.choice.label
    assert "tuned on first use" in chosen.basis
    said = capsys.readouterr().err
    assert "has no fitted model" in said and "2048x2048x2048" in said and chosen.choice.label in said
    # remembered: a new process (memo emptied) at another shape of the class times nothing and says nothing
    first_use._adjusted.clear()
    again = first_use.adjusted(dispatch.plan(2000, 2000, 2040), timer=lambda options: pytest.fail("timed again"))
    assert first_use._config(again.choice) == first_use._config(chosen.choice)
    assert capsys.readouterr().err == ""


def test_a_class_whose_timing_confirms_the_model_leaves_its_other_shapes_to_the_model(no_model):
    """5000³ and 6144³ share a class, and their best tiles differ. Where the options timed at 5000³ run exactly as
    priced, 6144³ runs the model's own choice for it, not 5000³'s winner (which cost 6144³ 7% on an H200)."""
    first = dispatch.plan(5000, 5000, 5000)
    first_use.adjusted(first, timer=lambda options: [o.predicted_us / 1e3 for o in options], say=False)
    other = dispatch.plan(6144, 6144, 6144)
    assert first_use.class_key(other.problem, True) == first_use.class_key(first.problem, True)
    assert first_use._config(other.choice) != first_use._config(first.choice), "the two shapes' best tiles differ"
    again = first_use.adjusted(other, timer=lambda options: pytest.fail("timed again"))
    assert again is other


def test_a_winner_much_faster_than_its_price_carries_to_the_class_and_a_wrong_option_never_runs(no_model):
    plan = dispatch.plan(2048, 2048, 2048)
    timed = []

    def timer(options):          # as priced, but the model's last runs in half its price, and its second (whose
        timed.extend(options)    # result is wrong) in a third
        return [o.predicted_us / 1e3 * {1: 0.3, len(options) - 1: 0.5}.get(i, 1.0) for i, o in enumerate(options)]
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: o is not timed[1], say=False)
    assert chosen.choice.label == timed[-1].label
    stored = next(iter(json.loads(no_model.read_text()).values()))
    assert stored["shape"] == "2048x2048x2048" and stored["factors"][first_use._config(timed[1])] is None
    again = first_use.adjusted(dispatch.plan(2000, 2000, 2040), timer=lambda options: pytest.fail("timed again"))
    assert first_use._config(again.choice) == first_use._config(chosen.choice) != first_use._config(timed[1])


def test_a_fast_option_that_is_wrong_is_not_kept(no_model):
    plan = dispatch.plan(2048, 2048, 2048)
    options = []

    def timer(found):
        options.extend(found)
        return [1.0, 0.5, 2.0, 3.0][:len(found)]
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: o is not options[1], say=False)
    assert chosen.choice.label == options[0].label, "the fastest is wrong: the next fastest"


def test_a_damaged_store_is_tuned_anew(no_model):
    no_model.write_text("{ not json")
    plan = dispatch.plan(1024, 1024, 1024)
    chosen = first_use.adjusted(plan, timer=lambda options: [1.0] * len(options), checker=lambda o: True, say=False)
    assert chosen.choice.label == plan.choice.label and "1024x1024x1024" in no_model.read_text()


def test_a_peeled_plan_is_kept_and_one_on_a_copy_of_b_is_timed_among_its_launchs_options_at_its_shape(no_model):
    """A call run on a copy of B (or in a padded buffer) times its launch's own best options at the launch's problem,
    once for that shape; a peeled one keeps its plan (its parts are launches of their own)."""
    peeled = dispatch.plan(2049, 2048, 2048)
    assert peeled.parts and first_use.adjusted(peeled, timer=lambda options: pytest.fail("timed")) is peeled
    plan = dispatch.plan(4095, 4095, 4095)          # B copied into 16-byte rows
    launch = plan.choice.launch
    assert plan.stage_ldb and launch.problem.ldb == plan.stage_ldb
    timed = []

    def timer(options):
        timed.append(options)
        return [float(len(options) - i) for i in range(len(options))]      # the model's last is fastest
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: True, say=False)
    assert len(timed) == 1 and len(timed[0]) == first_use.CANDIDATES
    assert all(o.launch.problem == launch.problem for o in timed[0]), "the launch's own options (B copied)"
    assert chosen.stage_ldb == plan.stage_ldb and chosen.choice.label == timed[0][-1].label != plan.choice.label
    assert "tuned on first use on this GPU, at this shape" in chosen.basis
    assert "shape 4095x4095x4095 ld 4095 4096 4095" in no_model.read_text()
    first_use._adjusted.clear()                    # a new process: remembered for the shape, not timed again
    again = first_use.adjusted(plan, timer=lambda options: pytest.fail("timed again"))
    assert again.choice.label == chosen.choice.label
    unaligned = dispatch.plan(4095, 4095, 4095, aligned=False)   # the timing's operands would take another path
    assert first_use.adjusted(unaligned, aligned=False, timer=lambda options: pytest.fail("timed")) is unaligned


@pytest.fixture
def on_record(monkeypatch):
    """Plans made for the record's GPU, which has its model, on any machine (another GPU here has none)."""
    from gemmlab import results
    monkeypatch.setattr(results, "here", lambda: results.Recorded(results.record(), "planned on the record's GPU"))
    dispatch.plan.cache_clear()                    # plans made for this machine's GPU before
    yield
    dispatch.plan.cache_clear()                    # the record's plans, not this machine's


@pytest.fixture
def fitted(tmp_path, monkeypatch, on_record):
    """The fitted GPU (the record's), a store in tmp_path, every build at hand."""
    from gemmlab import compile as compiler
    monkeypatch.setattr(first_use, "_gpu_key", lambda: "NVIDIA H100 80GB HBM3|driver 13000|gemmlab 0.1.0")
    monkeypatch.setattr(first_use, "_store_path", lambda: tmp_path / first_use.STORE_NAME)
    monkeypatch.setattr(first_use, "_adjusted", {})
    monkeypatch.setattr(compiler, "ready", lambda *args: True)
    return tmp_path / first_use.STORE_NAME


def _near_ties(plan):
    """The options a first call times: those the model prices within TIE of the plan's, one a configuration."""
    return [o for o in first_use._ranked(plan, True, plan.choice.launch.problem)
            if o.predicted_us <= plan.choice.predicted_us * (1 + first_use.TIE)][:first_use.CANDIDATES]


def test_on_the_fitted_gpu_a_small_calls_near_ties_are_timed_once_for_the_shape(fitted, capsys):
    """Where the model prices a small call's best options within TIE of each other (it is most often wrong
    there), its first call times them, keeps the fastest that is right, quietly, and remembers it for that shape."""
    plan = dispatch.plan(119, 26146, 121)
    near = _near_ties(plan)
    assert len(near) >= 2 and plan.predicted_us < first_use.TIE_BREAK_US, "this shape has near ties to time"
    timed = []

    def timer(options):
        timed.append(options)
        return [float(len(options) - i) for i in range(len(options))]      # the model's last is fastest
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: True)
    assert [o.label for o in timed[0]] == [o.label for o in near] and timed[0][0].label == plan.choice.label
    assert chosen.choice.label == near[-1].label != plan.choice.label
    assert "timed on first use" in chosen.basis and capsys.readouterr().err == "", "quietly"
    assert "shape 119x26146x121" in fitted.read_text()
    first_use._adjusted.clear()                    # a new process: the shape is remembered, not timed again
    again = first_use.adjusted(plan, timer=lambda options: pytest.fail("timed again"))
    assert again.choice.label == chosen.choice.label
    other = dispatch.plan(119, 26146, 120)         # another shape: its own first call times its own ties
    first_use.adjusted(other, timer=timer, checker=lambda o: True)
    assert len(timed) == (2 if len(_near_ties(other)) >= 2 else 1)


def test_on_the_fitted_gpu_a_fast_wrong_option_is_not_kept_and_a_tie_kept_is_the_plan(fitted):
    plan = dispatch.plan(119, 26146, 121)
    near = _near_ties(plan)
    chosen = first_use.adjusted(plan, timer=lambda options: [2.0] + [1.0] * (len(options) - 1),
                                checker=lambda o: o.label == plan.choice.label)
    assert chosen is plan, "every faster option was wrong: the model's choice stays, the plan as it was"
    assert len(near) >= 2


def test_on_the_fitted_gpu_long_calls_calls_in_parts_and_options_not_at_hand_keep_the_plan(fitted, monkeypatch):
    from gemmlab import compile as compiler
    never = dict(timer=lambda options: pytest.fail("timed"))
    for shape in ((4096, 4096, 4096), (2049, 2048, 2048)):      # past TIE_BREAK_US; peeled (one row past 2048)
        plan = dispatch.plan(*shape)
        assert first_use.adjusted(plan, **never) is plan, shape
    square = dispatch.plan(4096, 4096, 4096).choice.launch
    assert square.fast_tiles == square.tiles, "no tile on a checked copy path: past TIE_BREAK_US, not timed"
    tall = dispatch.plan(3 * dispatch.ROWS_PER_LAUNCH + 1, 8, 8)
    assert tall.launches == 4 and first_use.adjusted(tall, **never) is tall
    unaligned = dispatch.plan(119, 26146, 121, aligned=False)   # the timing's operands would take another copy path
    assert first_use.adjusted(unaligned, aligned=False, **never) is unaligned
    plan = dispatch.plan(119, 26146, 121)          # a first call compiles nothing: only the plan's own is at hand
    monkeypatch.setattr(compiler, "ready", lambda spec, params, arch: params == plan.choice.launch.params)
    assert first_use.adjusted(plan, **never) is plan


def test_on_the_fitted_gpu_a_long_call_with_checked_tiles_has_its_near_ties_timed(fitted):
    """Past TIE_BREAK_US, a call whose tiles partly take a kernel's checked copy path (one constant per path prices
    them) times its near ties too, where its operands are few enough to make on the host; 4096^3 (no checked tile,
    the other test) and a call past TIE_BREAK_CHECKED_FLOATS keep the plan."""
    plan = dispatch.plan(4097, 4095, 4096)
    launch = plan.choice.launch
    assert plan.predicted_us >= first_use.TIE_BREAK_US and launch.fast_tiles < launch.tiles
    assert not plan.parts and len(_near_ties(plan)) >= 2
    timed = []

    def timer(options):
        timed.append(options)
        return [float(len(options) - i) for i in range(len(options))]      # the model's last is fastest
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: True)
    assert [o.label for o in timed[0]] == [o.label for o in _near_ties(plan)]
    assert chosen.choice.label == timed[0][-1].label != plan.choice.label
    assert all(o.launch.problem == launch.problem for o in timed[0]), "the launch's own options (B copied)"
    wide = dispatch.plan(512, 50257, 4096)         # checked tiles, but 208 million floats of A and B to make
    p, w = wide.choice.launch.problem, wide.choice.launch
    assert w.fast_tiles < w.tiles and p.M * p.lda + p.K * p.ldb > first_use.TIE_BREAK_CHECKED_FLOATS
    assert wide.predicted_us >= first_use.TIE_BREAK_US and not wide.parts
    assert first_use.adjusted(wide, timer=lambda options: pytest.fail("timed")) is wide


def test_on_the_fitted_gpu_a_padded_call_is_tuned_among_its_launchs_options(fitted):
    plan = dispatch.plan(9722, 24, 4846)           # run 32 columns wide, in a padded buffer
    assert plan.pad_n == 32 and plan.predicted_us < first_use.TIE_BREAK_US
    timed = []

    def timer(options):
        timed.append(options)
        return [float(len(options) - i) for i in range(len(options))]
    chosen = first_use.adjusted(plan, timer=timer, checker=lambda o: True)
    if len(_near_ties(plan)) < 2:
        assert not timed and chosen is plan
        return
    assert all(o.launch.problem == plan.choice.launch.problem for o in timed[0]), "the padded launch's options"
    assert chosen.pad_n == 32 and chosen.choice.launch.problem.N == 32


@pytest.mark.gpu
def test_on_a_gpu_the_near_ties_are_timed_with_their_results_checked(monkeypatch):
    """The tie-break's own timer (no kernel of CuPy's, results checked on the host): the options at a shape time
    finite; one that leaves C unwritten times math.inf, and is never kept."""
    plan = dispatch.plan(119, 26146, 121)
    near = _near_ties(plan)[:2]
    assert len(near) == 2 and all(math.isfinite(t) and t > 0 for t in first_use._time_checked(near))
    real = bench.Kernel.launch

    def lazy(self, p, A, B, C):                    # the second option writes nothing
        if self.params != near[1].launch.params:
            real(self, p, A, B, C)
    monkeypatch.setattr(bench.Kernel, "launch", lazy)
    times = first_use._time_checked(near)
    assert math.isfinite(times[0]) and times[1] == math.inf


@pytest.mark.gpu
def test_on_a_gpu_matmul_runs_the_tie_breaks_choice_and_is_right(tmp_path, monkeypatch):
    import cupy as cp
    import gemmlab
    from gemmlab import library
    monkeypatch.setattr(first_use, "_store_path", lambda: tmp_path / first_use.STORE_NAME)
    monkeypatch.setattr(first_use, "_adjusted", {})
    A = cp.random.rand(119, 121, dtype=cp.float32)
    B = cp.random.rand(121, 26146, dtype=cp.float32)
    C = gemmlab.matmul(A, B)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    assert float(cp.abs(C - ref).max()) <= 1e-4 * float(cp.abs(ref).max())
    ran = library.ran(119, 26146, 121)
    if first_use.has_model(first_use.device_facts()[0]["name"]) and len(_near_ties(plan := dispatch.plan(119, 26146, 121))) >= 2:
        assert "shape 119x26146x121" in (tmp_path / first_use.STORE_NAME).read_text()
        assert ran.choice.label in [o.label for o in _near_ties(plan)]
