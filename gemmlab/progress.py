"""A progress bar that lasts as long as the wait: in a notebook, tqdm's widget shown in a display of its own and
emptied once the work is done, so that a notebook saved afterwards does not reopen on a bar frozen at its first
state (its saved text); elsewhere tqdm's text on stderr. No rate: a few long steps (compiles of seconds each) read
badly as seconds per step."""
from __future__ import annotations

import contextlib

FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}]"
# What a spent bar's display holds: nothing to show (research.notebooks.is_progress knows it)
SPENT = {"text/plain": ""}


def _notebook() -> bool:
    """Whether this runs in a Jupyter kernel, where a widget can be shown."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _bundle(widget) -> dict:
    """A widget's view as a display's data. ipywidgets 8 gives it (_repr_mimebundle_); 7 displays itself
    (_ipython_display_), and its display then carries no id to empty it by."""
    if hasattr(widget, "_repr_mimebundle_"):
        return widget._repr_mimebundle_()
    return {"text/plain": repr(widget),
            "application/vnd.jupyter.widget-view+json": {"version_major": 2, "version_minor": 0,
                                                          "model_id": widget.model_id}}


@contextlib.contextmanager
def transient(total: int, desc: str, enabled: bool = True):
    """A tqdm bar of `total` steps, to call .update(n) on; gone from a notebook's output when the block ends."""
    from tqdm.auto import tqdm
    shown = bar = None
    if enabled and _notebook():
        try:
            from IPython.display import display
            from tqdm.notebook import tqdm as widget_bar
            bar = widget_bar(total=total, desc=desc, bar_format=FORMAT, display=False)
            shown = display(_bundle(bar.container), raw=True, display_id=True)
        except Exception:            # no ipywidgets: the text bar below
            bar = shown = None
    if bar is None:
        bar = tqdm(total=total, desc=desc, bar_format=FORMAT, disable=not enabled)
    try:
        yield bar
    finally:
        bar.close()
        if shown is not None:
            shown.update(SPENT, raw=True)
