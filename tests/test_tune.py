"""The autotuner's memory: size classes, remembering, and forgetting stale entries."""
import pytest

from gemmlab import device, registry, tune
from gemmlab.spec import IllegalConfig


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))


def test_size_classes_round_each_dimension_to_a_power_of_two():
    assert tune.size_class(4096, 4096, 4096) == "4096x4096x4096"
    assert tune.size_class(4000, 4200, 1000) == "4096x4096x1024"
    assert tune.size_class(1, 3, 8191) == "1x4x8192"


def test_remembered_best_is_found_next_time_for_the_same_class():
    row = {"params": {"TILE": 16, "OUTPUTS": 2}, "gflops": 1.0, "cublas_gflops": 2.0}
    tune.remember("GPU X", "03_coalescing", (4096, 4096, 4096), row)
    assert tune.remembered("GPU X", "03", (4000, 4100, 4096)) == {"TILE": 16, "OUTPUTS": 2}
    assert tune.remembered("GPU X", "03", (2048, 2048, 2048)) is None
    assert tune.remembered("GPU Y", "03", (4096, 4096, 4096)) is None


def test_entries_for_a_changed_kernel_are_ignored(monkeypatch):
    row = {"params": registry.get("02").defaults, "gflops": 1.0, "cublas_gflops": 2.0}
    tune.remember("GPU X", "02", (1024, 1024, 1024), row)
    monkeypatch.setattr(tune.identity, "code_hash", lambda path: "changed")
    assert tune.remembered("GPU X", "02", (1024, 1024, 1024)) is None


@pytest.mark.gpu
def test_tune_validates_times_and_remembers():
    search = tune.tune("03_coalescing", (512, 512, 512), progress=False, budget_s=0.05)
    assert len(search.rows) == len(registry.get("03").legal_configs())
    assert all(r["rel_err"] <= r["tol"] for r in search.rows)
    assert tune.remembered(device.facts().name, "03", (512, 512, 512)) == search.best["params"]


def test_only_narrows_the_search_to_legal_configurations_with_those_values():
    narrowed = tune.candidates("11_last_wave", {"BK": {16}, "STAGES": {2, 3}, "BN": {256}})
    assert narrowed and all(c["BK"] == 16 and c["STAGES"] in (2, 3) and c["BN"] == 256 for c in narrowed)
    assert all(registry.get("11").is_legal(c) for c in narrowed)
    assert len(narrowed) < len(registry.get("11").legal_configs())
    with pytest.raises(IllegalConfig, match="not a tunable"):
        tune.candidates("11_last_wave", {"TILE": {16}})
    with pytest.raises(IllegalConfig, match="legal values are"):
        tune.candidates("11_last_wave", {"BK": {7}})
