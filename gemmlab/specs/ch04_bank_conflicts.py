"""Chapter 04: 03 with the B tile stored transposed, conflicting, padded or swizzled."""
from ..course import Programme
from ..spec import Evidence, Exercise, Param
from .tiled import tiled_model, tiled_spec


def _stride(p) -> int:
    return p["TILE"] + 1 if p["LAYOUT"] == 1 else p["TILE"]


def _bt_word(p, n: int, k: int) -> int:  # kernels/04_bank_conflicts.cu, bt()
    return n * _stride(p) + ((k ^ (n % p["TILE"])) if p["LAYOUT"] == 2 else k)


_LAYOUT = Param("LAYOUT", (0, 1, 2), 0, "0: B tile transposed as is (conflicts), 1: padded rows, 2: XOR swizzle")

SPEC = tiled_spec(
    "04_bank_conflicts", 4, "04 bank conflicts",
    "03 with the B tile stored transposed; LAYOUT: 0 conflicting, 1 padded, 2 XOR-swizzled",
    params=(Param("TILE", (16, 32, 64), 32, "edge of the square tile of C a block owns, and the K step"),
            Param("OUTPUTS", (4, 8), 4, "elements of C each thread computes"),
            _LAYOUT),
    static_smem=lambda p: 4 * p["TILE"] * (p["TILE"] + _stride(p)),
    exercise=Exercise(
        task="Pad the transposed $B$ tile (`LAYOUT=1`) so that the 32 lanes reading one of its columns hit 32 "
             "different banks.",
        starter="""// TODO: the row stride of the transposed B tile Bt, in floats. With LAYOUT == 1 the rows are padded
// so that lanes n = 0..31 reading word n * BT_STRIDE + k fall in 32 different banks (bank = word % 32).
#define BT_STRIDE (LAYOUT == 1 ? TODO : TILE)
""",
        hints=("With a stride of TILE = 32 words, every row starts in bank 0: 32 lanes, one bank.",
               "A stride that is odd (relative to 32) spreads consecutive rows over consecutive banks.",
               "TILE + 1."),
        evidence=(Evidence("shared_bytes", "the padded tile is one word per row longer than the unpadded one"),),
        params={"LAYOUT": 1}),
)

MODEL = tiled_model(
    lanes_along_rows=False,
    # the word each lane of warp 0 reads in the inner loop, at step k
    bank_words=lambda p, k: [_bt_word(p, lane % p["TILE"], k) for lane in range(32)])

# the counters of every layout: the conflicts each one leaves
PROGRAMME = Programme(counter_overrides=tuple({"LAYOUT": v} for v in _LAYOUT.values))
