"""How lesson cells put text on the page: Markdown in a notebook, plain text elsewhere."""
from __future__ import annotations


def markdown(text: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
        if get_ipython() is not None:
            display(Markdown(text))
            return
    except ImportError:
        pass
    print(text)


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def beside_header(src) -> list[str]:
    """Table columns for the reference record beside live measurements (none where there is no
    reference: with no GPU, or on a GPU with its own record)."""
    if src.reference is None:
        return []
    return [f"{src.reference.device['name']} record: TFLOP/s", "its share of cuBLAS"]


def beside_cells(src, row: dict | None) -> list[str]:
    if src.reference is None:
        return []
    return [f"{row['gflops'] / 1e3:.2f}", f"{row['ratio']:.1%}"] if row else ["-", "-"]


def beside_note(src) -> str:
    return (f" Beside it, the same configuration and size as {src.reference.label} ('-': not recorded there)."
            if src.reference is not None else "")


def friendly(fn):
    """A lesson that answers a learner's mistake (an unknown kernel, an illegal or unknown tunable,
    a refused shape, nothing recorded) with its one-line message instead of a traceback."""
    import functools

    from .. import arch, bench, records, registry
    from ..exercises import NoExercise
    from ..files import UnusableDirectory
    from ..spec import BadProblem, IllegalConfig, UnsupportedShape
    mistakes = (registry.UnknownKernel, IllegalConfig, UnsupportedShape, BadProblem, records.NotRecorded, records.StaleRecord,
                UnusableDirectory, bench.TooLarge, NoExercise, arch.UnknownArch)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except mistakes as exc:
            print(str(exc).splitlines()[0])
    return wrapper


def note_on_another_gpu(src) -> None:
    """On a GPU with no record of its own, say once, as a chapter starts, whose figures the text quotes: the text was
    written from the reference record, and this GPU's cells differ from it (how its ceilings differ, said)."""
    ref = src.reference
    if ref is None:                # no GPU here (every figure is the record's), or a GPU with a record of its own
        return
    here, there = src.attributes(), ref.device
    facts = [("SMs", "sm_count", "{:.0f}"), ("FP32 peak", "peak_fp32_tflops", "{:.1f} TFLOP/s"),
             ("rated DRAM bandwidth", "dram_gbs", "{:.0f} GB/s"), ("L2", "l2_bytes", "{:.0f} MiB")]
    scaled = {"l2_bytes": 2 ** -20}
    differ, same = [], []
    for what, key, form in facts:
        mine, theirs = (form.format(d[key] * scaled.get(key, 1)) for d in (here, there))
        (differ if mine != theirs else same).append(f"{what} {mine} against {theirs}" if mine != theirs else what)
    markdown(f"**Live on {here['name']}, a GPU with no record of its own.** Every cell measures it now, but the "
             f"text was written from the {there['name']} record ({ref.data['date']}): a figure the text quotes is "
             f"that GPU's, and yours differ"
             + (f" ({'; '.join(differ)}{'; the same ' + ', '.join(same) if same else ''})" if differ else "")
             + ". Tables show the record's figure beside yours where it has one.")
