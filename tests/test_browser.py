"""The course in a real browser: JupyterLab started with the settings `make lab` uses
(.lab/jupyter_lab_config.py), driven by Chromium through Playwright, with no GPU.

- Three chapters run from top to bottom with no error, and chapter 03's explorer refuses a refused
  configuration.
- The learner's loop, in an early, a middle and a late chapter: the exercise's link opens the learner's
  copy in JupyterLab's editor; the check fails on the starter; a fix typed into the editor and saved
  passes it; two slider moves redraw the explorer's chart, checked on the picture itself against the same
  chart drawn here from code.
- The lab opens quietly (no news or update pop-up).

With GEMMLAB_BROWSER_LAB_PYTHON set (`make test-widgets7`), the lab and the notebooks' kernel are that
interpreter's: JupyterLab 3 with ipywidgets 7.7, the last lab whose widget manager speaks ipywidgets 7 (the
manager of JupyterLab 4 loads only ipywidgets 8's models).

Skips with a reason where JupyterLab, Playwright or Chromium is missing (nothing is downloaded at
run time: Playwright drives the system's Chromium, Debian's package `chromium`). On a failure the
page is kept as a screenshot in test-artifacts/ at the repository root; the loop keeps a screenshot of
every step there too (test-artifacts/loop-*.png)."""
from __future__ import annotations

import base64
import contextlib
import http.client
import importlib.util
import io
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
LAB_CONFIG = ROOT / ".lab" / "jupyter_lab_config.py"
ARTIFACTS = ROOT / "test-artifacts"
CHAPTERS = ["00_your_gpu.ipynb", "03_coalescing.ipynb", "11_last_wave.ipynb", "12_skinny.ipynb"]
EXPLORER_CHAPTER = "03_coalescing.ipynb"
LOOP_CHAPTERS = ["02_smem_tiling.ipynb", "07_prefetch.ipynb", "12_skinny.ipynb"]   # early, middle, late
REFUSED_TEXT = "no measurement: this configuration is refused (above)"
LAB_PYTHON = os.environ.get("GEMMLAB_BROWSER_LAB_PYTHON") or sys.executable

# What the machine notes ask of a headless Chromium with no network: no background connections.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_START_S = 90     # JupyterLab answering
CHAPTER_RUN_S = 300     # one chapter's Run All, kernel start included
CELL_RUN_S = 180        # one cell (a check compiles two kernels)
WIDGET_S = 60           # the explorer recompiling after a slider moved

pytestmark = pytest.mark.browser


def _chromium() -> str | None:
    for candidate in (os.environ.get("GEMMLAB_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _skip_reason() -> str | None:
    if importlib.util.find_spec("jupyterlab") is None:
        return "JupyterLab is not installed (`make env-lab` installs it)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (the browser extra: `make env-browser`)"
    if _chromium() is None:
        return "no Chromium at /usr/bin/chromium (Debian: apt-get install chromium)"
    return None


if _skip_reason():
    pytest.skip(_skip_reason(), allow_module_level=True)

from playwright.sync_api import Page, sync_playwright  # noqa: E402


# ---------------------------------------------------------------- JupyterLab, as `make lab` starts it

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str, timeout: float = 5.0) -> http.client.HTTPResponse:
    """One GET, redirects not followed (a redirect to the login page is an answer)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("GET", path)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


class Lab:
    def __init__(self, port: int, token: str, root: Path, process: subprocess.Popen, log: Path):
        self.port, self.token, self.root, self.process, self.log = port, token, root, process, log

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def _settings(folder: Path):
    """A test-only user setting, so that every output can be read off the page: every cell attached to
    the DOM (no windowing). Everything else is the shipped configuration's."""
    name = folder / "@jupyterlab/notebook-extension/tracker.jupyterlab-settings"
    name.parent.mkdir(parents=True, exist_ok=True)
    name.write_text(json.dumps({"windowingMode": "none"}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "workspace"))
    _settings(base / "settings")
    for folder in ("config", "data", "runtime", "ipython", "workspaces"):
        (base / folder).mkdir()
    borrowed = {}
    if LAB_PYTHON != sys.executable:     # an environment borrowing this one's packages, gemmlab's checkout too
        borrowed = {"PYTHONPATH": str(ROOT)}
        said = subprocess.run([LAB_PYTHON, "-c", "import ipywidgets; print(ipywidgets.__version__)"],
                              capture_output=True, text=True)
        assert said.stdout.startswith("7."), f"{LAB_PYTHON} has no ipywidgets 7: {said.stdout}{said.stderr}"
    port, token = _free_port(), secrets.token_hex(24)
    env = dict(os.environ,
               JUPYTER_CONFIG_DIR=str(base / "config"),      # no user configuration or state:
               JUPYTER_DATA_DIR=str(base / "data"),          # the venv's kernel and widget extension
               JUPYTER_RUNTIME_DIR=str(base / "runtime"),    # are found under sys.prefix all the same
               IPYTHONDIR=str(base / "ipython"),
               GEMMLAB_WORKSPACE=str(root / "workspace"),    # beside the chapters, as in a checkout
               PATH=os.pathsep.join([str(Path(LAB_PYTHON).parent), os.environ.get("PATH", "")]), **borrowed)
    # `make lab`: jupyter lab --config=.lab/jupyter_lab_config.py; here on a copy of notebooks/ (the lab
    # saves what it opens), a port and token of its own, no browser of its own
    command = [LAB_PYTHON, "-m", "jupyterlab", f"--config={LAB_CONFIG}", f"--port={port}",
               "--ServerApp.port_retries=0", "--no-browser", f"--ServerApp.root_dir={root}",
               f"--IdentityProvider.token={token}",
               "--LabApp.expose_app_in_browser=True",           # window.jupyterapp, to run commands
               f"--LabApp.user_settings_dir={base / 'settings'}",
               f"--LabApp.workspaces_dir={base / 'workspaces'}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = base / "jupyterlab.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = Lab(port, token, root, process, log)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited ({process.returncode}) before answering:\n{server.log_tail()}")
            try:
                if _get(port, f"/api/status?token={token}").status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer in {SERVER_START_S} s:\n{server.log_tail()}")
            time.sleep(0.5)
        yield server
    finally:
        _stop(server)


def _stop(server: Lab):
    """The server's own shutdown (it stops its kernels), then SIGTERM, then SIGKILL, to its process only."""
    process = server.process
    if process.poll() is None:
        with contextlib.suppress(OSError):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
            conn.request("POST", f"/api/shutdown?token={server.token}")
            conn.getresponse().read()
            conn.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and process.poll() is None:
                process.send_signal(sig)
            try:
                process.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue


# ---------------------------------------------------------------- Chromium, through Playwright

@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        # a fresh, temporary profile: Playwright makes one per launch
        chromium = p.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def context(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield ctx
    finally:
        ctx.close()


def _screenshot(page: Page, label: str) -> Path | None:
    """Keep the page as it is now, whole, in test-artifacts/ (never raises: it serves a failure)."""
    try:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', label)}.png"
        page.screenshot(path=str(path), full_page=True, timeout=20_000)
        return path
    except Exception:  # noqa: BLE001
        return None


@contextlib.contextmanager
def step(page: Page, label: str):
    """A step of a test: on any failure the page is kept as test-artifacts/<label>.png."""
    try:
        yield
    except BaseException as exc:
        path = _screenshot(page, label)
        if path is not None and hasattr(exc, "add_note"):
            exc.add_note(f"screenshot: {path}")
        raise


# ---------------------------------------------------------------- a chapter, run all

# The notebook on the page, read off JupyterLab's own model: kernel state, each code cell's
# execution count and its error outputs.
STATE_JS = """(name) => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || w.context.path !== name || !w.content || !w.content.widgets) return null;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  const errors = [];
  cells.forEach((c, i) => {
    for (const o of c.model.outputs.toJSON()) {
      if (o.output_type === 'error') errors.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
      const text = Array.isArray(o.text) ? o.text.join('') : (o.text || '');
      if (o.output_type === 'stream' && o.name === 'stderr' && text.includes('Traceback'))
        errors.push(`cell ${i}: stderr: ${text.slice(-1500)}`);
    }
  });
  return {
    kernel: kernel ? kernel.status : null,
    busy: w.sessionContext.kernelDisplayStatus,
    counts: cells.map(c => c.model.executionCount),
    running: cells.filter(c => c.promptNode && c.promptNode.textContent.includes('*')).length,
    errors,
  };
}"""


def _state(page: Page, name: str):
    return page.evaluate(STATE_JS, name)


def _wait_ready(page: Page, name: str):
    """The notebook open and its kernel started and idle."""
    deadline = time.monotonic() + CHAPTER_RUN_S
    while True:
        state = _state(page, name)
        if state and state["kernel"] == "idle":
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: no idle kernel after {CHAPTER_RUN_S} s: {state}")
        page.wait_for_timeout(250)


def _wait_all_run(page: Page, name: str) -> dict:
    """Until every code cell has an execution count and the kernel is idle (seen twice, half a
    second apart); fails at once on an error output (Run All stops at the first error)."""
    deadline = time.monotonic() + CHAPTER_RUN_S
    settled = 0
    while True:
        state = _state(page, name)
        assert state is not None, f"{name} is no longer the current notebook"
        assert not state["errors"], f"{name}: error output while running:\n" + "\n".join(state["errors"])
        done = (state["kernel"] == "idle" and state["running"] == 0
                and all(count is not None for count in state["counts"]))
        settled = settled + 1 if done else 0
        if settled >= 2:
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: not done after {CHAPTER_RUN_S} s: {state}")
        page.wait_for_timeout(500)


def _dom_errors(page: Page) -> list[str]:
    """Error outputs as the page shows them (every cell is attached: windowing is off)."""
    texts = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()
    return [t[-1500:] for t in texts if "Traceback" in t]


class Chapters:
    """Each chapter opened in its own tab and run all once per module; the explorer test reuses 03."""

    def __init__(self, lab: Lab, context):
        self.lab, self.context, self.pages, self.states = lab, context, {}, {}

    def run(self, name: str) -> tuple[Page, dict]:
        if name in self.pages:
            return self.pages[name], self.states[name]
        page = self.context.new_page()
        self.pages[name] = page
        label = Path(name).stem
        with step(page, f"{label}-open"):
            page.goto(self.lab.url(f"/lab/tree/{name}"), wait_until="domcontentloaded")
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=60_000)
            page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
            _wait_ready(page, name)
        with step(page, f"{label}-run-all"):
            # outputs and counts of the recorded run go first, so that only this run's are read
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            state = _wait_all_run(page, name)
        with step(page, f"{label}-outputs"):
            counts = state["counts"]
            assert counts == sorted(counts) and len(set(counts)) == len(counts), \
                f"{name}: cells ran out of order or not at all this run: {counts}"
            assert not state["errors"], "\n".join(state["errors"])
            assert not _dom_errors(page), f"{name}: error shown on the page:\n" + "\n".join(_dom_errors(page))
        self.states[name] = state
        return page, state

    def close(self):
        for page in self.pages.values():
            with contextlib.suppress(Exception):
                page.close()


@pytest.fixture(scope="module")
def chapters(lab, context):
    opened = Chapters(lab, context)
    try:
        yield opened
    finally:
        opened.close()


# ---------------------------------------------------------------- the tests

def test_api_refuses_a_request_without_the_token(lab):
    refused = _get(lab.port, "/api/contents")
    assert refused.status == 403 or (refused.status in (301, 302, 303, 307, 308)
                                     and "login" in (refused.getheader("Location") or "")), \
        f"/api/contents without the token answered {refused.status}"
    assert _get(lab.port, f"/api/contents?token={lab.token}").status == 200, "and with it, it must answer"


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_runs_all_without_error(chapters, name):
    page, state = chapters.run(name)
    assert state["counts"], f"{name} has no code cell"


LABEL_WIDTHS_JS = """(box) => [...box.querySelectorAll('.widget-slider .widget-label')]
  .map((label) => [label.textContent, label.scrollWidth, label.clientWidth])"""


@pytest.mark.parametrize("name", [n for n in CHAPTERS if n != "00_your_gpu.ipynb"])   # 00 has no explorer
def test_every_slider_name_shows_whole(chapters, name):
    """Every explorer slider's name shows whole, in each chapter the browser runs: chapter 12's longest, EVICT_FIRST,
    was cut to 'EVICT_FIR...'."""
    from gemmlab import registry

    page, _ = chapters.run(name)
    names = [p.name for p in registry.get(name[:2]).params]
    with step(page, f"{Path(name).stem}-slider-names"):
        explorer = _explorer(page, names)
        explorer.scroll_into_view_if_needed()
        widths = explorer.evaluate(LABEL_WIDTHS_JS)
        assert sorted(text for text, _, _ in widths) == sorted([*names, "M=N=K"]), widths
        cut = [text for text, needs, has in widths if needs > has or has == 0]
        assert not cut, f"{name}: slider names cut short: {cut} ({widths})"


def test_printed_lines_wrap_between_words(chapters):
    """JupyterLab's own style breaks a printed line at any letter where it meets the output's edge ('for e' / 'very
    multiply-add' in chapter 01's quiz); the lab's custom.css has it wrap at spaces. Chapter 03 prints its quiz."""
    page, _ = chapters.run("03_coalescing.ipynb")
    styles = page.evaluate("() => [...document.querySelectorAll('.jp-OutputArea-output pre')]"
                           ".map((e) => getComputedStyle(e).wordBreak)")
    assert styles and set(styles) == {"normal"}, styles


def test_a_kernel_listing_is_highlighted(chapters):
    """A chapter's kernel source shows with its keywords and comments coloured: JupyterLab highlights a fence only
    where it knows the language's name ('cuda' and 'cpp' came out plain)."""
    page, _ = chapters.run("12_skinny.ipynb")
    spans = page.evaluate("() => [...document.querySelectorAll('.jp-RenderedMarkdown pre')]"
                          ".filter((e) => e.textContent.includes('__global__'))"
                          ".map((e) => e.querySelectorAll('span[class]').length)")
    assert spans and min(spans) > 10, f"listings' highlighted spans: {spans}"


# ---------------------------------------------------------------- chapter 03's explorer

def _explorer_route() -> tuple[list[tuple[str, int]], dict, dict]:
    """From the defaults, one slider step to a legal configuration, then one step to a refused one:
    the moves as (slider description, +1 right / -1 left), and the two configurations."""
    from gemmlab import registry

    spec = registry.get(EXPLORER_CHAPTER[:2])
    params = list(spec.params)
    start = {p.name: p.default for p in params}

    def neighbours(config):
        for p, move in itertools.product(params, (-1, +1)):
            i = list(p.offered).index(config[p.name]) + move
            if 0 <= i < len(p.offered):
                yield (p.name, move), {**config, p.name: p.offered[i]}

    for first, legal in neighbours(start):
        if not spec.is_legal(legal):
            continue
        for second, refused in neighbours(legal):
            if not spec.is_legal(refused):
                return [first, second], legal, refused
    raise AssertionError(f"{spec.name}: no refused configuration two slider steps from {start}")


def _explorer(page: Page, descriptions):
    """The explorer's widget box: the one with a slider for each tunable and one for the size."""
    box = page.locator(".jp-OutputArea-output .widget-vbox")
    for description in [*descriptions, "M=N=K"]:
        box = box.filter(has=page.locator(".widget-label", has_text=re.compile(rf"^{re.escape(description)}$")))
    box.first.wait_for(timeout=WIDGET_S * 1000)
    return box.first


def _slider(explorer, description: str):
    row = explorer.locator(".widget-slider").filter(
        has=explorer.page.locator(".widget-label", has_text=re.compile(rf"^{re.escape(description)}$")))
    return row.first


def _areas(explorer):
    """The explorer's two output areas: the compile report, then the result."""
    outputs = explorer.locator(":scope > .widget-output")
    assert outputs.count() == 2, f"expected the report and the result areas, found {outputs.count()}"
    return outputs.nth(0), outputs.nth(1)


def _move(explorer, description: str, move: int):
    slider = _slider(explorer, description)
    before = slider.locator(".widget-readout").inner_text()
    handle = slider.locator(".noUi-handle, .ui-slider-handle").first
    handle.focus()
    handle.press("ArrowRight" if move > 0 else "ArrowLeft")
    explorer.page.wait_for_function(
        "([el, before]) => el.textContent.trim() !== before.trim()",
        arg=[slider.locator(".widget-readout").element_handle(), before], timeout=10_000)
    return slider.locator(".widget-readout").inner_text()


def _wait_text(area, predicate, what: str, timeout: float = WIDGET_S) -> str:
    """The area's text once predicate holds for it; fails with what, and the text, after timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        text = area.inner_text().strip()
        if predicate(text):
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}; after {timeout:g} s the area shows:\n{text!r}")
        area.page.wait_for_timeout(250)


def test_explorer_answers_its_sliders(chapters):
    (first, second), legal, refused = _explorer_route()
    page, _ = chapters.run(EXPLORER_CHAPTER)

    with step(page, "03-explorer-found"):
        explorer = _explorer(page, legal)
        explorer.scroll_into_view_if_needed()
        report, result = _areas(explorer)
        start_result = _wait_text(result, bool, "the explorer shows no result for the defaults")
        start_report = report.inner_text().strip()
        assert "refused" not in start_report, f"the defaults are refused: {start_report}"

    with step(page, "03-explorer-legal"):
        shown = _move(explorer, *first)
        assert shown.strip() == str(legal[first[0]]), f"{first[0]} shows {shown}, not {legal[first[0]]}"
        new_result = _wait_text(result, lambda t: t and t != start_result and "refused" not in t,
                                f"the result did not change after {first[0]} -> {legal[first[0]]} ({legal})")
        assert "refused" not in report.inner_text(), f"{legal} is legal, yet: {report.inner_text()}"

    with step(page, "03-explorer-refused"):
        shown = _move(explorer, *second)
        assert shown.strip() == str(refused[second[0]]), f"{second[0]} shows {shown}, not {refused[second[0]]}"
        _wait_text(report, lambda t: "refused" in t, f"the report does not say refused for {refused}")
        # the report says refused first; the result area follows in the same update
        text = _wait_text(result, lambda t: t != new_result and "TFLOP/s" not in t,
                          f"the result of {legal} stayed on screen after moving to {refused}", timeout=15)
        assert text == REFUSED_TEXT, f"the result area of refused {refused} shows {text!r}"
        _wait_no_chart(explorer)


# ---------------------------------------------------------------- the explorer's chart, as a picture

def _chart(explorer):
    """The explorer's chart: the image after its two output areas."""
    return explorer.locator(":scope > img, :scope > .widget-image").first


def _wait_no_chart(explorer, timeout: float = 15):
    deadline = time.monotonic() + timeout
    while _chart(explorer).count() and _chart(explorer).is_visible():
        if time.monotonic() > deadline:
            raise AssertionError("a chart of another configuration stayed on screen")
        explorer.page.wait_for_timeout(250)


IMAGE_BYTES_JS = """async (img) => {
  if (!img.src || !img.complete || img.naturalWidth === 0) return null;
  const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
  let text = '';
  for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return btoa(text);
}"""


def _expected_chart(chapter: str, config: dict, size: int) -> bytes:
    """The explorer's chart for `config` at `size`, drawn here from code, as the kernel draws it."""
    from gemmlab import config_plots, registry, results

    spec = registry.get(chapter[:2])
    src = results.here()
    row = src.result(spec, spec.resolve(config), size)
    return config_plots.explorer_bars_png(spec.title, row["gflops"], row["cublas_gflops"], results.ceilings()[0], src.label)


def _pixels(png: bytes):
    import numpy as np
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _assert_chart_complete(explorer, expected: bytes, what: str):
    """The picture on the page is the whole chart: the image the browser holds is the one drawn from code
    for this configuration, and what the browser paints of it (a screenshot of the element, at its
    natural size) matches that picture pixel for pixel, within a small tolerance for colour handling."""
    chart = _chart(explorer)
    deadline = time.monotonic() + WIDGET_S
    while True:
        shown = chart.evaluate(IMAGE_BYTES_JS) if chart.count() and chart.is_visible() else None
        if shown and base64.b64decode(shown) == expected:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: the chart on the page is not the one drawn from code for this "
                                 f"configuration ({'no picture' if not shown else 'another picture'})")
        explorer.page.wait_for_timeout(250)
    chart.scroll_into_view_if_needed()
    want = _pixels(expected)
    box = chart.bounding_box()
    assert box and round(box["width"]) == want.shape[1] and round(box["height"]) == want.shape[0], \
        f"{what}: the chart is drawn at {box}, not at its size {want.shape[1]} x {want.shape[0]}"
    got = _pixels(chart.screenshot())
    h, w = want.shape[:2]
    assert 0 <= got.shape[0] - h <= 1 and 0 <= got.shape[1] - w <= 1, f"{what}: painted {got.shape}, drawn {want.shape}"
    # the element may sit at a fraction of a pixel: its screenshot is then a row or column larger
    off = min(((abs(got[y:y + h, x:x + w] - want).max(axis=2) > 24).mean()
               for y in range(got.shape[0] - h + 1) for x in range(got.shape[1] - w + 1)))
    assert off < 0.005, f"{what}: {off:.1%} of the painted chart's pixels differ from the picture"


# ---------------------------------------------------------------- the learner's loop

# The main area's document with this path; JupyterLab 4's shell.widgets() is iterable, 3's an iterator with next().
FIND_JS = """
  const widgets = (app) => {
    const it = app.shell.widgets('main'), all = [];
    if (it[Symbol.iterator]) { all.push(...it); } else { let x; while ((x = it.next()) !== undefined) all.push(x); }
    return all;
  };
  const find = (name) => widgets(window.jupyterapp).find(x => x.context && x.context.path === name);
"""

# Runs the first code cell whose source starts with `prefix`, as Shift+Enter would; returns its index and
# its execution count before the run.
RUN_CELL_JS = """async ([name, prefix]) => {""" + FIND_JS + """
  const app = window.jupyterapp;
  const w = find(name);
  app.shell.activateById(w.id);
  const cells = w.content.widgets;
  const i = cells.findIndex(c => c.model.type === 'code' && c.model.sharedModel.getSource().startsWith(prefix));
  if (i < 0) return null;
  const before = cells[i].model.executionCount;
  w.content.activeCellIndex = i;
  w.content.deselectAll();
  app.commands.execute('notebook:run-cell');
  return [i, before];
}"""

CELL_STATE_JS = """([name, i]) => {""" + FIND_JS + """
  const w = find(name);
  const c = w.content.widgets[i];
  return {count: c.model.executionCount, busy: w.sessionContext.kernelDisplayStatus,
          running: c.promptNode ? c.promptNode.textContent.includes('*') : false,
          text: c.outputArea.node.innerText,
          errors: c.model.outputs.toJSON().filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`)};
}"""


def _run_cell(page: Page, name: str, prefix: str, seen: list[str] | None = None) -> int:
    """Run the chapter's cell that starts with `prefix`; its index once it has run and the kernel is idle. `seen`
    gathers the cell's text as it was at each look while it ran (every quarter of a second)."""
    found = page.evaluate(RUN_CELL_JS, [name, prefix])
    assert found is not None, f"{name} has no cell starting with {prefix!r}"
    index, before = found
    deadline = time.monotonic() + CELL_RUN_S
    while True:
        state = page.evaluate(CELL_STATE_JS, [name, index])
        if seen is not None:
            seen.append(state["text"])
        if state["count"] not in (None, before) and not state["running"] and state["busy"] == "idle":
            assert not state["errors"], f"{name}: {prefix!r} failed: {state['errors']}"
            return index
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: {prefix!r} did not finish in {CELL_RUN_S} s: {state}")
        page.wait_for_timeout(250)


def _cell_text(page: Page, name: str, index: int) -> str:
    return page.evaluate(CELL_STATE_JS, [name, index])["text"]


def _cell(page: Page, index: int):
    return page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(index)


EDITOR_JS = """(path) => {
  const w = window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || w.context.path !== path || !w.content || !w.content.editor) return null;
  return {text: w.content.model.sharedModel.getSource(), dirty: w.context.model.dirty,
          factory: w.context.factoryName || '', kind: w.content.constructor.name};
}"""

SELECT_JS = """([path, start, end]) => {
  const w = window.jupyterapp.shell.currentWidget;
  const editor = w.content.editor;
  editor.setSelection({start: editor.getPositionAt(start), end: editor.getPositionAt(end)});
  editor.focus();
  return editor.hasFocus();
}"""


def _wait_editor(page: Page, path: str, predicate, what: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = page.evaluate(EDITOR_JS, path)
        if state is not None and predicate(state):
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}; the current tab: {state}")
        page.wait_for_timeout(250)


def _type_the_fix(page: Page, lab, copy: str, spec) -> None:
    """In the learner's copy open in the editor: select the starter's lines, type the chapter's own, Ctrl+S;
    the file saved is then the chapter's solution."""
    from gemmlab import exercises
    page.evaluate("async (path) => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", copy)
    state = _wait_editor(page, copy, lambda s: True, f"{copy} is not the current tab")
    starter = spec.exercise.starter.rstrip("\n") + "\n"
    start = state["text"].index(starter)
    assert page.evaluate(SELECT_JS, [copy, start, start + len(starter)]), "the editor did not take the focus"
    page.keyboard.insert_text(exercises.solution_region(spec))
    _wait_editor(page, copy, lambda s: s["dirty"], "typing did not change the file in the editor")
    page.keyboard.press("Control+s")
    _wait_editor(page, copy, lambda s: not s["dirty"], "Ctrl+S did not save the file")
    on_disk = (lab.root / copy).read_text()
    assert on_disk == spec.path.read_text(), "the saved file is the starter with the fix typed in"


def _keep(page: Page, label: str):
    """A screenshot of this step for the record (test-artifacts/loop-*.png)."""
    _screenshot(page, f"loop-{label}")


def _two_legal_moves(spec) -> tuple[list[tuple[str, int]], list[dict]]:
    """From the defaults, two slider steps on two different tunables, each to a legal configuration
    that the record has at the explorer's size."""
    from gemmlab import course, records, results

    params = list(spec.params)
    size = course.EXPLORER_SIZES[-1]

    def shown(config):
        try:
            results.here().result(spec, spec.resolve(config), size)
            return spec.is_legal(config)
        except (records.NotRecorded, records.StaleRecord):
            return False

    start = {p.name: p.default for p in params}
    for p, q in itertools.permutations(params, 2):
        for mp, mq in itertools.product((+1, -1), repeat=2):
            i, j = list(p.offered).index(start[p.name]) + mp, list(q.offered).index(start[q.name]) + mq
            if not (0 <= i < len(p.offered) and 0 <= j < len(q.offered)):
                continue
            first = {**start, p.name: p.offered[i]}
            second = {**first, q.name: q.offered[j]}
            if shown(first) and shown(second):
                return [(p.name, mp), (q.name, mq)], [first, second]
    raise AssertionError(f"{spec.name}: no two legal slider steps from {start}")


@pytest.fixture(scope="module")
def quiet_page(lab, context):
    page = context.new_page()
    try:
        yield page
    finally:
        page.close()


def test_the_lab_opens_quietly(lab, quiet_page):
    """No news question, no update notice: the shipped settings turn both off."""
    page = quiet_page
    with step(page, "quiet-lab"):
        page.goto(lab.url("/lab"), wait_until="domcontentloaded")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=60_000)
        page.wait_for_timeout(5000)       # the news question came a few seconds after the start
        toasts = page.locator(".Toastify__toast, .jp-toast-message").all_inner_texts()
        assert not toasts, f"the lab shows pop-ups: {toasts}"


@pytest.mark.parametrize("name", LOOP_CHAPTERS if LAB_PYTHON == sys.executable else LOOP_CHAPTERS[1:2])
def test_the_learners_loop(lab, context, name):
    """Open the chapter, click the exercise's link, see the check fail on the starter, type the fix in
    JupyterLab's editor, save, see the check pass; move two sliders and see a whole chart each time."""
    from gemmlab import course, exercises, registry

    spec = registry.get(name[:2])
    label = Path(name).stem
    page = context.new_page()
    try:
        with step(page, f"loop-{label}-open"):
            page.goto(lab.url(f"/lab/tree/{name}"), wait_until="domcontentloaded")
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=60_000)
            page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
            _wait_ready(page, name)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
            _run_cell(page, name, "# Colab or Kaggle")
            _run_cell(page, name, "import gemmlab.lessons as gl")

        with step(page, f"loop-{label}-exercise"):
            index = _run_cell(page, name, "gl.exercise(")
            copy = f"workspace/{spec.path.name}"
            link = _cell(page, index).locator(f'a:has-text("{copy}")').first
            link.wait_for(timeout=10_000)
            assert str(lab.root) not in _cell_text(page, name, index), "the cell shows this machine's path"
            _keep(page, f"{label}-1-exercise-cell")
            link.click()
            starter_file = exercises.starter_text(spec)
            _wait_editor(page, copy, lambda s: s["text"] == starter_file,
                         f"the link did not open {copy} in the editor, holding the starter")
            _keep(page, f"{label}-2-starter-in-editor")

        with step(page, f"loop-{label}-check-starter"):
            check = _run_cell(page, name, "gl.check(")
            verdict = _cell_text(page, name, check)
            assert verdict.startswith("FAIL") and "TODO still in the code" in verdict, verdict
            _keep(page, f"{label}-3-check-fails")

        with step(page, f"loop-{label}-fix"):
            _type_the_fix(page, lab, copy, spec)
            _keep(page, f"{label}-4-fix-saved")

        with step(page, f"loop-{label}-check-fix"):
            seen = []
            check = _run_cell(page, name, "gl.check(", seen)
            shown = re.sub(r"[\xa0\u2007]", " ", _cell_text(page, name, check))
            # a bar while the CPU check runs, gone with the verdict (saved, it would read as a frozen 0/7)
            assert any("checking on the CPU" in re.sub(r"[\xa0\u2007]", " ", text) for text in seen), \
                f"no progress bar while it ran: {seen[-3:]!r}"
            assert "checking on the CPU" not in shown, f"the bar outlived the check: {shown!r}"
            verdict = shown
            assert verdict.startswith("PASS on the CPU"), verdict
            assert "ok   correct on the CPU at 5 shapes" in verdict, verdict
            assert "not run: speed: not measured, it needs a GPU" in verdict and "ok   speed" not in verdict, verdict
            _cell(page, check).scroll_into_view_if_needed()
            _keep(page, f"{label}-5-check-passes")

        moves, configs = _two_legal_moves(spec)
        size = course.EXPLORER_SIZES[-1]
        with step(page, f"loop-{label}-explorer"):
            index = _run_cell(page, name, "gl.show_explorer(")
            page.wait_for_timeout(3000)
            errors = _cell(page, index).get_by_text("Click to show javascript error")
            if errors.count():
                errors.first.click()
                page.wait_for_timeout(500)
                raise AssertionError(f"the explorer did not render: {_cell_text(page, name, index)}")
            explorer = _explorer(page, [p.name for p in spec.params])
            explorer.scroll_into_view_if_needed()
            _assert_chart_complete(explorer, _expected_chart(name, {p.name: p.default for p in spec.params}, size),
                                   "at the defaults")
        for n, ((description, move), config) in enumerate(zip(moves, configs), 1):
            with step(page, f"loop-{label}-slider-{n}"):
                shown = _move(explorer, description, move)
                assert shown.strip() == str(config[description]), f"{description} shows {shown}"
                _assert_chart_complete(explorer, _expected_chart(name, config, size),
                                       f"after {description} -> {config[description]}")
                _keep(page, f"{label}-{5 + n}-slider-{n}")
    finally:
        page.close()


def test_the_learners_loop_in_python(lab, context):
    """Chapter 14's exercise is Python: its link opens the starter in the editor, the check fails on it, the
    fix typed in and saved passes, against the plan's own arithmetic."""
    from gemmlab import exercises
    from gemmlab.library import exercise as plan_exercise

    name, spec = "14_dispatch.ipynb", plan_exercise.SPEC
    copy = f"workspace/{spec.learner_name}"
    page = context.new_page()
    try:
        with step(page, "loop-14-exercise"):
            # reset: the layout the earlier loops left (their notebooks open) is not restored over this one
            page.goto(lab.url(f"/lab/tree/{name}") + "&reset", wait_until="domcontentloaded")
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=60_000)
            page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
            _wait_ready(page, name)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
            _run_cell(page, name, "import gemmlab.library.lessons as gl")
            index = _run_cell(page, name, "gl.exercise(")
            link = _cell(page, index).locator(f'a:has-text("{copy}")').first
            link.wait_for(timeout=10_000)
            link.click()
            starter = exercises.starter_text(spec)
            _wait_editor(page, copy, lambda s: s["text"] == starter,
                                 f"the link did not open {copy} in the editor, holding the starter")
            _keep(page, "14-1-starter-in-editor")
        with step(page, "loop-14-check-starter"):
            verdict = _cell_text(page, name, _run_cell(page, name, "gl.check("))
            assert verdict.startswith("FAIL") and "round_time(blocks=" in verdict, verdict
        with step(page, "loop-14-fix"):
            _type_the_fix(page, lab, copy, spec)
        with step(page, "loop-14-check-fix"):
            verdict = _cell_text(page, name, _run_cell(page, name, "gl.check("))
            assert verdict.startswith("PASS") and "the plan's arithmetic at all" in verdict, verdict
            _keep(page, "14-2-check-passes")
    finally:
        page.close()
