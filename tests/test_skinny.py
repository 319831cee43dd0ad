"""Chapter 12's kernel: skinny shapes on each of its load paths, and how the plan treats a kernel that
streams an operand."""
import pytest

from gemmlab import bench, course, records, registry
from gemmlab.research import training
from gemmlab import launch as plan
from gemmlab.library import dispatch, time_model
from gemmlab.spec import IllegalConfig, Problem, UnsupportedShape

SPEC = registry.KERNELS["12_skinny"]

# each SIDE with a few tile shapes: one row or column a block, several, and the widest lanes
CONFIGS = [{"SIDE": side, "EDGE": edge, "LANES": lanes, "UNROLL": unroll}
           for side in (0, 1) for edge, lanes, unroll in ((1, 8, 4), (4, 2, 1), (8, 32, 2), (16, 4, 2))]
# SIDE 2 (small K) at every K it holds (EDGE quads), few and many rows a warp, one to four columns a thread,
# its stores marked evict-first and not
# and its warps side by side (ACROSS), up to K of 64 (EDGE 16) and 64 rows a warp
SMALL_K_CONFIGS = [{"SIDE": 2, "EDGE": edge, "LANES": lanes, "UNROLL": unroll, "EVICT_FIRST": evict, "THREADS": threads,
                    "ACROSS": across}
                   for edge, lanes, unroll, evict, threads, across in (
                       (1, 8, 4, 1, 256, 1), (2, 2, 1, 0, 64, 1), (4, 32, 4, 1, 128, 1), (8, 4, 2, 0, 256, 1),
                       (8, 2, 1, 1, 256, 1), (8, 32, 2, 1, 128, 4), (12, 32, 2, 1, 256, 8), (16, 64, 2, 1, 128, 2),
                       (4, 64, 4, 0, 128, 4))]
SHAPES = [
    Problem(1, 4096, 1024),                       # a row vector times a matrix: the 16-byte paths
    Problem(1, 4095, 1023),                       # rows of odd length: 4-byte loads of A and B
    Problem(3, 1, 4097),                          # one column: B's loads checked against N
    Problem(2049, 7, 515, alpha=0.5, beta=-1.0),  # few columns, K % 4 = 3, beta read
    Problem(5, 130, 3),                           # K shorter than a quad
    Problem(33, 100, 256, lda=260, ldb=104, ldc=101, alpha=-2.0, beta=0.25),   # padded rows
]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", CONFIGS, ids=["-".join(f"{k}{v}" for k, v in c.items()) for c in CONFIGS])
def test_skinny_is_right_on_every_load_path(cfg):
    """16-byte rows and not, columns past N, K's last K % 4, padded rows, alpha and beta: every shape
    is computed, on whichever path each operand takes."""
    kernel = bench.Kernel(SPEC, cfg)
    for problem in SHAPES:
        check = kernel.validate(problem, seed=7)
        assert check.ok, f"{cfg} {problem}: {check}"


def small_k_shapes(edge: int) -> list[Problem]:
    """K of 1 up to what EDGE holds (4 EDGE), with N not a multiple of 4 or of 32, one row and many, padded rows,
    alpha and beta; and a K of every count of quads, 1 to EDGE (each runs a build of the row loop of its own),
    ending 1 to 4 into its last quad."""
    k = 4 * edge
    return [Problem(1, 1, 1), Problem(5, 130, max(1, k - 1)), Problem(2049, 7, k, alpha=0.5, beta=-1.0),
            Problem(33, 100, k, lda=k + 3, ldb=104, ldc=101, alpha=-2.0, beta=0.25), Problem(3000, 4099, k)] + [
        Problem(37, 70, 4 * quads - quads % 4, beta=0.5) for quads in range(1, edge + 1)]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", SMALL_K_CONFIGS, ids=["-".join(f"{k}{v}" for k, v in c.items()) for c in SMALL_K_CONFIGS])
def test_small_k_side_is_right_at_every_k_it_holds(cfg):
    kernel = bench.Kernel(SPEC, cfg)
    for problem in small_k_shapes(cfg["EDGE"]):
        check = kernel.validate(problem, seed=7)
        assert check.ok, f"{cfg} {problem}: {check}"


def test_small_k_side_refuses_a_longer_k_and_names_the_rule():
    params = SPEC.resolve({"SIDE": 2, "EDGE": 2})
    SPEC.check_shape(params, Problem(100, 100, 8))
    with pytest.raises(UnsupportedShape) as exc:
        SPEC.check_shape(params, Problem(100, 100, 9))
    assert exc.value.rule == "k-fits" and "K=9" in str(exc.value) and "EDGE=4" in str(exc.value)
    with pytest.raises(UnsupportedShape, match="use SIDE 0 or 1"):
        SPEC.check_shape(params, Problem(4096, 4096, 4096))     # no EDGE holds it: the message says so
    with pytest.raises(IllegalConfig):
        SPEC.resolve({"SIDE": 2, "EDGE": 16, "UNROLL": 4})      # 256 floats of B a thread


@pytest.mark.gpu
@pytest.mark.parametrize("side", (0, 1, 2))
def test_skinny_is_right_from_pointers_off_16_bytes(side):
    """Operands that start 4 bytes past a 16-byte boundary take the 4-byte loads, and come out right."""
    import cupy as cp
    kernel = bench.Kernel(SPEC, {"SIDE": side, "EDGE": 8, "UNROLL": 2} if side == 2 else {"SIDE": side})
    k = 31 if side == 2 else 200
    problem = Problem(6, 300, k, lda=204, ldb=304, ldc=300)
    ops = bench.Operands.random(Problem(6, 301, k + 1, lda=204, ldb=304), seed=5)
    shifted = bench.Operands(problem, ops.A[:, 1:k + 1], ops.B[1:k + 1, 1:301], cp.full((6, 300), cp.nan, cp.float32),
                             None)
    kernel(shifted)
    check = bench.check(shifted)
    assert check.ok, check


def test_skinny_tiles_follow_the_side():
    assert SPEC.tile({**SPEC.defaults, "SIDE": 0, "EDGE": 4, "LANES": 8}) == (4, 32)
    assert SPEC.tile({**SPEC.defaults, "SIDE": 1, "EDGE": 8, "LANES": 16, "THREADS": 256}) == (16, 8)
    assert SPEC.k_tile({**SPEC.defaults, "SIDE": 0, "LANES": 8, "THREADS": 256}) == 128   # 32 k-lanes x 4
    small_k = {**SPEC.defaults, "SIDE": 2, "EDGE": 4, "LANES": 8, "UNROLL": 2, "THREADS": 128}
    assert SPEC.tile(small_k) == (32, 64) and SPEC.k_tile(small_k) == 16   # 8 rows x 4 warps, 2 x 32 columns
    across = {**small_k, "ACROSS": 4, "LANES": 32}
    assert SPEC.tile(across) == (32, 256)       # 4 warps side by side, each 64 columns, all walking 32 rows
    assert registry.model(SPEC).streams
    assert not any(registry.model(s).streams for s in registry.KERNELS.values() if s is not SPEC)


def test_warps_side_by_side_are_for_the_small_k_side_and_divide_the_block():
    with pytest.raises(IllegalConfig, match="SIDE=2 alone"):
        SPEC.resolve({"SIDE": 0, "ACROSS": 2})
    with pytest.raises(IllegalConfig, match="must divide its 4 warps"):
        SPEC.resolve({"SIDE": 2, "EDGE": 8, "UNROLL": 2, "THREADS": 128, "ACROSS": 8})
    with pytest.raises(IllegalConfig, match="divide a warp"):
        SPEC.resolve({"SIDE": 1, "LANES": 64})                  # 64 rows a warp: the small-K side's alone
    assert SPEC.resolve({"SIDE": 2, "EDGE": 8, "UNROLL": 2, "LANES": 64, "THREADS": 256, "ACROSS": 8})["LANES"] == 64


def test_regime_shapes_are_skinny_and_outside_the_suite():
    """The record times the kernel at its regime shapes for the fit; the suite judges the plan on others."""
    for shape in registry.programme(SPEC).regime_shapes:
        assert (min(shape[:2]) <= 128 or shape[2] <= 32) and shape not in training.MATMUL_SUITE


def test_a_streaming_kernel_is_offered_only_on_the_memory_bound_side():
    """Past STREAMING_REACH x the ridge a shape has reuse to exploit: the plan does not offer the
    streaming kernel there, and says why when asked for a shape's options."""
    dev, gpu = dispatch.device_facts()
    m = time_model.model(dev["name"])
    ridge = plan.ridge(dev)
    square = Problem(2048, 2048, 2048)
    assert square.intensity > time_model.STREAMING_REACH * ridge
    found, refused = dispatch.options(m, square, dev, gpu, True)
    assert not any(registry.model(o.launch.spec).streams for o in found)
    assert any("memory-bound-shapes" in r for r in refused)
    skinny = Problem(1, 4096, 4096)
    assert skinny.intensity < ridge
    found, _ = dispatch.options(m, skinny, dev, gpu, True)
    assert any(registry.model(o.launch.spec).streams for o in found)


def test_the_record_times_every_regime_shape():
    """The regime table has a row for each of the kernel's regime shapes (what the chapter's words on it say
    is checked by claim markers in the notebook, gemmlab.research.claims)."""
    from gemmlab.lessons.chapter12 import fastest_at_regime_shapes   # the lessons need ipywidgets
    best = fastest_at_regime_shapes(records.latest(), SPEC)
    assert sorted(best) == sorted(tuple(s) for s in registry.programme(SPEC).regime_shapes)
