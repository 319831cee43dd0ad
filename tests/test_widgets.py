"""The explorer under whichever ipywidgets is installed: 8.x here, 7.7 (Colab's) in the second
environment `make test-widgets7` builds. Built with no GPU (results from the record): hover text on
every slider, a legal move shows its result, a refused one shows only the refusal."""
import os

import ipywidgets

from gemmlab import config_plots, registry, results, widgets
from gemmlab.spec import Problem


def _controls(box):
    header, controls, report, result, chart = box.children
    return {c.description: c for c in controls.children}


def test_the_explorer_builds_and_answers_its_sliders(capsys):
    major = int(ipywidgets.__version__.split(".")[0])
    assert major == int(os.environ.get("GEMMLAB_EXPECT_IPYWIDGETS", major)), ipywidgets.__version__
    assert major in (7, 8)
    spec = registry.get("03")
    box = widgets.explorer("03", arch="sm_90")
    sliders = _controls(box)
    assert set(sliders) == {p.name for p in spec.params} | {"M=N=K"}
    hover = "tooltip" if major >= 8 else "description_tooltip"
    assert getattr(sliders["TILE"], hover) == spec.tunable("TILE").doc
    capsys.readouterr()
    sliders["TILE"].value = 16                      # legal with OUTPUTS=4
    legal = capsys.readouterr().out
    assert "TILE=16" in legal and "TFLOP/s" in legal and "refused" not in legal
    chart = box.children[-1]
    row = results.here().result(spec, spec.resolve({"TILE": 16}), sliders["M=N=K"].value)
    assert chart.value == config_plots.explorer_bars_png(spec.title, row["gflops"], row["cublas_gflops"],
                                                  results.ceilings()[0], results.here().label), \
        "the chart is the one drawn from the shown result"
    assert chart.layout.display != "none"
    sliders["TILE"].value = 8                       # 8 x 4 outputs: refused by a rule
    refused = capsys.readouterr().out
    assert "refused" in refused and "no measurement" in refused and "TFLOP/s" not in refused
    assert chart.value == b"" and chart.layout.display == "none", "no chart of another configuration stays"


def test_a_move_that_compiles_says_so_at_once_and_hides_the_old_chart(capsys, monkeypatch):
    """A compile takes seconds: before it starts the explorer says what it compiles, and no chart of the last
    configuration stays beside that; a configuration already built, or refused, says nothing of compiling."""
    box = widgets.explorer("03", arch="sm_90")
    sliders, chart = _controls(box), box.children[-1]
    assert chart.layout.display != "none"
    seen, compile_kernel = [], widgets.compile_kernel

    def watched(*args, **kwargs):
        seen.append((capsys.readouterr().out, chart.layout.display))
        return compile_kernel(*args, **kwargs)

    monkeypatch.setattr(widgets, "compile_kernel", watched)
    monkeypatch.setattr(widgets, "ready", lambda *args: False)
    capsys.readouterr()
    sliders["TILE"].value = 16
    said, shown = seen[-1]
    assert "compiling" in said and "TILE=16" in said and shown == "none"
    assert "TFLOP/s" in capsys.readouterr().out and chart.layout.display != "none"
    monkeypatch.setattr(widgets, "ready", lambda *args: True)
    sliders["TILE"].value = 32
    said, shown = seen[-1]
    assert "compiling" not in said and shown != "none"
    capsys.readouterr()
    monkeypatch.setattr(widgets, "ready", lambda *args: False)
    sliders["TILE"].value = 8                       # refused by a rule: nothing is compiled
    out = capsys.readouterr().out
    assert "refused" in out and "compiling" not in out


def test_a_size_the_configuration_refuses_names_its_rule_and_draws_no_chart(capsys):
    """Chapter 12's SIDE=2 takes a K of 32 or less, and the explorer's sizes are squares: it says which rule refuses the
    size, draws no chart, and moving back to a side that runs there shows its result again."""
    box = widgets.explorer("12", arch="sm_90")
    sliders, chart = _controls(box), box.children[-1]
    capsys.readouterr()
    sliders["SIDE"].value = 2
    refused = capsys.readouterr().out
    assert "no measurement at" in refused and "k-fits" in refused and "TFLOP/s" not in refused
    assert chart.value == b"" and chart.layout.display == "none"
    sliders["SIDE"].value = 0
    assert "TFLOP/s" in capsys.readouterr().out and chart.layout.display != "none"


def test_the_explorer_chart_is_the_same_picture_in_any_matplotlib_style():
    """Drawn off pyplot in the default style: a kernel's rc settings or backend do not change it."""
    import matplotlib
    png = config_plots.explorer_bars_png("k", 1000.0, 50000.0, 60000.0, "label")
    with matplotlib.rc_context({"font.size": 20, "figure.dpi": 50, "axes.facecolor": "black"}):
        assert config_plots.explorer_bars_png("k", 1000.0, 50000.0, 60000.0, "label") == png
    assert png.startswith(b"\x89PNG")


def test_an_explorer_reads_as_a_sentence_in_plain_text():
    for name in registry.KERNELS:
        text = repr(widgets.explorer(name, arch="sm_90"))
        assert text == widgets.explorer_summary(name) and len(text) <= 110, "ipywidgets cuts plain text at 110"


def test_the_plan_explorer_plans_the_size_typed_or_names_why_not(capsys):
    """Chapter 14's plan explorer: a size past the kernels' 32-bit sizes is refused by the plan with its reason, not
    clamped into another shape; 3e9 is read as 3,000,000,000, not 39; a size that is no whole number is refused by
    name; a size it can plan is planned as typed."""
    from gemmlab.library import lessons
    panel = lessons.show_plan_explorer(64, 64, 64)
    boxes = {row.children[0].value: row.children[1] for row in panel.children[0].children}
    assert all(isinstance(b, ipywidgets.Text) and b.placeholder == name for name, b in boxes.items())
    capsys.readouterr()
    for typed in ("3000000000", "3e9", "3,000,000,000"):
        boxes["K"].value = typed
        said = capsys.readouterr().out
        assert "no plan" in said and "K=3000000000 is past" in said, typed
    boxes["K"].value = "2.5"
    assert "no plan: K must be a whole number" in capsys.readouterr().out
    boxes["K"].value = "1e3"
    assert "64 x 64 x 1000" in capsys.readouterr().out
    boxes["M"].value = " 4,096 "
    assert "4096 x 64 x 1000" in capsys.readouterr().out


def test_a_split_explorer_says_where_the_launch_cuts_fewer_pieces_than_split(capsys):
    """Chapter 13's explorer at 2048³: SPLIT=2, 4 and 8 all run 2 pieces there (the workspace), so their figures
    are alike; the result says why beside them."""
    spec = registry.get("13")
    sliders = _controls(widgets.explorer("13", arch="sm_90"))
    sliders["M=N=K"].value = 2048
    capsys.readouterr()
    sliders["SPLIT"].value = 8
    said = capsys.readouterr().out
    why = spec.k_split_why(spec.resolve({"SPLIT": 8}), Problem(2048, 2048, 2048))
    assert why and f"at 2048³ {why}" in " ".join(said.split()), "said beside the figures (wrapped between words)"
    assert all(len(line) <= 100 for line in said.splitlines() if "most pieces" in line or "MiB" in line)
    sliders["SPLIT"].value = 1
    assert "most pieces" not in capsys.readouterr().out


def test_a_tunable_offered_at_one_value_is_greyed_out_and_the_others_move():
    spec = registry.get("13")
    sliders = _controls(widgets.explorer("13", arch="sm_90"))
    single = [p.name for p in spec.params if len(p.offered) == 1]
    assert single, "chapter 13 offers some tunables at one value"
    for p in spec.params:
        assert sliders[p.name].disabled == (len(p.offered) == 1), p.name
    assert not sliders["M=N=K"].disabled
    header = widgets.explorer("13", arch="sm_90").children[0].value
    assert "Greyed out" in header and all(f"{n}={spec.tunable(n).default}" in header for n in single), \
        "a line under the title names each greyed slider at its value"
    assert "Greyed out" not in widgets.explorer("01", arch="sm_90").children[0].value, "no greyed slider, no line"
