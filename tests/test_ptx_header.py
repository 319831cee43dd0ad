"""The kernels' inline PTX lives in one header, kernels/ptx.cuh, each helper beside its CPU twin (issue
30); moving it there left the GPU build as it was: the SASS of each kernel's default and extreme
configurations is what they compiled to before the move (tests/data/sass_before_ptx_header.json; the
389 configurations the records name were compared too, once, when the move was made)."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gemmlab import compile as compiler, identity, registry, sass, spec as spec_module, toolchain

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "kernels" / "ptx.cuh"
BEFORE = json.loads((Path(__file__).parent / "data" / "sass_before_ptx_header.json").read_text())
# (kernel, params, every SASS its code gave before the move, the most frequent first)
# (a tunable added since, at its default, builds what the configuration built then: chapter 13's STAGE_C=0)
CONFIGS = [(c["kernel"], registry.get(c["kernel"]).resolve(c["params"]), [c["sass_sha256"], *c.get("also_seen", [])])
           for c in BEFORE["configs"]]
DEFAULTS = [(k, p, h) for k, p, h in CONFIGS if p == registry.get(k).resolve(None)]
USERS = ("09_pipeline", "10_issue_rate", "11_last_wave", "13_split_k")   # the kernels that include it


def _sass_hash(build) -> str:
    return hashlib.sha256(sass.disassemble(build).encode()).hexdigest()


_ALONE = ("import hashlib, json, sys; from gemmlab import compile, sass; "
          "b = compile.compile_kernel(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], use_cache=False); "
          "print(hashlib.sha256(sass.disassemble(b).encode()).hexdigest())")


def _same_alone(kernel: str, params: dict, recorded: list[str]) -> bool:
    """Whether a build made in a fresh Python process gives SASS that the code gave before the move, in
    one of 4 tries. NVRTC's code for a large kernel depends now and then on where its data lands in
    memory, so the same source can give other code in another process, or later in a long one
    (docs/toolchain.md); each try is a process of its own, as most of the recorded builds were."""
    command = [sys.executable, "-c", _ALONE, kernel, json.dumps(params), BEFORE["arch"]]
    return any(subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip() in recorded
               for _ in range(4))


def _changed(configs) -> list[str]:
    """The configurations whose SASS is none that they gave before the move (a process each, side by side)."""
    built = toolchain.nvrtc_build(), toolchain.nvdisasm_version()
    if built != (BEFORE["nvrtc"], BEFORE["nvdisasm"]):
        pytest.skip(f"the SASS was recorded with NVRTC {BEFORE['nvrtc']} and nvdisasm {BEFORE['nvdisasm']}; "
                    f"this toolchain is {built[0]} and {built[1]}")
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        same = list(pool.map(lambda c: _same_alone(*c), configs))
    return [f"{k} [{registry.get(k).config_label(p)}]" for (k, p, _), ok in zip(configs, same) if not ok]


def test_the_recorded_sass_covers_every_kernel_that_includes_the_header():
    assert sorted(k for k, _, _ in DEFAULTS) == list(USERS)


@pytest.mark.slow     # 4 builds a configuration, each in a process of its own (the heavy tier)
def test_the_default_and_extreme_configurations_compile_to_the_same_sass():
    assert not _changed(CONFIGS)


# --- the PTX in one place ------------------------------------------------------------------------

def test_no_kernel_has_inline_ptx_of_its_own():
    for path in sorted((ROOT / "kernels").glob("[0-9][0-9]_*.cu")):
        tokens = identity.code_tokens(path.read_text())
        assert not {"asm", "__asm__", "__asm"} & set(tokens), f"{path.name}: inline PTX belongs in ptx.cuh"
        assert ('"ptx.cuh"' in tokens) == (path.stem in USERS), path.name


def test_every_asm_of_the_header_is_in_its_gpu_branch_beside_a_cpu_twin():
    text = HEADER.read_text()
    m = re.search(r"^#ifdef GEMMLAB_CPU\n(.*?)^#else\n(.*?)^#endif", text, re.MULTILINE | re.DOTALL)
    assert m, "one #ifdef GEMMLAB_CPU ... #else ... #endif"
    cpu, gpu, outside = m.group(1), m.group(2), text[:m.start()] + text[m.end():]
    assert "asm" in identity.code_tokens(gpu)
    assert "asm" not in identity.code_tokens(cpu) and "asm" not in identity.code_tokens(outside)
    defined = lambda branch: set(re.findall(r"__forceinline__\s+\w+\s+(\w+)\s*\(", branch))
    assert defined(gpu) - {"smem_address"} == defined(cpu), "each helper, with its CPU twin"


@pytest.mark.skipif(not shutil.which("g++"), reason="no g++ here")
def test_the_cpu_branch_compiles_against_the_cpu_runtime(tmp_path):
    unit = tmp_path / "unit.cpp"
    unit.write_text('#include "cuda_on_cpu.h"\n#include "ptx.cuh"\n'
                    "void use(float* s, const float* g, unsigned* f) {\n"
                    "    copy_async<16>(s, g, 16); copy_async<4>(s, g, 0); commit(); wait_pending<1>();\n"
                    "    store_release(f, load_acquire(f) + ctaid_x() + ctaid_y() + ctaid_z()\n"
                    "                  + nctaid_x() + nctaid_y() + nctaid_z());\n}\n")
    done = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-DGEMMLAB_CPU",
                           "-I", str(ROOT / "gemmlab" / "cpu"), "-I", str(HEADER.parent), str(unit)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --- what depends on the header -------------------------------------------------------------------

@pytest.fixture
def kernels_aside(tmp_path, monkeypatch):
    """The kernels and their header copied aside, and the registry pointed at the copies."""
    folder = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", folder)
    monkeypatch.setattr(spec_module, "KERNEL_DIR", folder)
    return folder


def test_a_change_to_the_header_is_a_change_to_the_kernels_that_include_it(kernels_aside):
    before = {name: identity.code_hash(registry.get(name).path) for name in registry.KERNELS}
    header = kernels_aside / "ptx.cuh"
    header.write_text(header.read_text().replace("// ptx.cuh --", "// ptx.cuh, a comment changed --"))
    assert before == {name: identity.code_hash(registry.get(name).path) for name in registry.KERNELS}
    header.write_text(header.read_text().replace("#pragma once\n", "#pragma once\n#define ONE_MORE 1\n"))
    after = {name: identity.code_hash(registry.get(name).path) for name in registry.KERNELS}
    assert {name for name in registry.KERNELS if after[name] != before[name]} == set(USERS)


@pytest.mark.slow     # three builds of chapter 09 in a cache of its own (the heavy tier)
def test_the_compile_cache_covers_the_header_and_a_copy_elsewhere_finds_it(kernels_aside, tmp_path, monkeypatch):
    # a cache of its own: an earlier run with a shared cache (CI's steps share one) has the changed header's entry
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path / "cache"))
    first = compiler.compile_kernel("09", None, "sm_90")
    header = kernels_aside / "ptx.cuh"
    header.write_text(header.read_text().replace("#pragma once\n", "#pragma once\n#define ONE_MORE 1\n"))
    again = compiler.compile_kernel("09", None, "sm_90")
    assert not again.cached and again.cubin_path != first.cubin_path, "a new header, a new cache entry"
    learner = tmp_path / "workspace" / "09_pipeline.cu"     # a learner's copy, away from the kernels
    learner.parent.mkdir()
    shutil.copy(kernels_aside / "09_pipeline.cu", learner)
    assert _sass_hash(compiler.compile_kernel("09", None, "sm_90", source=learner)) == _sass_hash(again)
