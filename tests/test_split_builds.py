"""A split compiles other code than the unsplit build (the pieces' partial tiles), so its registers, and the
blocks an SM holds, may differ: the fitted model keeps each split's own build, the plan prices a split at its
own build's occupancy, and a damaged entry is refused by name. No GPU."""
import json

import pytest

from gemmlab import registry
from gemmlab.library import dispatch, time_model
from gemmlab.spec import Problem

H100 = {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132, "clock_mhz": 1980.0,
        "fp32_lanes_per_sm": 128, "l2_bytes": 50 * 2**20, "peak_fp32_tflops": 66.9, "dram_gbs": 3352.3,
        "measured_copy_gbs": 2978.1}


def _per_sm(spec, params, build) -> int:
    return time_model.blocks_per_sm(spec, params, *build, H100["arch"])


def test_the_fitted_model_keeps_a_build_for_every_split_of_every_candidate():
    m = time_model.model(H100["name"])
    split = 0
    for cand in m.candidates:
        names = time_model.split_tunables(cand.spec)
        variants = {tuple(v[n] for n in names) for v in time_model.split_variants(cand.spec, cand.params)}
        own = tuple(cand.params[n] for n in names)
        assert {values for values, _, _ in cand.split_builds} == variants - {own}, cand.params
        split += bool(names)
    assert split > 40     # chapters 11, 12 and 13 have split tunables: most of the candidates


def test_a_split_is_priced_at_its_own_builds_blocks_per_sm():
    """Chapter 13's 64 x 64 tiles hold 7 blocks an SM unsplit and 6 split on the H100 (141 and 155 registers
    as fitted): priced at the unsplit build's count, a launch of 920 blocks was one round of 924 slots, where the
    split that runs it takes a round and a block."""
    m = time_model.model(H100["name"])
    differ = [(cand, values, regs, smem) for cand in m.candidates for values, regs, smem in cand.split_builds
              if _per_sm(cand.spec, cand.params, (regs, smem)) != _per_sm(cand.spec, cand.params,
                                                                         (cand.registers, cand.static_smem))]
    assert differ, "no split's build holds another count of blocks an SM than its unsplit build"
    problem = Problem(64, 7308, 9252)
    found, _ = dispatch.options(m, problem, H100, "H100", True)
    checked = 0
    for cand, values, regs, smem in differ:
        params = {**cand.params, **dict(zip(time_model.split_tunables(cand.spec), values))}
        for o in found:
            if o.launch.spec is cand.spec and o.launch.params == params:
                assert o.launch.blocks_per_sm == _per_sm(cand.spec, params, (regs, smem))
                assert o.launch.blocks_per_sm != _per_sm(cand.spec, params, (cand.registers, cand.static_smem))
                checked += 1
    assert checked


def test_the_plan_and_its_explanation_count_the_same_blocks_per_sm():
    """`gemmlab plan`'s slots are those of the build that runs (at 640^3, a split of chapter 13's)."""
    p = dispatch.plan_for(Problem(640, 640, 640), H100, "H100")
    cand = next(c for c in time_model.model(H100["name"]).candidates
                if c.spec is p.spec and c.params == time_model.unsplit(p.spec, p.params))
    assert p.choice.launch.blocks_per_sm == _per_sm(p.spec, p.params, cand.build(p.params))
    assert f"x {p.choice.launch.blocks_per_sm})" in str(p)


@pytest.mark.parametrize("damage, said", [
    (lambda c: c.update(split_builds=[{"split": {"SPLIT": 99}, "registers": 64, "static_smem": 0}]),
     "not one of its splits"),
    (lambda c: c.update(split_builds=[{"split": {"BM": 64}, "registers": 64, "static_smem": 0}]),
     "not one of its splits"),
    (lambda c: c.update(split_builds=[{"split": {"SPLIT": 2}, "registers": "64", "static_smem": 0}]),
     "without whole numbers"),
    (lambda c: c.update(split_builds={"SPLIT": 2}), "not a list"),
], ids=["illegal split", "not a split tunable", "registers not a number", "not a list"])
def test_a_damaged_split_build_is_refused_by_name(damage, said, tmp_path):
    shipped = time_model.fitted_path(H100["name"])
    data = json.loads(shipped.read_text())
    i = next(i for i, c in enumerate(data["candidates"]) if c["kernel"] == "13_split_k")
    damage(data["candidates"][i])
    path = tmp_path / shipped.name
    path.write_text(json.dumps(data))
    with pytest.raises(time_model.NotFitted, match=f"candidate {i} ") as exc:
        time_model.load(path)
    assert said in str(exc.value) and "python -m gemmlab fit" in str(exc.value)


def test_a_model_without_split_builds_prices_every_split_at_the_candidates_build(tmp_path):
    """A model fitted before split builds were kept still loads, each split at its candidate's own build."""
    data = json.loads(time_model.fitted_path(H100["name"]).read_text())
    for c in data["candidates"]:
        c.pop("split_builds", None)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    m = time_model.load(path)
    cand = next(c for c in m.candidates if c.spec.name == "13_split_k")
    assert cand.build({**cand.params, "SPLIT": 4}) == (cand.registers, cand.static_smem)
    assert registry.KERNELS["13_split_k"] is cand.spec
