"""gemmlab.matmul's kept plans (library/plan_store.py): a new process's call of a shape it ran before takes the plan's
recipe instead of the model's ranking, and gets the same plan; a recipe the model no longer offers, a damaged store
or one made under another model is planned anew. No GPU needed: the record's GPU plans."""
import json

import pytest

from gemmlab.library import dispatch, plan_store

SHAPES = [(4097, 4095, 4096, 4096, 4095, 4095, True),        # B copied
          (2049, 2048, 2048, 2048, 2048, 2048, True),        # peeled
          (4096, 24, 11008, 11008, 24, 24, True),            # padded columns
          (3 * dispatch.ROWS_PER_LAUNCH + 1, 8, 8, 8, 8, 8, True),      # several launches
          (997, 8191, 127, 127, 8191, 8191, False),          # unaligned operands
          (64, 64, 64, 64, 64, 64, True)]


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    new_process()
    yield tmp_path / plan_store.STORE_NAME
    new_process()


def new_process():
    plan_store.plan.cache_clear()
    plan_store._store.cache_clear()
    dispatch.plan.cache_clear()


def same(a: dispatch.Plan, b: dispatch.Plan) -> bool:
    return (a.label, a.problem, a.launched, a.predicted_us, a.launches) == \
        (b.label, b.problem, b.launched, b.predicted_us, b.launches)


def test_a_kept_plan_is_the_same_plan_without_the_ranking(store, monkeypatch):
    made = [plan_store.plan(*shape) for shape in SHAPES]
    assert all(same(p, dispatch.plan(*shape)) for p, shape in zip(made, SHAPES))
    assert len(json.loads(store.read_text())) == len(SHAPES)
    new_process()
    monkeypatch.setattr(dispatch, "plan_for", lambda *a, **k: pytest.fail("ranked again"))
    kept = [plan_store.plan(*shape) for shape in SHAPES]
    assert all(same(a, b) for a, b in zip(made, kept))
    assert [bool(p.parts) for p in kept] == [False, True, False, False, False, False]
    assert kept[0].stage_ldb == 4096 and kept[2].pad_n == 32 and kept[3].launches == 4


def test_a_recipe_the_model_no_longer_offers_or_a_damaged_store_is_planned_anew(store, monkeypatch):
    shape = SHAPES[0]
    made = plan_store.plan(*shape)
    recipes = json.loads(store.read_text())
    key = next(iter(recipes))
    recipes[key]["choice"]["params"]["STAGES"] = 99          # a configuration no candidate has
    store.write_text(json.dumps(recipes))
    new_process()
    assert same(plan_store.plan(*shape), made)
    assert json.loads(store.read_text())[key]["choice"]["params"] == dict(made.params), "the recipe made anew"
    for damage in ("{ not json", "[1, 2]", json.dumps({key: {"choice": 3}})):
        store.write_text(damage)
        new_process()
        assert same(plan_store.plan(*shape), made)
    new_process()                                  # made under another model: not taken
    monkeypatch.setattr(plan_store, "_section", lambda *a: "another model")
    ranked = []
    real = dispatch.plan_for
    monkeypatch.setattr(dispatch, "plan_for", lambda *a, **k: ranked.append(a) or real(*a, **k))
    assert same(plan_store.plan(*shape), made) and ranked
