"""Every chapter's kernel on the CPU runner (gemmlab/cpu) at its default and extreme configurations, at two of
the CPU check's shapes, threads in both orders (the heavy tier: `make test-slow`; a file of its own, so that
pytest-xdist runs it beside the planted bugs and the compile matrix, not after them)."""
import pytest

from gemmlab import cpu, cpu_check, exercises, registry


@pytest.mark.slow
@pytest.mark.parametrize("name", [s.name for s in exercises.chapters()])
def test_every_chapters_kernel_passes_on_the_cpu_at_its_default_and_extreme_configurations(name):
    spec = registry.get(name)
    for config in [spec.defaults, *spec.extreme_configs()]:
        full = spec.resolve(config)
        program = cpu.build(spec, full)
        for shape in cpu_check.cpu_shapes(spec, full)[:1] + cpu_check.cpu_shapes(spec, full)[3:4]:
            p, label = cpu_check.runnable(spec, full, shape)
            if p is None:
                continue
            outcome = cpu.run(program, spec, full, p, 1, spec.path, spec.path.name)
            assert outcome == {"forward": None, "reverse": None}, f"{name} [{spec.config_label(full)}] {label}: {outcome}"
