"""Chapter 06: float4 global access, a transposed A tile for 128-bit shared loads, unrolling."""
from ..kernel_model import KernelModel
from ..spec import Evidence, Exercise, KernelSpec, Param
from .shared import (outer_owner, outer_rules, outer_smem_word, outer_thread_tile, outer_threads, tile_smem,
                     unroll_within_tile, vector_rows)

SPEC = KernelSpec(
    name="06_vectorize", chapter=6, title="06 unrolled + vectorized",
    technique="float4 global loads and stores, transposed A tile for 128-bit shared loads, #pragma unroll",
    params=(
        Param("BM", (128,), 128, "rows of the block's C tile"),
        Param("BN", (128,), 128, "columns of the block's C tile"),
        Param("BK", (8, 16), 8, "K step"),
        Param("TM", (8,), 8, "rows of C per thread"),
        Param("TN", (4, 8), 8, "columns of C per thread (a multiple of 4: float4 stores)"),
        Param("VECTORIZE", (0, 1), 1, "1: 128-bit global loads and stores; 0: 32-bit"),
        Param("UNROLL", (1, 4, 8, 16), 8, "#pragma unroll factor of the k loop over the tile"),
    ),
    threads=outer_threads, tile=lambda p: (p["BM"], p["BN"]),
    rules=outer_rules(vector=True) + (unroll_within_tile("UNROLL"),),
    shape_rules=(vector_rows(lambda p: p["VECTORIZE"] == 1),),
    k_tile=lambda p: p["BK"],
    thread_tile=outer_thread_tile,
    static_smem=tile_smem(lambda p: 1),
    pointer_alignment=lambda p: 16 if p["VECTORIZE"] else 4,
    # not unrolled, partly, fully, then the default factor: the chapter explains the partial unroll's
    # slowdown from their profiles
    steps=tuple((caption, {"BK": 16, "TN": 4, "UNROLL": u})
                for caption, u in (("k loop not unrolled", 1), ("unrolled by 4", 4), ("unrolled fully (16)", 16),
                                   ("unrolled by 8 (the default factor)", 8))),
    exercise=Exercise(
        task="Stage the tiles 4 floats at a time: 128-bit loads of $A$ and $B$ from global memory, the $A$ tile "
             "stored transposed (`As[k][m]`) so that the math reads a thread's $T_M$ values of $A$ with 128-bit "
             "shared loads, the $B$ tile stored as it is with one 128-bit store per float4.",
        starter="""        // TODO: stage this K step's tiles, a float4 (4 consecutive floats of a row) at a time. Each
        // thread loads BM * BK / 4 / THREADS float4s of the A tile (rows row0.., columns k0..) and
        // BK * BN / 4 / THREADS float4s of the B tile (rows k0.., columns col0..) with load4(), which
        // makes the 128-bit load and zero-fills past the edges. A goes into shared memory TRANSPOSED,
        // As[k][m]: the four floats of a float4 land in four rows of As. B goes in as it is, one
        // 128-bit store per float4 into Bs[k][n].
        TODO;
""",
        hints=("Two unrolled loops, one per tile, over the float4s a thread owns: float4 number "
               "e = tid + i * THREADS, so that consecutive threads load consecutive float4s of a row (coalesced).",
               "A row of the A tile holds BK / 4 float4s: float4 e is in row r = e / (BK / 4), columns c .. c + 3 "
               "with c = e % (BK / 4) * 4. A row of the B tile holds BN / 4. A float4 goes into Bs through a "
               "float4 pointer: *reinterpret_cast<float4*>(&Bs[r][c]) = ...",
               "A: const float4 v = load4(A, lda, row0 + r, k0 + c, M, K); As[c + 0][r] = v.x; As[c + 1][r] = v.y; "
               "As[c + 2][r] = v.z; As[c + 3][r] = v.w;  B: *reinterpret_cast<float4*>(&Bs[r][c]) = "
               "load4(B, ldb, k0 + r, col0 + c, K, N);"),
        # The 128-bit shared loads of the math (LDS.128) come from the As declaration and the reads,
        # outside the exercise; what the region decides is the global loads and the transposing stores.
        evidence=(Evidence("opcode", "the 128-bit loads of A and B from global memory", "LDG.E.128"),
                  Evidence("opcode", "A stored transposed: each float4 of A is four 32-bit stores, into four "
                                     "rows of As (B's float4 is one 128-bit store)", "STS"))),
)

MODEL = KernelModel(owner=outer_owner, smem_word=outer_smem_word(a_transposed=True))
