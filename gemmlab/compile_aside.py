"""Builds compiled side by side in child processes, each started as `python -m gemmlab.compile_aside JOB`: what a
library call compiles (gemmlab.matmul's first use on a GPU with no model of its own times builds no cubin ships
for it, about 2.5 s of NVRTC each on an H200).

Not compile.precompile's process pool: a pool's spawned workers import the caller's main script again, which
re-runs a script that calls gemmlab.matmul at its top level (no `if __name__ == "__main__":`). A child started
here runs this module alone. Each child writes its build into the compile cache; a build that fails is left for
the caller's own compile_kernel to raise, with its message.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from . import compile as compiler


def compile_side_by_side(jobs: list[tuple[str, dict, str]], progress: bool = True) -> None:
    """Compile the (kernel name, params, arch) jobs neither shipped, in the cache nor refused by rule, one child process
    each, at most one per core at a time, with a progress bar. A single missing build is left to the caller's own
    compile: a child gains nothing there."""
    missing = [job for job in {json.dumps(job, sort_keys=True): job for job in jobs}.values()
               if not compiler.ready(*job) and not compiler.built(*job)]     # built: in the cache, or refused by rule
    if len(missing) <= 1:
        return
    package_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, GEMMLAB_CACHE=str(compiler.cache_dir()),
               PYTHONPATH=os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH")))))
    from .progress import transient
    waiting, running = list(missing), []
    with transient(len(missing), "compile", progress) as bar:
        try:
            while waiting or running:
                while waiting and len(running) < max(os.cpu_count() or 1, 1):
                    running.append(subprocess.Popen([sys.executable, "-m", __name__, json.dumps(waiting.pop())],
                                                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                running[0].wait()
                for child in [c for c in running if c.poll() is not None]:
                    running.remove(child)
                    bar.update(1)
        finally:                     # stopped (Ctrl-C) or failed: no child is left compiling
            for child in running:
                child.kill()
                child.wait()


if __name__ == "__main__":
    name, params, arch = json.loads(sys.argv[1])
    try:
        compiler.compile_kernel(name, params, arch)
    except Exception:                # the caller's compile_kernel of the same build says what is wrong
        sys.exit(1)
