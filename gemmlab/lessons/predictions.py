"""Chapters 01, 02, 03, 04, 05, 07 and 09: before a number is shown, the learner predicts it. The
right answer is never written down here: each question works it out from the course's own models (the
roofline model of the requested traffic, the sector model, the spec's bank arithmetic, the thread
tile, Little's law with the record's latencies, the compiled build's occupancy) for the configuration
it asks about, and explains itself with the same numbers.

The questions are plain data (`Prediction`: question, blanks with their answers, explanation,
`is_right`), built by `prediction()` and testable without a front end; `quiz_widget` puts one in an
ipywidgets box with a Check button."""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import registry, roofline, results, widgets
from ..compile import ARCHS, DEFAULT_ARCH, CompileError, compile_kernel
from ..spec import IllegalConfig, Problem
from .models import BANKS, FLOAT, SECTOR, WARP, sectors_per_request, warp_requests
from .profiles import dram_in_flight, tile_bytes

# Answers that come out of a division of measured or modelled figures are accepted within this
# fraction of the model's value: a learner who rounds on the way (0.25 FLOP per byte, 11.4 bytes a
# cycle) is right.
ROUNDING = 0.02


class UnknownQuestion(KeyError):
    def __str__(self) -> str:
        return self.args[0]


class BadQuestion(ValueError):
    """A question asked about something it cannot be asked about (a lane past 31, a k past the tile)."""


@dataclass(frozen=True)
class Blank:
    """One box the learner fills in, and the value the model gives for it."""
    label: str
    answer: float
    tolerance: float = 0.0                 # how far an answer may be from `answer` (rounding)
    integer: bool = True                   # a whole number typed (or a Dropdown of `choices`), else any number
    choices: tuple[int, ...] = ()

    def accepts(self, value) -> bool:
        if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        return abs(float(value) - float(self.answer)) <= self.tolerance + 1e-9


@dataclass(frozen=True)
class Prediction:
    question: str
    blanks: tuple[Blank, ...]
    explanation: str

    @property
    def answer(self):
        """The right answer: one number, or one per blank."""
        values = tuple(b.answer for b in self.blanks)
        return values[0] if len(values) == 1 else values

    def is_right(self, answer) -> bool:
        """`answer`: a number (one blank) or a sequence of numbers, one per blank, in order."""
        values = tuple(answer) if isinstance(answer, Sequence) and not isinstance(answer, str) else (answer,)
        return len(values) == len(self.blanks) and all(b.accepts(v) for b, v in zip(self.blanks, values))

    def verdict(self, answer) -> str:
        return ("Right." if self.is_right(answer) else
                f"Not quite: the model says {_answer_text(self)}.") + "\n\n" + self.explanation


def _answer_text(p: Prediction) -> str:
    return ", ".join((f"{b.label}: " if len(p.blanks) > 1 else "") + f"{b.answer:g}" for b in p.blanks)


# --- the questions -------------------------------------------------------------------------------

def _rounded(label: str, value: float) -> Blank:
    return Blank(label, value, ROUNDING * abs(value), integer=False)


def _roofline(spec, full: dict, size) -> tuple[roofline.Traffic, Problem, float, float, float]:
    """(traffic, problem, FP32 peak GFLOP/s, DRAM GB/s, bound GFLOP/s): the roofline model of the
    requested traffic, the same calls gl.show_prediction makes."""
    problem = Problem(*results.shape(size))
    t = roofline.traffic(spec, full, problem)
    peak, bw = results.ceilings()
    return t, problem, peak, bw, roofline.attainable_gflops(t.intensity, peak, bw)


def _shape(problem: Problem) -> str:
    return f"{problem.M} x {problem.N} x {problem.K}"


def _naive_bound(size: int = 4096, **params) -> Prediction:
    """Chapter 01: the roofline bound of the naive kernel if every load it requests went to DRAM
    (roofline.traffic and the device's ceilings, as gl.show_prediction shows them)."""
    spec = registry.by_chapter(1)
    full = spec.resolve(params)
    t, problem, peak, bw, bound = _roofline(spec, full, size)
    device = results.here().device()["name"]
    return Prediction(
        f"Each thread of {spec.name} ({spec.config_label(full)}) reads its row of A and its column of B "
        f"straight from global memory: for every multiply-add (2 FLOPs) it loads two 4-byte floats. If every "
        f"one of those loads went to DRAM, at {bw:,.0f} GB/s (the DRAM bandwidth of the {device}), what is the "
        f"most TFLOP/s the kernel could reach at {_shape(problem)}? (Two decimals.)",
        (_rounded("TFLOP/s", bound / 1e3),),
        f"Per multiply-add a thread loads 2 floats = {2 * FLOAT} bytes for 2 FLOPs: {2 / (2 * FLOAT):g} FLOP per "
        f"byte. Over the whole problem the threads request {t.requested_bytes / 1e9:.2f} GB (their loads, and C "
        f"written once) for {t.flops / 1e9:,.1f} GFLOP: {t.intensity:.3f} FLOP per byte. The roofline bound is intensity x "
        f"bandwidth = {t.intensity:.3f} x {bw:,.0f} GB/s = {bound / 1e3:.2f} TFLOP/s, "
        f"{bound / peak:.1%} of the FP32 peak ({peak / 1e3:.1f} TFLOP/s): the loads, not the arithmetic, set "
        f"the limit.\n(The roofline model of the requested traffic, roofline.traffic, with no caches; no GPU "
        f"involved.)")


def _tile_intensity(size: int = 4096, **params) -> Prediction:
    """Chapter 02: FLOP per byte the tiled kernel's threads request from global memory (roofline.traffic,
    as gl.show_prediction shows it), against the naive kernel's."""
    spec, naive = registry.by_chapter(2), registry.by_chapter(1)
    full = spec.resolve(params)
    rows, cols = spec.tile(full)
    t, problem, peak, bw, bound = _roofline(spec, full, size)
    t0 = roofline.traffic(naive, naive.resolve({}), problem)
    return Prediction(
        f"{spec.name} ({spec.config_label(full)}): a block owns a {rows} x {cols} tile of C and streams the "
        f"{rows} rows of A and the {cols} columns of B it needs from global memory once, a tile at a time; its "
        f"threads compute from shared memory. At {_shape(problem)}, how many FLOPs does the kernel do per byte "
        f"its threads request from global memory? (Decimals are fine, to one place.)",
        (_rounded("FLOP per byte", t.intensity),),
        f"Every value of A that a block stages serves {cols} multiply-adds, every value of B {rows}: per "
        f"multiply-add the block loads 1/{cols} + 1/{rows} floats, 4 bytes each, for 2 FLOPs. Over the whole "
        f"problem the threads request {t.requested_bytes / 1e9:.2f} GB (the strips of A and B, and C written "
        f"once) for {t.flops / 1e9:,.1f} GFLOP: {t.intensity:.2f} FLOP per byte, {t.intensity / t0.intensity:.1f} "
        f"times the naive kernel's {t0.intensity:.2f}. At {bw:,.0f} GB/s that bounds the kernel at "
        f"{bound / 1e3:.2f} TFLOP/s, {bound / peak:.0%} of the FP32 peak ({peak / 1e3:.1f} TFLOP/s).\n"
        f"(The roofline model of the requested traffic, roofline.traffic, with no caches; no GPU involved.)")


def _dram_in_flight(**params) -> Prediction:
    """Chapter 07: by Little's law, the bytes each SM must have in flight to keep DRAM busy, from the
    record's measured DRAM latency and copy bandwidth (profiles.dram_in_flight, as gl.show_littles_law
    shows it); the explanation sets what the configuration's prefetch keeps in flight against it."""
    spec = registry.by_chapter(7)
    rec = results.record()
    lat = rec.data.get("latency")
    if lat is None:
        raise BadQuestion(f"{rec.label} has no memory latencies to ask about")
    d = rec.device
    rate, need = dram_in_flight(d, lat["dram_cycles"])
    build = compile_kernel(spec, {**params, "PREFETCH": 1})
    full, blocks = build.params, build.occupancy.blocks_per_sm
    rows, cols = spec.tile(full)
    tile = tile_bytes(spec, full)
    ahead = blocks * tile
    return Prediction(
        f"On the {d['name']} a load from DRAM takes {lat['dram_cycles']:.0f} cycles (measured by a pointer "
        f"chase), and DRAM delivers {d['measured_copy_gbs']:,.0f} GB/s (measured by a copy) to "
        f"{d['sm_count']} SMs clocked at {d['clock_mhz']:.0f} MHz. By Little's law, how many kilobytes "
        f"(1 KB = 1000 bytes) must each SM have in flight to keep DRAM busy? (One decimal place.)",
        (_rounded("KB per SM", need / 1e3),),
        f"Rate: {d['measured_copy_gbs']:,.0f} GB/s over {d['sm_count']} SMs at {d['clock_mhz']:.0f} MHz is "
        f"{rate:.2f} bytes per cycle per SM. In flight = latency x rate = {lat['dram_cycles']:.0f} x "
        f"{rate:.2f} = {need / 1e3:.1f} KB per SM.\n"
        f"{spec.name} [{spec.config_label(full)}]: a tile of A and B is ({rows} + {cols}) x {spec.k_tile(full)} "
        f"floats = {tile / 1e3:.1f} KB, and the build fits {_count(blocks, 'block')} on an SM. With PREFETCH=1 "
        f"each block keeps its next tile in flight while it computes: {blocks} x {tile / 1e3:.1f} = "
        f"{ahead / 1e3:.1f} KB per SM, {ahead / need:.1f} times what DRAM needs. With PREFETCH=0 a block's "
        f"loads are in flight only while its own warps wait for them.\n"
        f"(Latencies and bandwidth: {rec.label}.)")


def _sectors(size: int = 4096, **params) -> Prediction:
    """Chapter 03: sectors per warp-wide staging load of B, by the sector model (models.warp_requests)."""
    spec, before = registry.by_chapter(3), registry.by_chapter(2)
    problem = Problem(*results.shape(size))
    full, full_before = spec.resolve(params), before.resolve(params)
    counts = {}
    for s, p in ((spec, full), (before, full_before)):
        requests = warp_requests(s, p, problem)
        mine = [r for r in requests if r.operand == "B"]
        used = sum(len(set(r.addresses)) for r in mine) * FLOAT
        moved = sum(len(r.sectors) for r in mine) * SECTOR
        counts[s.name] = (sectors_per_request(requests, "B"), len(mine), used / moved, _spread(mine[0], problem.ldb))
    now, then = counts[spec.name], counts[before.name]
    exact = float(now[0]).is_integer()
    least = WARP * FLOAT // SECTOR
    return Prediction(
        f"How many 32-byte sectors does one warp-wide load request of B touch in {spec.name}'s staging loads "
        f"({spec.config_label(full)}, row-major {problem.K} x {problem.N} B)?",
        (Blank("sectors per request", now[0], 0.0 if exact else 0.05, exact),),
        f"{spec.name} [{spec.config_label(full)}]: warp 0 issues {_count(now[1], 'load')} of B per step of k. In the first, "
        f"its 32 lanes read {now[3]}, so a request touches {now[0]:g} sectors of 32 bytes and {now[2]:.1%} of the "
        f"bytes moved are used ({least} sectors is the least 32 floats can take).\n"
        f"{before.name} [{before.config_label(full_before)}], with the fast thread index down the rows: its lanes "
        f"read {then[3]}, so {then[0]:g} sectors per request and {then[2]:.1%} of the bytes used: "
        f"{then[0] / now[0]:g} times the sectors for the same bytes.\n"
        f"(The sector model of the kernels' indexing, models.warp_requests; no GPU involved.)")


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


def _spread(request, ld: int) -> str:
    rows = sorted({r for r, _ in request.elements})
    if len(rows) == 1:
        span = max(request.addresses) - min(request.addresses) + FLOAT
        return f"{len(set(request.addresses))} neighbouring floats of one row of B ({span} bytes)"
    return f"floats in {len(rows)} different rows of B, {ld * FLOAT} bytes apart from one row to the next"


def _bank(lane: int = 5, k: int = 0, **params) -> Prediction:
    """Chapter 04: the bank a lane's read of the B tile hits, by its model's bank_words (as show_banks)."""
    spec = registry.by_chapter(4)
    layouts = (params.pop("LAYOUT"),) if "LAYOUT" in params else (0, 1)
    fulls = [spec.resolve({**params, "LAYOUT": layout}) for layout in layouts]
    if not 0 <= lane < WARP:
        raise BadQuestion(f"lane must be 0 to {WARP - 1}, not {lane}")
    if not 0 <= k < spec.k_tile(fulls[0]):
        raise BadQuestion(f"k must be 0 to {spec.k_tile(fulls[0]) - 1} (one tile's steps), not {k}")
    blanks, lines = [], []
    for full in fulls:
        words = registry.model(spec).bank_words(full, k)
        word, bank = words[lane], words[lane] % BANKS
        banks = {w % BANKS for w in words}
        degree = max(len({w for w in words if w % BANKS == b}) for b in banks)
        verdict = ("conflict-free" if degree == 1 else
                   f"a {degree}-way bank conflict: the read is replayed {degree} times")
        blanks.append(Blank(f"LAYOUT={full['LAYOUT']}", bank, choices=tuple(range(BANKS))))
        lines.append(f"LAYOUT={full['LAYOUT']}: lane {lane} reads word {word} of the tile, bank {word} mod {BANKS} = "
                     f"{bank}. The warp's 32 words fall in {_count(len(banks), 'bank')}: {verdict}.")
    rest = spec.config_label({key: v for key, v in fulls[0].items() if key != "LAYOUT"})
    which = " and with ".join(f"LAYOUT={f['LAYOUT']}" for f in fulls)
    return Prediction(
        f"Which shared-memory bank does lane {lane} of warp 0 hit in its first load of the B tile at step k={k}, "
        f"with {which} ({spec.name}, {rest})? A bank is the 4-byte word address mod 32.",
        tuple(blanks),
        "\n".join(lines) + "\n(The words are the kernel's indexing, its model's bank_words, as show_banks draws them.)")


def _ffma_per_load(**params) -> Prediction:
    """Chapter 05: FFMAs per value loaded from shared memory, from the spec's thread tile."""
    spec = registry.by_chapter(5)
    full = spec.resolve(params)
    tm, tn = spec.thread_tile(full)
    ratio = tm * tn / (tm + tn)
    return Prediction(
        f"For TM={tm}, TN={tn} ({spec.name}, {spec.config_label(full)}), how many FFMAs does a thread issue per "
        f"value it loads from shared memory? (Decimals are fine, to one place.)",
        (Blank("FFMAs per value", ratio, 0.05, integer=False),),
        f"Per step of k a thread loads TM + TN = {tm} + {tn} = {tm + tn} values ({tm} of A, {tn} of B) and does "
        f"TM x TN = {tm} x {tn} = {tm * tn} FFMAs with them: {tm * tn} / {tm + tn} = {ratio:.2f} FFMAs per value. "
        f"The inner products of chapters 02-04 did fewer than 1 (OUTPUTS/(OUTPUTS+1)).")


def _blocks_per_sm(arch: str = DEFAULT_ARCH, **params) -> Prediction:
    """Chapter 09: resident blocks per SM, from the compiled build's occupancy (no GPU needed)."""
    spec = registry.by_chapter(9)
    if arch not in ARCHS:
        raise BadQuestion(f"arch must be one of {', '.join(ARCHS)}, not {arch!r}")
    build = compile_kernel(spec, params, arch)
    full, occ, b = build.params, build.occupancy, build.occupancy.budget
    threads, warps = spec.threads(full), b["warps_per_block"]
    tm, tn = spec.thread_tile(full)
    smem = b["shared_per_block"] - b["reserved_per_block"] if b["shared_per_block"] else 0
    regs = build.resources.registers
    lines = [f"threads: {threads} a block, {b['threads_per_sm']} an SM -> {_count(occ.limits['threads'], 'block')}",
             (f"registers: {regs} a thread -> {b['registers_per_warp']} a warp (allocated in units of 256) x "
              f"{warps} warps = {b['registers_per_warp'] * warps} a block, {b['registers_per_sm']} an SM -> "
              f"{_count(occ.limits['registers'], 'block')}")]
    if "shared memory" in occ.limits:
        lines.append(f"shared memory: {occ.shared_need()} a block, "
                     f"{b['shared_per_sm']} B an SM -> {_count(occ.limits['shared memory'], 'block')}")
    lines.append(f"the SM's block limit: {occ.limits['blocks']}")
    return Prediction(
        f"How many blocks of {spec.name} fit on one SM ({arch}) at these tunables ({spec.config_label(full)}): "
        f"{threads} threads a block, {tm} x {tn} = {tm * tn} accumulators a thread, {smem / 1024:g} KiB of "
        f"shared memory a block?",
        (Blank("blocks per SM", occ.blocks_per_sm),),
        "From the compiled build (compile_kernel(...).occupancy, no GPU needed):\n  "
        + "\n  ".join(lines)
        + f"\nThe smallest wins: {_count(occ.blocks_per_sm, 'block')} per SM, limited by {occ.limited_by}: "
          f"{occ.warps_per_sm} of {occ.max_warps_per_sm} warps ({occ.fraction:.0%} occupancy).")


QUESTIONS: dict[str, Callable[..., Prediction]] = {
    "naive_bound": _naive_bound,
    "tile_intensity": _tile_intensity,
    "sectors": _sectors,
    "bank": _bank,
    "ffma_per_load": _ffma_per_load,
    "dram_in_flight": _dram_in_flight,
    "blocks_per_sm": _blocks_per_sm,
}


def prediction(question: str, **params) -> Prediction:
    """The question `question` about the configuration `params` (tunables over the defaults, and the
    question's own settings: size for "naive_bound", "tile_intensity" and "sectors", lane and k for
    "bank", arch for "blocks_per_sm").
    Raises UnknownQuestion, IllegalConfig, BadQuestion or CompileError."""
    if question not in QUESTIONS:
        raise UnknownQuestion(f"no question {question!r}; the known ones are: {', '.join(QUESTIONS)}")
    return QUESTIONS[question](**params)


# --- the widget ----------------------------------------------------------------------------------

QUIZ_SUMMARY = "[an answer box and a Check button: run this cell to answer]"


def _number(text: str, integer: bool):
    """A typed answer as a number ('32.0', '1,024' with a thousands comma, and '0,84' with a decimal one too);
    ValueError with the fix where it is none."""
    typed = text.strip().replace("_", "")
    if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d*)?", typed):       # 1,024 or 16,384.5
        typed = typed.replace(",", "")
    elif typed.count(",") == 1 and "." not in typed:                 # 0,84: a decimal comma
        typed = typed.replace(",", ".")
    try:
        value = float(typed)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"'{text.strip()}' is not a number: type digits, like 32 or 0.25")
    if integer and not value.is_integer():
        raise ValueError(f"'{text.strip()}' is not a whole number: this answer is one, like 32")
    return int(value) if integer else value


def quiz_widget(p: Prediction):
    """A box per blank (a text box for a number, or a Dropdown of the choices), a Check button and an
    output area: the verdict, then the explanation."""
    import ipywidgets as w
    boxes = []
    for blank in p.blanks:
        if blank.choices:
            # index 0, not value None: ipywidgets 8 shows value None as an empty box, not as "choose"
            boxes.append(w.Dropdown(options=[("choose", None)] + [(str(c), c) for c in blank.choices],
                                    index=0, description=blank.label,
                                    style={"description_width": "initial"}))
        else:          # empty to start with: a box that started at 0 was checked as the answer 0
            boxes.append(w.Text(value="", placeholder="a whole number" if blank.integer else "a number",
                                description=blank.label, style={"description_width": "initial"}))
    button, out = w.Button(description="Check", button_style="primary"), w.Output()

    def check(_=None):
        out.clear_output()
        with out:
            if any(box.value is None if blank.choices else not box.value.strip() for blank, box in zip(p.blanks, boxes)):
                print("Choose or type an answer in every box first.")
                return
            try:
                values = [box.value if blank.choices else _number(box.value, blank.integer)
                          for blank, box in zip(p.blanks, boxes)]
            except ValueError as exc:
                print(exc)
                return
            print(p.verdict(values if len(values) > 1 else values[0]))
    button.on_click(check)
    return widgets.Panel([w.HBox([*boxes, button]), out], QUIZ_SUMMARY)


def show_prediction_quiz(question: str, **params) -> None:
    """Before the lesson shows a number, the learner predicts it: the question (printed, so it reads
    without a front end), then a box for the answer and a Check button that says whether it was right
    and why, with the numbers of the course's models."""
    try:
        p = prediction(question, **params)
    except UnknownQuestion as exc:
        print(exc)
        return
    except (IllegalConfig, BadQuestion, CompileError) as exc:
        print(f"cannot ask {question!r} about this configuration: {exc}")
        return
    print(p.question)
    try:
        from IPython import get_ipython
        from IPython.display import display
        if get_ipython() is not None:
            display(quiz_widget(p))
            return
    except ImportError:
        pass
    print("(The answer box and its Check button need Jupyter; open the notebook to answer.)")
