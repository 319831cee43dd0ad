"""Wrong attempts of the kinds learners make, one edit each inside a chapter's exercise region: the
corpus the check must fail (tests/test_cpu_check.py without a GPU, .ci/exercise-verdicts on one).

Each entry: (chapter, text in the exercise region, what replaces it, the kind of bug, and, where a
check on the CPU cannot see it, why). A bug the CPU cannot see is one that only the GPU's memory
model or timing exposes (a fence, a barrier whose only job is ordering against another block)."""

from pathlib import Path


def planted(chapter: str, old: str, new: str, folder: Path) -> Path:
    """The chapter's kernel with `old` replaced by `new` inside its exercise region, as a learner's file."""
    from gemmlab import exercises, registry
    spec = registry.get(chapter)
    region = exercises.solution_region(spec)
    if old not in region:
        raise ValueError(f"{old!r} is not in {spec.name}'s exercise region")
    path = Path(folder) / spec.path.name
    path.write_text(spec.path.read_text().replace(region, region.replace(old, new, 1)))
    return path


# (chapter, old, new, kind, why the CPU check passes it or "")
BUGS = [
    ("01", "k < K;", "k < K - 1;", "index off by one", ""),
    ("01", "B[(size_t)k * ldb + col]", "B[(size_t)k * lda + col]", "wrong stride", ""),
    ("01", "A[(size_t)row * lda + k]", "A[(size_t)k * lda + row]", "indices swapped", ""),
    ("01", "k < K;", "k <= K;", "index off by one, past the end", ""),
    ("02", "        __syncthreads();\n", "", "barrier missing", ""),
    ("02", "(ar < M && ak < K)", "(ar < M - 1 && ak < K)", "wrong edge predicate", ""),
    ("02", "At[c][f] =", "At[f][c] =", "indices swapped", ""),
    ("02", "ak = k0 + c;", "ak = k0 + c + 1;", "index off by one", ""),
    ("03", "As[r][f] =", "As[f][r] =", "indices swapped", ""),
    ("03", "(bk < K && bc < N)", "(bk < K && bc <= N)", "wrong edge predicate", ""),
    ("03", "B[(size_t)bk * ldb + bc]", "B[(size_t)bk * lda + bc]", "wrong stride", ""),
    ("03", "ak = k0 + f;", "ak = k0 + r;", "a mapping that misses elements", ""),
    ("04", "TILE + 1 : TILE", "TILE - 1 : TILE", "rows overlap", ""),
    ("04", "TILE + 1 : TILE", "TILE + 2 : TILE", "padding of the wrong size", ""),
    ("04", "(LAYOUT == 1 ? TILE + 1 : TILE)", "(LAYOUT == 1 ? TILE : TILE + 1)", "padding in the wrong layout", ""),
    ("04", "TILE + 1 : TILE", "1 : TILE", "wrong stride", ""),
    ("05", "As[tr * TM + i][k]", "As[tr * TM + i][k + 1]", "index off by one", ""),
    ("05", "Bs[k][tc * TN + j]", "Bs[k][tr * TN + j]", "indices swapped", ""),
    ("05", "acc[i][j] += a[i] * b[j]", "acc[i][j] += a[i] * b[i]", "wrong operand", ""),
    ("05", "k < BK; ++k", "k < BK - 1; ++k", "index off by one", ""),
    ("06", "As[c + 1][r] = v.y; As[c + 2][r] = v.z;", "As[c + 1][r] = v.z; As[c + 2][r] = v.y;", "components swapped", ""),
    ("06", "c = e % (BK / 4) * 4;", "c = e % (BK / 4);", "wrong stride", ""),
    ("06", "reinterpret_cast<float4*>(&Bs[r][c])", "reinterpret_cast<float4*>(&Bs[r][c + 1])", "misaligned vector", ""),
    ("06", "k0 + c, M, K)", "k0 + c, K, M)", "wrong edge predicate", ""),
    ("07", "store_tiles(s ^ 1)", "store_tiles(s)", "the prefetch stored into the stage being read", ""),
    ("07", "        __syncthreads();\n        s ^= 1;", "        s ^= 1;", "barrier missing", ""),
    ("07", "        s ^= 1;\n", "", "the stage never changes", ""),
    ("07", "load_tiles(k0 + BK)", "load_tiles(k0)", "the wrong tile prefetched", ""),
    ("08", "lr = lane / (WSUBN / TN), lc = lane % (WSUBN / TN)", "lr = lane % (WSUBN / TN), lc = lane / (WSUBN / TN)",
     "indices swapped", ""),
    ("08", "wr = warp / (BN / WN), wc = warp % (BN / WN)", "wr = warp % (BN / WN), wc = warp / (BN / WN)",
     "indices swapped", ""),
    ("08", "lane = tid % 32", "lane = tid % 16", "wrong stride", ""),
    ("09", "STAGES - 2>", "STAGES - 1>", "a read before its wait", ""),
    ("09", "        __syncthreads();                       // everyone's", "        // everyone's",
     "barrier missing", ""),
    ("09", "issue(next, next % STAGES)", "issue(next, t % STAGES)", "the wrong pipeline stage", ""),
    ("09", "        commit();\n", "", "a group never committed", ""),
    ("10", "1 + c / SPREAD_BY * (BK - 1)", "1 + (c / SPREAD_BY + 1) * (BK - 1)",
     "a group of copies never issued (its step past the last)", ""),
    ("10", "if (k == BK - 1) commit();", "if (k == BK / 2) commit();", "a group committed before its last copies", ""),
    ("10", "As + next % STAGES * A_STAGE", "As + t % STAGES * A_STAGE", "the wrong pipeline stage", ""),
    ("10", "a_src + src_t * BK", "a_src + next * BK", "past the last tile, copies read past the end of A", ""),
    ("10", "b_src + (size_t)src_t * BK * ldb", "b_src + (size_t)src_t * BK", "wrong stride", ""),
    ("11", "while (seen != done.piece)", "while (seen != done.piece + 1)", "a wait for a flag never set", ""),
    ("11", "        beta = 1.0f;\n", "", "pieces overwrite instead of adding", ""),
    ("11", "if (done.piece > 0)", "if (done.piece > 1)", "wrong edge predicate", ""),
    ("11", "        __syncthreads();\n        beta", "        beta", "barrier missing",
     "its only job is ordering the block's reads of C after thread 0 has seen the flag: on the CPU the blocks "
     "run one after another, so the earlier piece has always finished"),
    ("12", "offset >= STRIDE", "offset > STRIDE", "the butterfly stops one level early", ""),
    ("12", "__shfl_xor_sync(0xffffffffu", "__shfl_xor_sync(0x0000ffffu", "wrong shuffle mask", ""),
    ("12", "offset /= 2", "offset /= 4", "wrong shuffle distance", ""),
    ("12", "int offset = 16;", "int offset = 8;", "wrong shuffle distance", ""),
    ("12", "offset >= STRIDE", "offset >= 1", "a full-warp butterfly that mixes column groups", ""),
    ("13", "before == pieces - 1", "before == pieces", "wrong atomic count", ""),
    ("13", "atomicAdd(arrivals + tile, 1u)", "atomicAdd(arrivals + tile, 2u)", "wrong atomic count", ""),
    ("13", "        if (last) arrivals[tile] = 0;", "", "a counter never reset for the next launch", ""),
    ("13", "    __syncthreads();\n    if (!*flag)", "    if (!*flag)", "barrier missing", ""),
    ("13", "    __threadfence();                           // the other", "    // the other",
     "fence missing", "a fence orders memory between blocks running at once; on the CPU one block runs at a time"),
]
