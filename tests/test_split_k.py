"""Chapter 13's kernel: edge tiles moved inside C, K's remainder in a zero-filled first tile, B copied
16 or 4 bytes at a time, and tiles split along K and summed from a workspace."""
import pytest

from gemmlab import bench, course, records, registry
from gemmlab.research import training
from gemmlab import launch as plan
from gemmlab.library import time_model
from gemmlab.spec import Problem, UnsupportedShape

SPEC = registry.KERNELS["13_split_k"]

# small and large tiles, one and several pieces (SPLIT=3 leaves pieces of unequal length)
CONFIGS = [{"BM": 64, "BN": 64, "WM": 32, "WN": 32, "SPLIT": 1},
           {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "SPLIT": 3},
           {"BM": 32, "BN": 64, "WM": 32, "WN": 32, "SPLIT": 6},
           {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "SPLIT": 1},
           {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "SPLIT": 2, "SPREAD": 0, "STAGES": 4},
           # C staged in shared memory where its rows are ragged: in the pipeline's buffers, and past them
           {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "SPLIT": 3, "STAGE_C": 1},
           {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "SPLIT": 1, "STAGE_C": 1},
           # B's 4-byte copies laid across the warp (what gemmlab.matmul runs where tiles take that path)
           {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "SPLIT": 3, "RAGGED_B": 1},
           {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "SPLIT": 2, "SPREAD": 4, "STAGES": 4, "RAGGED_B": 1},
           {"BM": 48, "BN": 32, "WM": 48, "WN": 32, "SPLIT": 2, "STAGE_C": 1, "RAGGED_B": 1},
           # A kept as it lies, copied 16 bytes at a time (K a multiple of 4, else refused by name)
           {"BM": 128, "BN": 32, "WM": 32, "WN": 32, "SPLIT": 4, "A_QUADS": 1},
           {"BM": 64, "BN": 64, "WM": 32, "WN": 64, "SPLIT": 3, "STAGE_C": 1, "A_QUADS": 1},
           {"BM": 64, "BN": 32, "WM": 32, "WN": 32, "BK": 32, "SPLIT": 2, "RAGGED_B": 1, "A_QUADS": 1},
           {"BM": 64, "BN": 64, "WM": 32, "WN": 64, "BK": 8, "KUNROLL": 8, "SPREAD": 0, "A_QUADS": 1}]
SHAPES = [
    Problem(1024, 1024, 1024),                    # whole tiles, 16-byte copies of B
    Problem(1023, 1025, 1021),                    # ragged everywhere: 4-byte copies, edges moved, K padded
    Problem(130, 4099, 33, alpha=0.5, beta=-1.0), # K shorter than a few tiles, beta read
    Problem(128, 128, 7),                         # K shorter than one tile: only the padded tile (SPREAD=0)
    Problem(1511, 131, 26),                       # two K tiles, the first padded: never a piece of its own
    Problem(640, 520, 72),                        # five, the first padded: a first piece of at least two
    Problem(300, 260, 2000, lda=2004, ldb=264, ldc=261, alpha=-2.0, beta=0.25),   # padded rows, C's odd
]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", CONFIGS, ids=["-".join(f"{k}{v}" for k, v in c.items()) for c in CONFIGS])
def test_split_k_is_right_on_every_path(cfg):
    """Edges moved inside C, the zero-filled first tile, both copy widths of B, the workspace sum,
    alpha and beta: every shape the tiles fit is computed right, twice in a row (the arrival counts
    are back at 0 after each launch)."""
    kernel = bench.Kernel(SPEC, cfg)
    for problem in SHAPES:
        if kernel.params["SPREAD"] and problem.K < kernel.params["BK"]:
            with pytest.raises(UnsupportedShape) as refused:     # the repeated copies would read outside
                kernel.validate(problem, seed=7)
            assert refused.value.rule == "k-whole-tile"
            continue
        if kernel.params["A_QUADS"] and (problem.K % 4 or problem.lda % 4):
            with pytest.raises(UnsupportedShape) as refused:     # A's rows not in 16-byte chunks
                kernel.validate(problem, seed=7)
            assert refused.value.rule == "a-quads"
            continue
        for seed in (7, 8):
            check = kernel.validate(problem, seed=seed)
            assert check.ok, f"{cfg} {problem}: {check}"


@pytest.mark.gpu
def test_split_k_gives_the_same_bits_every_run():
    """The last piece adds the partial tiles in piece order whichever arrived last: the same operands
    give the same result, bit for bit."""
    import cupy as cp
    kernel = bench.Kernel(SPEC, {"SPLIT": 6})
    ops = bench.Operands.random(Problem(256, 320, 3000), seed=3)
    kernel(ops)
    first = ops.C.copy()
    for _ in range(20):
        kernel(ops)
    assert bool(cp.all(first == ops.C))


@pytest.mark.gpu
@pytest.mark.parametrize("ragged_b", [0, 1])
def test_split_k_is_right_from_pointers_off_16_bytes(ragged_b):
    """Operands that start 4 bytes past a 16-byte boundary: B takes the 4-byte copies, C the 4-byte stores."""
    import cupy as cp
    kernel = bench.Kernel(SPEC, {"SPLIT": 2, "RAGGED_B": ragged_b})
    problem = Problem(200, 300, 200, lda=204, ldb=304, ldc=301)
    ops = bench.Operands.random(Problem(200, 301, 201, lda=204, ldb=304), seed=5)
    shifted = bench.Operands(problem, ops.A[:, 1:201], ops.B[1:201, 1:301],
                             cp.full((200, 301), cp.nan, cp.float32)[:, 1:], None)
    kernel(shifted)
    check = bench.check(shifted)
    assert check.ok, check


@pytest.mark.gpu
def test_a_quads_refuses_operands_off_16_bytes_by_name():
    """A_QUADS=1 copies A 16 bytes at a time: an A that starts 4 bytes past a boundary is refused, not misread."""
    kernel = bench.Kernel(SPEC, {"BM": 64, "BN": 32, "WM": 32, "WN": 32, "A_QUADS": 1})
    ops = bench.Operands.random(Problem(128, 64, 68, lda=72), seed=5)
    with pytest.raises(UnsupportedShape) as refused:
        kernel.launch(Problem(128, 64, 64, lda=72), ops.A[:, 1:65], ops.B[:64], ops.C)
    assert refused.value.rule == "pointer-alignment"


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [{"BM": 64, "BN": 32, "WM": 32, "WN": 32, "SPLIT": 8, "A_QUADS": 1},
                                 {"BM": 128, "BN": 64, "WM": 64, "WN": 64, "SPLIT": 4, "STAGE_C": 1, "A_QUADS": 1}],
                         ids=["narrow", "wide"])
def test_a_quads_fuzz_gives_no_wrong_answer(cfg):
    """Random problems A_QUADS=1 takes (K and lda multiples of 4; M, N, K, padding, alpha, beta at random): each is
    computed right, or refused by the rule it breaks (a tile larger than C)."""
    import random
    rng = random.Random("fuzz-a-quads")
    kernel = bench.Kernel(SPEC, cfg)
    right = 0
    for _ in range(120):
        M, N, K = rng.randint(1, 700), rng.randint(1, 700), 4 * rng.randint(1, 400)
        problem = Problem(M, N, K, lda=K + 4 * rng.randint(0, 2), ldb=N + rng.randint(0, 7), ldc=N + rng.randint(0, 7),
                          alpha=rng.uniform(-2, 2), beta=0.0 if rng.random() < 0.25 else rng.uniform(-2, 2))
        try:
            check = kernel.validate(problem, seed=rng.randint(0, 2**31))
        except UnsupportedShape as exc:
            assert exc.rule in ("tile-fits", "k-whole-tile"), f"{problem}: {exc}"
            continue
        assert check.ok, f"{cfg} {problem}: {check}"
        right += 1
    assert right >= 60


def test_a_quads_is_right_on_the_cpu():
    """The CPU runner (CUDA's semantics, threads in two orders between barriers): A's 16-byte chunks, the
    zero-filled first K tile a chunk at a time, padded rows, alpha and beta, and a split."""
    from gemmlab import cpu
    full = SPEC.resolve({"BM": 64, "BN": 32, "WM": 32, "WN": 32, "SPLIT": 2, "A_QUADS": 1})
    program = cpu.build(SPEC, full)
    for problem in (Problem(131, 37, 264), Problem(200, 70, 72, lda=76, ldb=75, ldc=73, alpha=1.5, beta=0.5)):
        assert cpu.run(program, SPEC, full, problem, 1, SPEC.path, SPEC.path.name) == \
            {"forward": None, "reverse": None}, problem


def test_the_cpu_runner_is_right_where_addresssanitizer_keeps_fake_stacks(monkeypatch):
    """GCC 13's AddressSanitizer keeps fake stacks (use-after-return detection) by default, and the runner switched
    fibers without keeping them: every chapter 13 configuration faulted (SEGV) on the CPU with Ubuntu 24.04's g++.
    With them on here, the defaults and `A_QUADS=1` are right."""
    from gemmlab import cpu
    monkeypatch.setattr(cpu, "ASAN_OPTIONS", cpu.ASAN_OPTIONS + ":detect_stack_use_after_return=1")
    for cfg, problem in (({}, Problem(70, 66, 36)), ({"BM": 64, "BN": 32, "WM": 32, "WN": 32, "A_QUADS": 1},
                                                      Problem(131, 37, 264))):
        if not cpu.sanitizers(tuple(cpu.compiler())):
            pytest.skip("this C++ compiler builds no AddressSanitizer")
        full = SPEC.resolve(cfg)
        program = cpu.build(SPEC, full)
        assert cpu.run(program, SPEC, full, problem, 1, SPEC.path, SPEC.path.name) == \
            {"forward": None, "reverse": None}, cfg


def test_a_quads_takes_a_k_of_whole_quads_and_aligned_rows_only():
    """Refused by name where A's rows are not 16-byte chunks; its tile as it lies needs no padded rows."""
    quads = SPEC.resolve({"BM": 64, "BN": 32, "WM": 32, "WN": 32, "A_QUADS": 1})
    SPEC.check_shape(quads, Problem(64, 32, 100))
    for problem in (Problem(64, 32, 99), Problem(64, 32, 96, lda=98)):
        with pytest.raises(UnsupportedShape) as refused:
            SPEC.check_shape(quads, problem)
        assert refused.value.rule == "a-quads" and f"lda={problem.lda}" in str(refused.value)
    SPEC.check_shape({**quads, "A_QUADS": 0}, Problem(64, 32, 99))
    assert SPEC.pointer_alignment(quads) == 16 and SPEC.pointer_alignment({**quads, "A_QUADS": 0}) == 4
    # the tile's shared memory: A's BM x BK floats a stage, without the transposed tile's 4 floats of padding a row
    assert SPEC.dynamic_smem({**quads, "A_QUADS": 0}) - SPEC.dynamic_smem(quads) == 4 * 4 * quads["BK"] * quads["STAGES"]
    assert not SPEC.is_legal({**quads, "BM": 48, "WM": 48, "BN": 128})    # 192 chunks over 128 threads


def test_a_tile_larger_than_c_is_refused_by_name():
    with pytest.raises(UnsupportedShape) as refused:
        SPEC.check_shape(SPEC.resolve({"BM": 128, "BN": 64, "WM": 32, "WN": 32}), Problem(100, 4096, 4096))
    assert refused.value.rule == "tile-fits" and "128 x 64" in str(refused.value)
    SPEC.check_shape(SPEC.resolve({"BM": 32, "BN": 64}), Problem(32, 64, 16))
    SPEC.check_shape(SPEC.resolve({"BM": 32, "BN": 64, "SPREAD": 0}), Problem(32, 64, 1))


def test_the_workspace_bounds_the_split():
    """A launch cuts every tile into SPLIT pieces where the workspace holds them all, into fewer where
    it does not, and never into more than K has tiles; no shape is refused for it."""
    p = SPEC.resolve({"SPLIT": 8})                      # 64 x 64 tiles
    assert SPEC.k_split(p, Problem(640, 640, 640)) == 8
    assert SPEC.k_split(p, Problem(2048, 2048, 2048)) == 2          # 1,024 tiles: room for 2 each
    assert SPEC.k_split(p, Problem(4096, 4096, 4096)) == 1
    assert SPEC.k_split(p, Problem(640, 640, 48)) == 3              # 3 K tiles of 16
    assert SPEC.k_split(p, Problem(640, 640, 72)) == 2              # 5, the first padded: 2 of them at least
    assert SPEC.launch(p, Problem(4096, 4096, 4096))[0] == (64, 64, 1)
    SPEC.check_shape(p, Problem(4096, 4096, 4096))


def test_a_launch_in_fewer_pieces_than_split_says_which_bound_cut_it():
    """The plan shows SPLIT as the configuration has it; where the launch cuts fewer pieces, the reason names the
    bound that cut them: the workspace (with what the pieces would need), or K's tiles."""
    p = SPEC.resolve({"SPLIT": 8})                      # 64 x 64 tiles
    assert SPEC.k_split_why(p, Problem(640, 640, 640)) == ""
    roomy = SPEC.k_split_why(p, Problem(2048, 2048, 2048))      # 1,024 tiles x 8 pieces x 16 KiB = 128 MiB
    assert "here 2" in roomy and "128 MiB" in roomy and "32 MiB" in roomy
    assert "here 3" in SPEC.k_split_why(p, Problem(640, 640, 48)) and "3 tiles of 16" in SPEC.k_split_why(p, Problem(640, 640, 48))
    assert "first padded" in SPEC.k_split_why(p, Problem(640, 640, 72))
    assert "first padded" not in SPEC.k_split_why(SPEC.resolve({"SPLIT": 8, "SPREAD": 0}), Problem(640, 640, 72))
    for k in (16, 48, 72, 640, 4096):
        for size in (640, 2048, 4096):
            pr = Problem(size, size, k)
            assert (SPEC.k_split_why(p, pr) == "") == (SPEC.k_split(p, pr) == 8)


@pytest.mark.parametrize("spread", [0, 2, 4])
def test_no_block_ends_on_the_padded_first_k_tile(spread):
    """The copies past a block's last K tile repeat it unpadded (SPREAD > 0), which would read before A
    and B if that tile were the padded tile 0: the first piece of a split keeps at least two K tiles
    where K is padded, and a K shorter than one tile is refused by name. With SPREAD=0 nothing repeats."""
    for split in (2, 3, 4, 8, 16):
        p = SPEC.resolve({"SPLIT": split, "SPREAD": spread})
        for k in range(1, 300):
            problem = Problem(640, 640, k)
            tiles_k, padded = -(-k // p["BK"]), k % p["BK"] != 0
            if spread and k < p["BK"]:
                with pytest.raises(UnsupportedShape) as refused:
                    SPEC.check_shape(p, problem)
                assert refused.value.rule == "k-whole-tile" and f"K={k}" in str(refused.value)
                continue
            SPEC.check_shape(p, problem)
            pieces = SPEC.k_split(p, problem)
            first = tiles_k // pieces                   # the kernel's t1 of piece 0
            assert 1 <= pieces <= min(split, tiles_k)
            if spread and padded and tiles_k > 1:
                assert first >= 2, (split, k)
            if not spread:
                assert pieces == min(split, tiles_k)


def test_the_workspace_sizes_agree_with_the_kernel():
    import re
    from gemmlab.specs import ch13_split_k
    text = SPEC.path.read_text()
    assert int(re.search(r"#define ARRIVALS (\d+)", text).group(1)) == ch13_split_k.ARRIVALS
    assert re.search(r"#define PARTIAL_FLOATS \(1 << (\d+)\)", text).group(1) == "23" == \
        str(ch13_split_k.PARTIAL_FLOATS.bit_length() - 1)


def test_a_split_launch_has_a_block_per_piece():
    """The grid's z is SPLIT; the launch's waves count the pieces, each running its share of K."""
    p = SPEC.resolve({"SPLIT": 4})
    problem = Problem(640, 640, 640)
    grid, block = SPEC.launch(p, problem, 264)
    assert grid == (10, 10, 4) and block == (128, 1, 1)
    launch = plan.launch_with(SPEC, p, problem, {"sm_count": 132, "l2_bytes": 50 << 20, "peak_fp32_tflops": 60.0,
                                                 "dram_gbs": 3350.0}, 2, "a GPU")
    assert launch.blocks == 400 and launch.piece_steps == 10 and launch.k_steps == 40
    assert abs(launch.slot_use - 400 / 264 / 2) < 1e-9
    waves, steps, *_ = time_model.features(SPEC, p, problem, 132, 2)
    assert waves == 2 and steps == 10


def test_regime_shapes_are_outside_the_suite():
    for shape in registry.programme(SPEC).regime_shapes:
        assert shape not in training.MATMUL_SUITE
