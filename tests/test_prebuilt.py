"""The cubins gemmlab ships for gemmlab.matmul's first call (gemmlab/prebuilt.py): built from today's
sources, whole, covering the plan's picks, and taken without NVRTC where they fit."""
import shutil

import numpy as np
import pytest

from gemmlab import compile as compiler, cubin, prebuilt, registry, toolchain
from gemmlab.library import dispatch
from gemmlab.research import prebuild, training


def test_every_shipped_cubin_is_built_from_the_current_sources():
    assert prebuilt.manifest(), "gemmlab/cubins/manifest.json is missing: python -m gemmlab.research.prebuild"
    assert prebuild.stale() == [], "a kernel changed since its cubins were shipped: python -m gemmlab.research.prebuild"


def test_every_shipped_cubin_is_whole_and_holds_what_its_entry_says():
    for name, entry in prebuilt.manifest().items():
        image = prebuilt.cubin_of(name)
        assert cubin.target(image) == entry["arch"], name
        found = cubin.resources(image)
        assert all(found[k] == entry["resources"][k] for k in found), name
    on_disk = {p.name[:-len(".cubin.xz")] for p in prebuilt.DIR.glob("*.cubin.xz")}
    assert on_disk == set(prebuilt.manifest()), "a cubin without an entry, or an entry without its cubin"


@pytest.mark.slow     # plans every suite shape; what it guards changes with a refit (the heavy tier)
def test_the_plans_of_the_suites_launch_only_shipped_builds():
    shapes = {s for group in training.CLASS_SUITE.values() for s in group} | set(training.MATMUL_SUITE)
    missing = set()
    for shape in sorted(shapes):
        for launch in dispatch.plan(*shape).launched:
            arch = dispatch.device_facts()[0]["arch"]
            if prebuild._name(launch.spec, dict(launch.params), arch) not in prebuilt.manifest():
                missing.add(f"{shape}: {launch.spec.name} {launch.params}")
    assert not missing, "the plan launches builds not shipped (python -m gemmlab.research.prebuild):\n" + \
        "\n".join(sorted(missing))


def _no_nvrtc(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("NVRTC was asked for")
    monkeypatch.setattr(compiler, "nvrtc_compile", refuse)
    monkeypatch.setattr(toolchain, "nvrtc_build", refuse)


def _an_entry(kernel: str) -> tuple[str, dict]:
    return next((n, e) for n, e in sorted(prebuilt.manifest().items()) if e["kernel"] == kernel)


def test_a_shipped_build_is_taken_without_nvrtc_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    _no_nvrtc(monkeypatch)
    name, entry = _an_entry("11_last_wave")
    first = compiler.compile_kernel(entry["kernel"], entry["params"], entry["arch"], prebuilt=True)
    assert first.shipped and first.compiler == entry["nvrtc"]
    assert first.cubin == prebuilt.cubin_of(name) and first.log == entry["log"]
    second = compiler.compile_kernel(entry["kernel"], entry["params"], entry["arch"], prebuilt=True)
    assert second.cached and second.cubin_path == first.cubin_path
    # the course's own compiles (a learner's slider, the SASS) never take a shipped cubin
    with pytest.raises(AssertionError, match="NVRTC was asked for"):
        compiler.compile_kernel(entry["kernel"], entry["params"], entry["arch"])


def test_a_damaged_shipped_cubin_is_compiled_here_instead(tmp_path, monkeypatch):
    name, entry = _an_entry("12_skinny")
    shipped = tmp_path / "cubins"
    shutil.copytree(prebuilt.DIR, shipped)
    (shipped / f"{name}.cubin.xz").write_bytes(b"\xfd7zXZ\x00 cut short")
    monkeypatch.setattr(prebuilt, "DIR", shipped)
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path / "cache"))
    build = compiler.compile_kernel(entry["kernel"], entry["params"], entry["arch"], prebuilt=True)
    assert not build.shipped and not build.cached and cubin.target(build.cubin) == entry["arch"]


def test_a_build_not_shipped_is_compiled(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    spec = registry.get("12_skinny")
    params = {**spec.defaults, "THREADS": 64}
    assert prebuild._name(spec, spec.resolve(params), "sm_90") not in prebuilt.manifest()
    build = compiler.compile_kernel(spec, params, "sm_90", prebuilt=True)
    assert not build.shipped and not build.cached


@pytest.mark.gpu
def test_the_first_matmul_with_an_empty_cache_compiles_nothing(tmp_path, monkeypatch):
    """gemmlab.matmul's first call at 2048^3 with nothing compiled yet: the plan's build is shipped. On a GPU with no
    model of its own the first call tunes, timing (and compiling) the class's best few builds by design: here it
    takes the shipped model's plan, as it does on the GPUs the model was fitted to."""
    from gemmlab import bench, device, library
    from gemmlab.library import first_use
    cp = device.cupy()
    arch = device.facts().arch
    if not any(entry["arch"] == arch for entry in prebuilt.manifest().values()):
        pytest.skip(f"gemmlab ships no builds for {arch}: its first call compiles")
    monkeypatch.setattr(first_use, "has_model", lambda gpu: True)
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(library, "_kernels", {})
    monkeypatch.setattr(bench, "_modules", {})
    monkeypatch.setattr(compiler, "nvrtc_compile", lambda *a, **k: pytest.fail("NVRTC compiled"))
    A = cp.random.rand(2048, 2048, dtype=cp.float32)
    B = cp.random.rand(2048, 2048, dtype=cp.float32)
    C = library.matmul(A, B)
    want = cp.asnumpy(A).astype(np.float64) @ cp.asnumpy(B).astype(np.float64)
    assert np.abs(cp.asnumpy(C) - want).max() <= 1e-4 * np.abs(want).max()
