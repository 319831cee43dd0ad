"""Compilation with NVRTC from pip: no GPU needed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab import registry, sass, spec as spec_module
from gemmlab.compile import ARCHS, CompileError, compile_kernel
from gemmlab.registry import KERNELS
from gemmlab.spec import IllegalConfig



def test_every_kernel_compiles_at_its_defaults():
    """The fast tier's compile check, one build per kernel (tests/test_compile_matrix.py, slow, builds every
    kernel's default and extreme configurations for every architecture)."""
    for name in KERNELS:
        build = compile_kernel(name)
        assert build.cubin[:4] == b"\x7fELF" and 0 < build.resources.registers <= 255
        assert build.resources.static_smem == KERNELS[name].static_smem(build.params)


def test_extreme_configs_cover_both_ends_of_every_tunable():
    for spec in KERNELS.values():
        configs = spec.extreme_configs()
        legal = spec.legal_configs()
        for p in spec.params:
            used = {c[p.name] for c in legal}
            seen = {c[p.name] for c in configs}
            assert min(used) in seen and max(used) in seen


def test_illegal_config_is_refused_before_compiling(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    with pytest.raises(IllegalConfig, match="static-shared-memory|block-size"):
        compile_kernel("03_coalescing", {"TILE": 64, "OUTPUTS": 2})
    assert not list(tmp_path.iterdir()), "nothing was compiled or cached"


def test_cache_hit_on_second_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    first = compile_kernel("01_naive", {"BLOCK_M": 64, "BLOCK_N": 4})
    second = compile_kernel("01_naive", {"BLOCK_M": 64, "BLOCK_N": 4})
    assert not first.cached and second.cached
    assert first.cubin == second.cubin and first.resources == second.resources
    other_arch = compile_kernel("01_naive", {"BLOCK_M": 64, "BLOCK_N": 4}, "sm_80")
    assert not other_arch.cached


def test_compile_error_names_file_and_line(tmp_path, monkeypatch):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    source = registry.get("01").path.read_text().replace("acc += A", "acc += undefined_name + A")
    (kernels / "01_naive.cu").write_text(source)
    line = next(i for i, l in enumerate(source.splitlines(), 1) if "undefined_name" in l)
    monkeypatch.setattr(spec_module, "KERNEL_DIR", kernels)
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(CompileError, match=rf"kernels/01_naive\.cu\({line}\): error: identifier \"undefined_name\" is undefined"):
        compile_kernel("01_naive")


def test_sass_shows_the_expected_instructions():
    naive = sass.mix(compile_kernel("01_naive"))
    assert naive["FFMA"] > 0 and not any(k.startswith("LDS") for k in naive), "naive reads no shared memory"
    tiled = sass.mix(compile_kernel("03_coalescing", {"TILE": 32, "OUTPUTS": 4}))
    assert tiled["BAR"] >= 2 and tiled["LDS.128"] > 0  # As[r][k..k+3]: one 128-bit broadcast load
    assert "FFMA per shared-memory load" in sass.summary(compile_kernel("03_coalescing"))


def test_archs_listed_are_the_tested_ones():
    assert {"sm_80", "sm_90"} <= set(ARCHS)


@pytest.mark.slow     # builds of configurations no chapter cell shows (the heavy tier)
@pytest.mark.parametrize("name", ["08_warp_tiling", "10_issue_rate"])
def test_snake_order_reads_fewer_registers_and_pairs_fewer_banks(name):
    """SNAKE=1 walks odd rows backwards so consecutive FFMAs share an operand: the SASS must show
    more operands served by the reuse cache and fewer FFMAs with two reads in one bank."""
    (_, before), (_, with_snake) = KERNELS[name].steps[:2]   # the chapter's first step is SNAKE
    rows = sass.operand_reads(compile_kernel(name, before))
    snake = sass.operand_reads(compile_kernel(name, with_snake))
    assert rows["ffma"] == snake["ffma"] > 0
    assert snake["from_cache"] > rows["from_cache"]
    assert snake["same_bank"] < rows["same_bank"]


@pytest.mark.slow     # builds of configurations no chapter cell shows (the heavy tier)
def test_spread_puts_the_next_tiles_copies_among_the_ffmas():
    """SPREAD=0 issues all of the next tile's copies (LDGSTS) after the barrier, before the first FFMA
    of the hot loop; with SPREAD=4 the first copy comes after FFMAs, and the copies reach across more
    than half of the loop (groups at k steps 1, 6 and 11 of 16)."""
    spec = KERNELS["10_issue_rate"]
    (_, before), (_, spread) = spec.steps[-2:]   # the chapter's last step is SPREAD

    def layout(cfg):
        ops = sass.hot_region(compile_kernel(spec, cfg))
        copies = [i for i, op in enumerate(ops) if op.startswith("LDGSTS")]
        return ops, ops.index("FFMA"), copies

    ops, first_ffma, copies = layout(before)
    assert copies and max(copies) < first_ffma
    ops, first_ffma, copies = layout(spread)
    assert len(copies) == 12 and min(copies) > first_ffma
    assert max(copies) - min(copies) > len(ops) // 2


@pytest.mark.parametrize("name", list(KERNELS))
def test_occupancy_budget_adds_up(name):
    """The budget gl.show_occupancy prints is the one the occupancy comes from: registers allocated
    per warp in units of 256, each limit the SM's total over the block's need, the least one wins."""
    build = compile_kernel(name, None, "sm_90")
    occ, b = build.occupancy, build.occupancy.budget
    warps = -(-KERNELS[name].threads(build.params) // 32)
    assert b["registers_per_warp"] % 256 == 0 and b["registers_per_warp"] >= build.resources.registers * 32
    assert occ.limits["registers"] == b["registers_per_sm"] // b["registers_per_warp"] // warps
    assert occ.limits["threads"] == b["threads_per_sm"] // (warps * 32)
    if "shared memory" in occ.limits:
        assert occ.limits["shared memory"] == b["shared_per_sm"] // b["shared_per_block"]
    assert occ.blocks_per_sm == min(occ.limits.values()) == occ.limits[occ.limited_by]
    assert occ.warps_per_sm == occ.blocks_per_sm * warps


@pytest.mark.slow     # builds of configurations no chapter cell shows (the heavy tier)
def test_unrolling_the_pipeline_k_loop_scales_its_ffmas():
    """What 09's unroll study shows, minus the exact instruction counts: those come from ptxas at the
    255-register limit and moved by one instruction on a CI host with the same NVRTC wheel (so that
    notebook cell's output is not compared). The hot loop holds KUNROLL x 128 FFMAs, they are most
    of it, and the shared loads grow with them."""
    spec = KERNELS["09_pipeline"]
    hot = {u: sass.hot_region(compile_kernel(spec, {"KUNROLL": u})) for u in (4, 8, 16)}
    for u, ops in hot.items():
        ffma = sum(op.startswith("FFMA") for op in ops)
        assert ffma == 128 * u
        assert ffma / len(ops) > 0.8
    loads = [sum(op.startswith("LDS") for op in hot[u]) for u in (4, 8, 16)]
    assert loads[0] < loads[1] < loads[2]


@pytest.mark.slow     # three builds of chapter 09, two no chapter cell shows (the heavy tier)
def test_what_chapter_09_says_of_its_compile_reports():
    """09's prose reads three compile reports whose exact figures are not compared (a build of 200-odd
    registers is where ptxas was seen to vary by host; docs/toolchain.md): the defaults fill the 255
    registers without spilling, two stages take fewer, and MINB=2's cap of 128 spills."""
    spec = KERNELS["09_pipeline"]
    four, two = compile_kernel(spec, {}), compile_kernel(spec, {"STAGES": 2})
    assert four.resources.registers == 255 and not four.resources.spills
    assert two.resources.registers < four.resources.registers and not two.resources.spills
    capped = compile_kernel(spec, {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "MINB": 2})
    assert capped.resources.registers == 128 and capped.resources.spills
    assert capped.occupancy.blocks_per_sm == 2 and four.occupancy.blocks_per_sm == 1


def test_the_disassembly_is_kept_beside_the_cubin_and_redone_when_the_cubin_changes(tmp_path, monkeypatch):
    """nvdisasm runs once for a build, in any process: its text is kept beside the cubin in the compile cache,
    and a cubin rebuilt with other bytes (or a damaged kept text) is disassembled anew."""
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    build, other = compile_kernel("01_naive"), compile_kernel("03_coalescing")
    text, other_text = sass.disassemble(build), sass.disassemble(other)
    kept = build.cubin_path.with_suffix(".sass")
    assert kept.exists() and "FFMA" in text
    runs = []
    real = sass.subprocess.run
    monkeypatch.setattr(sass.subprocess, "run", lambda *a, **k: runs.append(a) or real(*a, **k))
    sass._disassemble.cache_clear()                    # as a new process would start
    assert sass.disassemble(build) == text and runs == []
    build.cubin_path.write_bytes(other.cubin_path.read_bytes())   # the same name, other bytes
    sass._disassemble.cache_clear()
    assert sass.disassemble(build) == other_text != text and len(runs) == 1
    for damage in (b"", b"\xff\xfe not text", kept.read_bytes()[:100]):
        kept.write_bytes(damage)
        sass._disassemble.cache_clear()
        assert sass.disassemble(build) == other_text
    assert len(runs) == 4


def test_precompile_builds_only_what_is_missing_with_a_bar_and_its_sass_on_request(tmp_path, monkeypatch, capsys):
    """A lesson that compiles several builds asks precompile first: a bar counts the builds still to make (and
    disassemble), on one core or several, and where every one is in the cache nothing runs and no bar shows."""
    from gemmlab import compile as compiler, compile_aside
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    jobs = [("01_naive", {"BLOCK_M": 64, "BLOCK_N": 4}, "sm_90"), ("01_naive", {"BLOCK_M": 32, "BLOCK_N": 8}, "sm_90"),
            ("03_coalescing", {"TILE": 64, "OUTPUTS": 2}, "sm_90")]          # the last is refused by rule
    assert not compiler.built(*jobs[0]) and compiler.built(*jobs[2]), "a refused build has nothing to build"
    compile_kernel(*jobs[0])
    assert compiler.built(*jobs[0]) and not compiler.built(*jobs[0], disassembled=True)
    monkeypatch.setattr(compile_aside.os, "cpu_count", lambda: 1)    # the one-core path, in this process
    compile_aside.precompile(jobs, progress=True, disassemble=True)
    err = capsys.readouterr().err
    assert "compile" in err and "2/2" in err, f"a bar over the two builds still to make: {err!r}"
    assert all(compiler.built(*job, disassembled=True) for job in jobs)
    warmed = []
    monkeypatch.setattr(compile_aside, "_build", lambda *a, **k: warmed.append(a))
    compile_aside.precompile(jobs, progress=True, disassemble=True)
    assert warmed == [] and capsys.readouterr().err == "", "nothing left to build: no work, no bar"


@pytest.mark.parametrize("call", ["from gemmlab.compile_aside import compile_side_by_side as compile_them",
                                  "from gemmlab.compile_aside import precompile as compile_them"])
def test_builds_compiled_side_by_side_do_not_rerun_the_callers_script(tmp_path, monkeypatch, call):
    """gemmlab.matmul's first use (compile_side_by_side) and a lesson or research (precompile) compile builds side by
    side, from whatever script calls them: a script with no `if __name__ == "__main__":` runs once (a spawned pool's
    workers would import it again), every build it asks for lands in the cache with its SASS where asked, and one
    refused by rule is left to the caller's compile."""
    from gemmlab import compile as compiler
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path / "cache"))
    jobs = [("01_naive", {"BLOCK_M": 64, "BLOCK_N": 4}, "sm_90"), ("01_naive", {"BLOCK_M": 32, "BLOCK_N": 8}, "sm_90"),
            ("03_coalescing", {"TILE": 64, "OUTPUTS": 2}, "sm_90")]          # the last is refused by rule
    disassemble = "precompile" in call
    script = tmp_path / "unguarded.py"
    script.write_text(f"import json\n{call}\nprint('ran')\n"
                      f"compile_them(json.loads({json.dumps(json.dumps(jobs))}), progress=True"
                      f"{', disassemble=True' if disassemble else ''})\n")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(root), os.environ.get("PYTHONPATH"))))})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ran"], f"the script ran more than once: {done.stdout!r}"
    assert "2/2" in done.stderr, f"a bar over the two builds: {done.stderr!r}"
    assert all(compiler.built(*job, disassembled=disassemble) for job in jobs[:2])
