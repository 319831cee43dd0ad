"""The latency probe: it compiles anywhere; on a GPU its latencies come out in order and in range."""
import pytest

from gemmlab import cubin, probes


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_probe_compiles_without_a_gpu(arch):
    image = probes.compile_probe(arch)
    names = {name for name in cubin.sections(image) if name.startswith(".text.")}
    assert names == {f".text.{k}" for k in probes.KERNELS}


def test_the_chain_visits_every_slot_window_by_window():
    import numpy as np
    order = probes._order(1000, 300, np.random.default_rng(1))
    assert sorted(order) == list(range(1000))
    windows = order // 250                              # at most 300 a window: four of 250
    assert (np.diff(windows) != 0).sum() == 3, "each window is walked in one go"


@pytest.mark.gpu
@pytest.mark.alone
def test_latencies_are_ordered_and_plausible():
    m = probes.measure()
    assert m["shared_cycles"] < m["l2_cycles"] < m["dram_cycles"], m
    assert 10 <= m["shared_cycles"] <= 100, m
    assert 100 <= m["l2_cycles"] <= 1000, m
    assert 200 <= m["dram_cycles"] <= 3000, m
    assert m["footprints"]["dram"] > 2 * m["footprints"]["l2"] and m["clock_mhz"] > 0


@pytest.mark.gpu
def test_l2_reads_outrun_dram_copies():
    from gemmlab import device
    assert probes.measure_l2_bandwidth() > device.measure_copy_bandwidth()
