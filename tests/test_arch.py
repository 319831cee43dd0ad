"""Per-architecture facts: occupancy from each architecture's own limits, refusals that name the
requirement, and no architecture given another's limits. No GPU needed."""
import pytest

from gemmlab import arch, registry, support
from gemmlab.compile import Resources, compile_kernel, occupancy
from gemmlab.spec import IllegalConfig


def _res(registers: int, static_smem: int = 0) -> Resources:
    return Resources(registers, static_smem, 0, 0, 0)


# (arch, registers, static shared, threads, dynamic shared) -> (blocks per SM, warps, max warps, limited by),
# worked by hand from the CUDA C++ Programming Guide's limits (and its occupancy calculator's rules).
CASES = [
    # sm_75 holds 32 warps (1024 threads), not sm_90's 64: one block of 1024 fills it.
    ("sm_75", 32, 0, 1024, 0, (1, 32, 32, "threads")),
    ("sm_75", 32, 0, 256, 0, (4, 32, 32, "threads")),
    # sm_75 keeps no shared memory per block for the system: 2 x 32 KiB fill its 64 KiB exactly.
    ("sm_75", 32, 32 * 1024, 128, 0, (2, 8, 32, "shared memory")),
    # the same block on sm_80: 164 KiB / (32 + 1 reserved) KiB = 4.
    ("sm_80", 32, 32 * 1024, 128, 0, (4, 16, 64, "shared memory")),
    # sm_120: 48 warps (1536 threads), 128 KiB shared per SM, 32 blocks.
    ("sm_120", 16, 0, 128, 0, (12, 48, 48, "threads")),
    ("sm_120", 16, 0, 32, 0, (32, 32, 48, "blocks")),
    ("sm_120", 64, 0, 128, 40 * 1024, (3, 12, 48, "shared memory")),     # 128 // 41
    # 255 registers: 8160 a warp, allocated as 8192: 8 warps an SM on every architecture.
    ("sm_120", 255, 0, 256, 0, (1, 8, 48, "registers")),
    ("sm_75", 255, 0, 256, 0, (1, 8, 32, "registers")),
    # sm_89 holds 24 blocks, sm_86 16.
    ("sm_89", 16, 0, 32, 0, (24, 24, 48, "blocks")),
    ("sm_86", 16, 0, 32, 0, (16, 16, 48, "blocks")),
]


@pytest.mark.parametrize("name,regs,static,threads,dynamic,expected", CASES)
def test_occupancy_uses_the_architectures_own_limits(name, regs, static, threads, dynamic, expected):
    occ = occupancy(_res(regs, static), threads, name, dynamic)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.max_warps_per_sm, occ.limited_by) == expected


def test_a_compiled_report_on_sm_75_counts_its_32_warps():
    report = compile_kernel("03", None, "sm_75").report()
    assert "/32 warps" in report and "/64 warps" not in report


@pytest.mark.parametrize("name", ["sm_61", "sm_95", "sm_9", "compute_90", "SM_90", "sm_90a"])
def test_an_unknown_architecture_is_refused_not_given_another_ones_limits(name):
    with pytest.raises(arch.UnknownArch, match="sm_75, sm_80|lower case"):
        occupancy(_res(32), 128, name)
    with pytest.raises(arch.UnknownArch):
        compile_kernel("01", None, name)


def test_every_listed_architecture_has_consistent_limits():
    for a in arch.ARCHS.values():
        assert a.max_threads_per_sm % 32 == 0 and a.shared_per_block <= a.shared_per_sm
        assert a.cp_async == (a.compute_capability >= (8, 0))
        assert arch.of_compute_capability(a.compute_capability) is a
    assert arch.MAX_SHARED_PER_BLOCK == 227 * 1024


def test_cp_async_kernels_are_refused_on_sm_75_with_the_way_out():
    spec = registry.by_chapter(9)
    with pytest.raises(IllegalConfig) as refused:
        compile_kernel(spec, None, "sm_75")
    assert refused.value.rule == "cp-async"
    assert "sm_80 or newer" in str(refused.value) and "chapter 07" in str(refused.value)


def test_a_tile_too_big_for_the_architectures_blocks_is_refused_before_compiling(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    spec = registry.by_chapter(10)
    with pytest.raises(IllegalConfig) as refused:
        compile_kernel(spec, {"BK": 32}, "sm_120")            # 4 stages x 32 x 388 x 4 B = 198,656 B
    assert refused.value.rule == "shared-memory-per-block"
    assert "198656" in str(refused.value) and "101376" in str(refused.value)
    assert not list(tmp_path.glob("*.cubin")), "nothing compiled"
    assert spec.runs_on(spec.resolve({"BK": 32}), arch.get("sm_90"))


@pytest.mark.slow     # compiles for two architectures (the heavy tier)
def test_the_support_matrix_names_each_refusal():
    rows = support.matrix(["09", "10"], ["sm_75", "sm_90"], {"BK": 32})
    (p75, p90), (i75, i90) = rows
    assert not p75.runs and p75.text == "refused: cp-async" and "sm_80 or newer" in p75.detail
    assert p90.runs and "regs" in p90.text and i90.runs and not i75.runs


def test_every_kernel_at_its_defaults_runs_on_every_architecture_but_the_cp_async_ones_on_sm_75():
    """What chapter 00's table shows (its exact register counts are the compiler's and are not compared).
    Read from the shipped table, as the chapter does: tests/test_support.py's slow test compiles it all
    anew and compares, and tests/test_compile_matrix.py (slow) compiles every kernel's defaults for every
    architecture."""
    for row in support.table().rows:
        for cell in row:
            needs_cp_async = bool(registry.get(cell.kernel).arch_rules)
            expected_refused = needs_cp_async and cell.arch == "sm_75"
            assert cell.runs != expected_refused, (cell.kernel, cell.arch, cell.text)
            assert cell.runs or cell.text == "refused: cp-async"


def test_the_toolchain_is_the_one_this_run_expects():
    """`make test-cuda12` sets GEMMLAB_EXPECT_NVRTC=12.: the compile tests there ran with NVRTC 12."""
    import os

    from gemmlab import toolchain
    assert toolchain.nvrtc_build().startswith(os.environ.get("GEMMLAB_EXPECT_NVRTC", ""))
