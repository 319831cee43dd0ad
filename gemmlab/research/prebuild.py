"""Compile the configurations gemmlab.matmul's plan picks on each fitted GPU's architecture and ship
them in gemmlab/cubins/ (prebuilt.py says why and how they are found). No GPU needed: NVRTC compiles
for an explicit architecture.

    python -m gemmlab.research.prebuild            compile the picks not shipped yet, drop those no pick needs
    python -m gemmlab.research.prebuild --check    exit 1, naming them, where shipped entries are stale

The picks are taken over the shapes the plan is judged on (training.CLASS_SUITE and MATMUL_SUITE), the
powers of two from 1 to 16384 in each dimension, and 3,000 seeded draws of sizes from 1 to 16384 (a third
of them multiples of 8, a third of 128): every configuration any of their plans launches (the peeled parts'
too).
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import lzma
import os
import random
import sys
import tempfile

from .. import compile as compiler, compile_aside, files, prebuilt, records, registry
from ..library import dispatch, time_model
from ..spec import BadProblem
from . import training

# Products above this many multiply-adds are left out of the grid (2^40: 16384 x 16384 x 4096).
MAX_PRODUCT = 2 ** 40


def shapes(draws: int = 3000, seed: int = 33) -> list[tuple[int, int, int]]:
    found = set(training.MATMUL_SUITE)
    for group in training.CLASS_SUITE.values():
        found |= set(group)
    powers = [2 ** i for i in range(15)]
    found |= {s for s in itertools.product(powers, repeat=3) if s[0] * s[1] * s[2] <= MAX_PRODUCT}
    rng = random.Random(seed)
    while draws:
        step = (1, 8, 128)[draws % 3]
        s = tuple(max(step, round(2 ** rng.uniform(0, 14) / step) * step) for _ in range(3))
        if s[0] * s[1] * s[2] <= MAX_PRODUCT:
            found.add(s)
            draws -= 1
    return sorted(found)


def picks(dev: dict, gpu: str, all_shapes: list[tuple[int, int, int]]) -> list[tuple[str, dict]]:
    """Every (kernel, configuration) the plans of these shapes launch on the GPU `dev` describes."""
    found = {}
    for M, N, K in all_shapes:
        try:
            plan = dispatch.plan_for(dispatch.Problem(M, N, K), dev, gpu)
        except BadProblem:
            continue
        for launch in plan.launched:
            found[time_model.config_key(launch.spec.name, launch.params)] = (launch.spec.name, dict(launch.params))
    return sorted(found.values(), key=lambda kp: time_model.config_key(*kp))


def wanted() -> list[tuple[str, dict, str]]:
    """(kernel, params, arch) for the picks on every GPU with a record and a fitted model."""
    out = []
    all_shapes = shapes()
    for rec in records.load_all():                  # the GPU's facts are its record's; its model, the fitted one
        dev = rec.device
        if time_model.fitted_path(dev["name"]).exists():
            out += [(kernel, params, dev["arch"]) for kernel, params in picks(dev, dev["name"], all_shapes)]
    return out


def _name(spec, params: dict, arch: str) -> str:
    """The shipped entry's name for this build of the current sources (compile_kernel's lookup)."""
    return prebuilt.entry_name(spec.name, arch, prebuilt.source_key(*compiler.inputs(spec, params, arch)))


def stale() -> list[str]:
    """The shipped entries whose kernel source (or included header) changed since they were built."""
    out = []
    for name, e in prebuilt.manifest().items():
        spec = registry.get(e["kernel"])
        if _name(spec, spec.resolve(e["params"]), e["arch"]) != name:
            out.append(name)
    return out


def build() -> int:
    """Ship the picks: an entry already shipped for the same source and options is kept as it is (a compile
    anew can differ in a few bytes, docs/toolchain.md), the others compiled, and entries no pick needs removed."""
    old = prebuilt.manifest()
    entries, jobs = {}, []
    for kernel, params, arch in wanted():
        spec = registry.get(kernel)
        name = _name(spec, spec.resolve(params), arch)
        if name in old and (prebuilt.DIR / f"{name}.cubin.xz").exists():
            entries[name] = old[name]
        else:
            jobs.append((kernel, params, arch))
    with tempfile.TemporaryDirectory() as cache:
        os.environ["GEMMLAB_CACHE"] = cache           # compiled here afresh, by this machine's NVRTC
        compile_aside.precompile(jobs, progress=True)
        prebuilt.DIR.mkdir(exist_ok=True)
        for kernel, params, arch in jobs:
            b = compiler.compile_kernel(kernel, params, arch)
            name = _name(registry.get(kernel), b.params, arch)
            files.write_atomic(prebuilt.DIR / f"{name}.cubin.xz", lzma.compress(b.cubin, preset=9))
            entries[name] = {"kernel": kernel, "params": b.params, "arch": arch, "nvrtc": b.compiler, "log": b.log,
                             "resources": dataclasses.asdict(b.resources)}
    for old in prebuilt.DIR.glob("*.cubin.xz"):
        if old.name[:-len(".cubin.xz")] not in entries:
            old.unlink()
    files.write_atomic(prebuilt.MANIFEST, json.dumps({"entries": entries}, indent=1, sort_keys=True) + "\n")
    size = sum(p.stat().st_size for p in prebuilt.DIR.glob("*.cubin.xz"))
    print(f"{len(entries)} cubins, {size / 1e6:.1f} MB compressed, in {prebuilt.DIR}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemmlab.research.prebuild", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only name the stale entries")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        print("\n".join(old) if old else "every shipped cubin is built from the current sources")
        return 1 if old else 0
    return build()


if __name__ == "__main__":
    sys.exit(main())
