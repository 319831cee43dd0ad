"""Builds compiled side by side in child processes, each started as `python -m gemmlab.compile_aside` and given its
builds one per line: what the lessons and research (precompile) and gemmlab.matmul's first use
(compile_side_by_side) run before they ask compile_kernel for each build.

Not a multiprocessing pool: a pool's spawned workers import the caller's main script again, which re-runs a script
that calls gemmlab at its top level (no `if __name__ == "__main__":`). A child here runs this module alone, in a
session of its own, so a terminal's Ctrl-C is the parent's alone to answer: the parent then stops every child and
the tools it runs (nvdisasm). Not threads either: see compile._ONE_COMPILE_AT_A_TIME. Each child writes its builds
into the compile cache; a build that fails is left for the caller's own compile_kernel to raise, with its message.
"""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
from pathlib import Path

from . import compile as compiler

Job = tuple[str, "dict | None", str]      # kernel name, params, arch


def precompile(jobs: list[Job], progress: bool = False, disassemble: bool = False) -> None:
    """Fill the compile cache for many (kernel name, params, arch) at once, one child process per core, each build's
    SASS text too with `disassemble`. Builds already in the cache are skipped; with `progress`, a bar counts the rest
    (none where nothing is left to build). Compile errors are not raised here: the caller's compile_kernel of the same
    job raises them."""
    unique = [job for job in {json.dumps(job, sort_keys=True): job for job in jobs}.values()
              if not compiler.built(*job, disassembled=disassemble)]
    if not unique:
        return
    compiler.cache_dir()      # an unusable cache (files.UnusableDirectory) said here, before any child starts
    if min(os.cpu_count() or 1, len(unique)) > 1:
        compile_in_children(unique, progress, disassemble)
        return
    from .progress import transient
    with transient(len(unique), "compile", progress) as bar:
        for job in unique:
            _build(job, disassemble)
            bar.update(1)


def compile_side_by_side(jobs: list[Job], progress: bool = True) -> None:
    """Compile the jobs neither shipped, in the cache nor refused by rule, side by side (gemmlab.matmul's first use).
    A single missing build is left to the caller's own compile: a child gains nothing there."""
    unique = {json.dumps(job, sort_keys=True): job for job in jobs}.values()
    missing = [job for job in unique if not compiler.ready(*job) and not compiler.built(*job)]
    if len(missing) > 1:
        precompile(missing, progress)


def compile_in_children(jobs: list[Job], progress: bool = True, disassemble: bool = False) -> None:
    """Compile every job (its SASS text too with `disassemble`) in child processes, at most one per core, each
    handed its next build as it finishes one, with a bar counting the builds. Ctrl-C stops every child and raises
    KeyboardInterrupt with one line; the builds finished before are kept."""
    from .progress import transient
    waiting = list(reversed(jobs))
    workers = min(os.cpu_count() or 1, len(jobs))
    package_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, GEMMLAB_CACHE=str(compiler.cache_dir()),
               PYTHONPATH=os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH")))))
    command = [sys.executable, "-m", __name__, *(["--disassemble"] if disassemble else [])]
    children: list[subprocess.Popen] = []
    with transient(len(jobs), "compile", progress) as bar, selectors.DefaultSelector() as answers:
        try:
            while waiting or children:
                while waiting and len(children) < workers:
                    with _ctrl_c_held():       # a child is started and listed as one step: _stop finds every child
                        child = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                 stderr=subprocess.DEVNULL, text=True, start_new_session=True)
                        children.append(child)
                    answers.register(child.stdout, selectors.EVENT_READ, child)
                    _hand(child, waiting.pop())
                for key, _ in answers.select():
                    child = key.data
                    finished = child.stdout.readline()
                    bar.update(1)              # built, failed, or lost with a child that died: the caller's compile says
                    if finished and waiting:
                        _hand(child, waiting.pop())
                        continue
                    answers.unregister(child.stdout)
                    children.remove(child)
                    child.stdin.close()        # no more builds: the child ends
                    child.wait()
        except KeyboardInterrupt:
            _stop(children)
            raise KeyboardInterrupt("compiling stopped; the builds finished before are kept in the cache") from None
        except BaseException:                  # failed: no child is left compiling
            _stop(children)
            raise


@contextlib.contextmanager
def _ctrl_c_held():
    """Ctrl-C held back in the main thread while the block runs, and raised as it ends (signal masks are the main
    thread's to set; another thread's Ctrl-C goes to the main thread anyway)."""
    main = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if main:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _hand(child: subprocess.Popen, job: Job) -> None:
    with contextlib.suppress(BrokenPipeError):     # a child that died: its end of stdout says so next, job and all
        child.stdin.write(json.dumps(job) + "\n")
        child.stdin.flush()


def _stop(children: list[subprocess.Popen]) -> None:
    """Stop every child now, and the tools it runs (each leads a process group of its own)."""
    for child in children:
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
    for child in children:
        child.wait()
        for pipe in (child.stdin, child.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


def _build(job: Job, disassemble: bool) -> None:
    try:
        build = compiler.compile_kernel(*job)
        if disassemble:
            from . import sass
            sass.disassemble(build)
    except Exception:                # the caller's compile_kernel of the same build says what is wrong
        pass


def _serve(disassemble: bool) -> None:
    """A child: compile each build named on stdin, answering a line on stdout once it is done (built or not)."""
    answers, sys.stdout = sys.stdout, sys.stderr       # anything a compile prints stays out of the answers
    for line in sys.stdin:
        _build(json.loads(line), disassemble)
        answers.write("done\n")
        answers.flush()


if __name__ == "__main__":
    _serve("--disassemble" in sys.argv[1:])
