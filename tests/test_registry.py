"""The registry and kernels/ agree: one spec per file, the same tunables and defaults."""
import re

import pytest

from gemmlab import course, registry, spec as spec_module
from gemmlab.registry import KERNELS
from gemmlab.spec import IllegalConfig, KERNEL_DIR, Problem

DEFINE = re.compile(r"#ifndef (\w+)\s*\n#define \1 (-?\d+)")


def test_every_kernel_file_is_registered_and_every_spec_has_a_file():
    files = {p.stem for p in KERNEL_DIR.glob("*.cu")}
    assert files == set(KERNELS), f"files without a spec: {files - set(KERNELS)}; specs without a file: {set(KERNELS) - files}"


@pytest.mark.parametrize("name", list(KERNELS))
def test_file_defaults_match_registry(name):
    spec = KERNELS[name]
    source = spec.path.read_text()
    file_defaults = {k: int(v) for k, v in DEFINE.findall(source)}
    assert file_defaults == spec.defaults


@pytest.mark.parametrize("name", list(KERNELS))
def test_file_has_header_and_the_uniform_entry_point(name):
    source = KERNELS[name].path.read_text()
    assert source.startswith(f"// Chapter {KERNELS[name].chapter:02d}"), "header comment names the chapter"
    assert re.search(r'extern "C" __global__ void(?: __launch_bounds__\([^)]*\))?\s+sgemm\(int M, int N, int K, float alpha, const float\* '
                     r'__restrict__ A, int lda,\s+const float\* __restrict__ B, int ldb, float beta, '
                     r'float\* __restrict__ C, int ldc\)', source)
    assert "<<<" not in source and "main(" not in source, "kernels hold no launch code"


@pytest.mark.parametrize("name", list(KERNELS))
def test_defaults_are_legal_and_in_their_value_lists(name):
    spec = KERNELS[name]
    assert spec.resolve() == spec.defaults
    for p in spec.params:
        assert p.default in p.values
        assert p.default in p.offered, "the sliders can show the default"
        assert set(p.offered) <= set(p.values), "sliders offer only legal values"
    assert spec.defaults in spec.legal_configs()
    assert spec.defaults in spec.explorer_configs()


def test_final_kernel_refuses_what_its_rules_forbid_by_name():
    spec = KERNELS["11_last_wave"]
    with pytest.raises(IllegalConfig, match="rule 'unroll-within-tile'"):
        spec.resolve({"BK": 8, "KUNROLL": 16})
    with pytest.raises(IllegalConfig, match="rule 'registers-per-thread'"):
        spec.resolve({"MINB": 2})
    with pytest.raises(IllegalConfig, match="rule 'spread-needs-interior'"):
        spec.resolve({"INTERIOR": 0, "SPREAD": 4})
    assert spec.resolve({"INTERIOR": 0, "SPREAD": 0})["INTERIOR"] == 0
    assert spec.dynamic_smem(spec.defaults) == 4 * 16 * (128 + 4 + 256) * 4
    assert max(spec.dynamic_smem(c) for c in spec.legal_configs()) <= 227 * 1024


def test_illegal_configurations_name_their_rule():
    with pytest.raises(IllegalConfig, match="rule 'block-size'"):
        registry.get("02").resolve({"TILE": 64, "OUTPUTS": 1})  # 4096 threads
    with pytest.raises(IllegalConfig, match="rule 'block-size'"):
        registry.get("01").resolve({"BLOCK_M": 256, "BLOCK_N": 8})
    with pytest.raises(IllegalConfig, match="TILE-legal-values"):
        registry.get("03").resolve({"TILE": 48})
    with pytest.raises(IllegalConfig, match="known-parameter"):
        registry.get("03").resolve({"BK": 8})


def test_lookup_by_chapter_number_and_unknown_names():
    assert registry.get("2").name == "02_smem_tiling"
    assert registry.get("03").name == "03_coalescing"
    with pytest.raises(KeyError, match="known kernels"):
        registry.get("99")
    with pytest.raises(KeyError, match="matches several kernels: 01_naive, 02_smem_tiling"):
        registry.get("0")
    assert str(registry.UnknownKernel("no kernel 'x'")) == "no kernel 'x'", "the message is not quoted"


def test_launch_geometry_covers_every_element():
    spec = registry.get("03")
    params = spec.resolve({"TILE": 16, "OUTPUTS": 2})
    grid, block = spec.launch(params, Problem(33, 17, 5))
    assert grid == (2, 3, 1) and block == (128, 1, 1)


def test_split_plan_fills_the_last_wave_or_leaves_it():
    """The tiles of a last partial wave are split only where the pieces keep more SMs busy."""
    # 6144^3 in 128 x 256 tiles on 132 SMs: 1,152 tiles, 8 whole waves and 96 tiles over
    assert spec_module.split_tiles(1152, 384, 132, 4, 4096) == 96
    assert spec_module.split_tiles(2048, 512, 132, 3, 4096) == 68    # 8192^3
    # 4096^3: 116 tiles over; 9 pieces of 28 K tiles cost more than the idle SMs (measured)
    assert spec_module.split_tiles(512, 256, 132, 9, 4096) == 0
    assert spec_module.split_tiles(512, 256, 132, 4, 4096) == 0      # 464 pieces of 1/4: still 4 rounds, no gain
    assert spec_module.split_tiles(264, 256, 132, 9, 4096) == 0      # whole waves: nothing to balance
    assert spec_module.split_tiles(512, 4, 132, 9, 4096) == 0        # K shorter than the pieces
    assert spec_module.split_tiles(512, 256, 132, 1, 4096) == 0
    assert spec_module.split_tiles(12, 9, 132, 9, 4096) == 12        # a small problem: every tile split along K
    assert spec_module.split_tiles(1152, 384, 132, 4, 50) == 0       # more tiles to split than the kernel has flags


def test_split_launch_is_whole_tiles_then_pieces():
    spec = registry.get("11")
    params = spec.resolve({"SPLIT": 4})
    grid, block = spec.launch(params, Problem(6144, 6144, 6144), slots=132)
    assert grid == (1152 + 96 * 3, 1, 1) and block == (256, 1, 1)
    assert spec.launch(params, Problem(6144, 6144, 6144))[0] == (1152, 1, 1), "no slots given: nothing split"
    assert spec.launch(spec.defaults, Problem(4096, 4096, 4096), slots=132)[0] == (16, 32, 1)


def test_kernel_and_registry_agree_on_the_split_flags():
    for spec in registry.KERNELS.values():
        if spec.split_flags:
            assert re.search(rf"#define SPLIT_FLAGS {spec.split_flags}\b", spec.path.read_text()), spec.name
    assert any(spec.split_flags for spec in registry.KERNELS.values())


def test_final_candidates_are_legal_and_distinct():
    spec = registry.get("11")
    full = [spec.resolve(cfg) for cfg in registry.programme(spec).shape_search.candidates]
    assert len({tuple(sorted(f.items())) for f in full}) == len(full)
    assert any(f["SPLIT"] > 1 for f in full) and any(f["SPLIT"] == 1 for f in full)


def test_problem_rejects_bad_shapes():
    with pytest.raises(ValueError, match="M must be >= 1"):
        Problem(0, 4, 4)
    with pytest.raises(ValueError, match="lda=3 is shorter than a row"):
        Problem(4, 4, 4, lda=3)
    assert Problem(4, 5, 6).flops == 240


@pytest.mark.parametrize("name", [n for n, s in KERNELS.items() if registry.model(s).owner])
def test_owner_model_gives_every_thread_its_share(name):
    """The thread map drawn in the notebooks: every element of a tile has one owner thread, and
    every thread of the block owns the same number of elements. (A kernel that splits K over its
    threads, chapter 12's, has no such map: every element is summed by many threads.)"""
    from collections import Counter
    spec = KERNELS[name]
    for cfg in spec.extreme_configs():
        rows, cols = spec.tile(cfg)
        owners = Counter(registry.model(spec).owner(cfg, r, c) for r in range(rows) for c in range(cols))
        assert set(owners) == set(range(spec.threads(cfg)))
        assert len(set(owners.values())) == 1


@pytest.mark.parametrize("name", [n for n, s in KERNELS.items() if s.steps])
def test_chapter_steps_are_legal_and_end_at_the_defaults_of_what_they_switch(name):
    spec = KERNELS[name]
    fulls = spec.step_configs()
    assert len({tuple(sorted(f.items())) for f in fulls}) == len(fulls), "each step differs"
    switched = {k for _, cfg in spec.steps for k in cfg if len({c.get(k) for _, c in spec.steps}) > 1}
    assert switched and all(fulls[-1][k] == spec.defaults[k] for k in switched)


def test_only_a_kernel_that_splits_k_over_its_threads_has_no_thread_map():
    assert ([n for n, s in KERNELS.items() if not registry.model(s).owner]
            == [n for n, s in KERNELS.items() if registry.model(s).streams])


def test_model_and_programme_are_found_by_spec_or_name():
    for name, spec in KERNELS.items():
        assert registry.model(spec) is registry.model(name)
        assert registry.programme(spec) is registry.programme(name)
    assert registry.programme("01") == course.Programme() and registry.model("12").owner is None
    assert registry.with_shape_search() == [registry.get("11")]


def test_the_spec_holds_the_contract_only():
    """The models of a kernel's code (KernelModel) and what the course measures of it (Programme) are
    not fields of its spec."""
    import dataclasses
    from gemmlab.kernel_model import KernelModel
    contract = {f.name for f in dataclasses.fields(spec_module.KernelSpec)}
    others = {f.name for cls in (KernelModel, course.Programme) for f in dataclasses.fields(cls)}
    assert others and not contract & others
