"""Every kernel's default and extreme configurations compiled for every architecture gemmlab knows (the
heavy tier: `make test-slow`)."""
import json
import re
import subprocess
import sys

import pytest

from gemmlab import arch as archs, cubin, sass
from gemmlab.compile import Resources, compile_kernel
from gemmlab.compile_aside import precompile
from gemmlab.registry import KERNELS
from gemmlab.spec import IllegalConfig

pytestmark = pytest.mark.slow
_TARGET = re.compile(r"\.target\s+(sm_\d+)|\bEF_CUDA_SM(\d+)\b")


def target_arch(build) -> str:
    """The architecture nvdisasm names for a build's SASS (`.target sm_90`, or sm_75's form)."""
    m = _TARGET.search(sass.disassemble(build))
    assert m is not None, f"nvdisasm named no architecture for {build.cubin_path}"
    return m.group(1) or f"sm_{m.group(2)}"


def ptxas_report(log: str):
    """The resources the ptxas report in NVRTC's log gives, where the log carries one (not always: see
    gemmlab/cubin.py), else None."""
    if not re.search(r"Used \d+ registers", log):
        return None

    def grab(pattern: str) -> int:
        m = re.search(pattern, log)
        return int(m.group(1)) if m else 0
    return Resources(grab(r"Used (\d+) registers"), grab(r"(\d+) bytes smem"), grab(r"(\d+) bytes stack frame"),
                     grab(r"(\d+) bytes spill stores"), grab(r"(\d+) bytes spill loads"))

CASES = [(name, cfg) for name, spec in KERNELS.items() for cfg in spec.extreme_configs()]
ARCHS_TESTED = ("sm_80", "sm_90")          # the resource cross-checks
EVERY_ARCH = tuple(archs.ARCHS)            # compiles, or is refused by a rule naming the requirement


@pytest.fixture(scope="module", autouse=True)
def compiled_in_parallel(request):
    """Every selected case compiled once up front, a process per core (compile_aside.precompile), into the
    session's cache: the tests below then check the builds. A case that fails to compile is not cached,
    so its test compiles it again and reports the error."""
    chosen = [item.callspec.params for item in request.session.items
              if item.module is request.module and hasattr(item, "callspec") and "cfg" in item.callspec.params]
    precompile([(c["name"], c["cfg"], c["arch"]) for c in chosen])


def _compile_alone(name: str, cfg: dict, arch: str) -> dict:
    """The resources of a build made anew by a fresh Python process (into this session's cache)."""
    code = ("import json, sys; from dataclasses import asdict; from gemmlab.compile import compile_kernel; "
            "print(json.dumps(asdict(compile_kernel(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], "
            "use_cache=False).resources)))")
    done = subprocess.run([sys.executable, "-c", code, name, json.dumps(cfg), arch], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("arch", EVERY_ARCH)
@pytest.mark.parametrize("name,cfg", CASES, ids=[f"{n}-{'-'.join(f'{k}{v}' for k, v in c.items())}" for n, c in CASES])
def test_compiles_at_default_and_extreme_configs(name, cfg, arch, tmp_path, monkeypatch):
    """Every kernel's default and extreme configurations, for every architecture gemmlab knows: a
    cubin for that architecture with no spills, or a refusal before compiling that names the rule."""
    spec, target = KERNELS[name], archs.get(arch)
    if not spec.runs_on(spec.resolve(cfg), target):
        with pytest.raises(IllegalConfig) as refused:
            compile_kernel(name, cfg, arch)
        assert refused.value.rule in ("cp-async", "shared-memory-per-block")
        assert arch in str(refused.value)
        return
    build = compile_kernel(name, cfg, arch)
    assert build.cubin[:4] == b"\x7fELF"
    assert cubin.target(build.cubin) == arch, "SASS for this architecture, not PTX for the driver"
    r = build.resources
    assert 0 < r.registers <= 255
    if arch in ARCHS_TESTED:   # elsewhere a spill is reported, not refused (05 at 1024 threads: sm_75, 86-89, 120)
        if r.spills:
            # ptxas in a long test session now and then spills a few bytes at a register cap where a
            # process of its own does not (docs/toolchain.md): the configuration must build without
            # spills in a fresh process, which puts that build in the session's cache
            again = _compile_alone(name, cfg, arch)
            assert not (again["spill_stores"] or again["spill_loads"]), f"{build.report()}\nalone: {again}"
    assert r.static_smem == KERNELS[name].static_smem(cfg), "the registry's shared-memory model matches the cubin"
    assert build.occupancy.blocks_per_sm >= 1


@pytest.mark.parametrize("arch", EVERY_ARCH)
def test_the_cubins_header_names_the_architecture_nvdisasm_names(arch):
    """The matrix reads a build's architecture from its ELF header (cubin.target), not from a disassembly
    of every build: for each architecture, the two agree on one kernel's defaults."""
    build = compile_kernel(CASES[0][0], CASES[0][1], arch)
    assert cubin.target(build.cubin) == target_arch(build) == arch


def test_a_cubin_with_no_machine_code_has_no_target():
    build = compile_kernel(CASES[0][0], CASES[0][1], "sm_90")
    renamed = build.cubin.replace(b".text.sgemm", b".text.other")
    with pytest.raises(ValueError, match="no machine code"):
        cubin.target(renamed)


# Every configuration on the GPU gemmlab.matmul's model is fitted on, and 05's (which spills at 1024 threads
# on the architectures with 64 K registers a block) everywhere.
FRAME_CASES = [(n, c, "sm_90") for n, c in CASES] + [(n, c, a) for n, c in CASES if n.startswith("05")
                                                      for a in EVERY_ARCH if a != "sm_90"]


def test_a_build_with_no_stack_frame_has_no_spills_to_count():
    """compile_kernel counts spilled bytes from the SASS only where the cubin has a stack frame (spills
    live there): the resources it gives are those a disassembly of every build gives, spills included."""
    framed = 0
    for name, cfg, arch in FRAME_CASES:
        spec = KERNELS[name]
        if not spec.runs_on(spec.resolve(cfg), archs.get(arch)):
            continue
        build = compile_kernel(name, cfg, arch)
        everything = Resources.of(build.cubin, sass.opcodes(build.cubin_path))
        assert everything == build.resources, f"{name} {cfg} {arch}"
        framed += bool(build.resources.stack_frame)
    assert framed, "some build has a stack frame, so both paths are compared"


@pytest.mark.parametrize("arch", ARCHS_TESTED)
def test_cubin_resources_agree_with_the_ptxas_report(arch):
    """Resources come from the cubin; wherever NVRTC's log carries the ptxas report, they agree."""
    compared = 0
    for name, cfg in CASES:
        build = compile_kernel(name, cfg, arch)
        reported = ptxas_report(build.log)
        if reported is not None:
            assert reported == build.resources, f"{name} {cfg}"
            compared += 1
    assert compared or not any("ptxas" in compile_kernel(n, c, arch).log for n, c in CASES)
