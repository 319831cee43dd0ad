"""Timings carried across a change of a kernel's code. A timing is of machine code: where a configuration's build
under the kernel's code now is the same cubin, byte for byte, as its build under the code it was timed on, the
timing holds for the code now, and its row is stamped with the code's identity now. Rows whose build changed keep
the old identity (stale: the record's readers leave them out) until they are timed again, for example by
`record KERNEL --only NAME=V`. A tunable added since takes its default in the rows carried (a build at the default
is what was timed, which the cubin comparison checks).

    python -m gemmlab.research.carry KERNEL --from REV [--record PATH]

REV is the git revision whose kernels/ folder holds the code the rows were timed on."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import compile as compiler, files, identity, records, registry
from ..spec import IllegalConfig, KernelSpec
from . import training


def _old_source(spec: KernelSpec, rev: str, folder: Path) -> Path:
    """The kernel's file at `rev`, written into `folder`; refused where a header it includes differs from now (the
    comparison compiles the old file with the headers of now)."""
    def show(name: str) -> str:
        return subprocess.run(["git", "show", f"{rev}:kernels/{name}"], capture_output=True, text=True, check=True,
                              cwd=spec.path.parent).stdout
    old = folder / spec.path.name
    old.write_text(show(spec.path.name))
    for name, header in identity.headers(old.read_text(), spec.path.parent).items():
        if show(name) != header.read_text():
            raise SystemExit(f"kernels/{name} changed since {rev}: the old builds cannot be made here")
        (folder / name).write_text(header.read_text())
    return old


class Carrier:
    """Which rows of one kernel carry over from the code in `old` to the code now."""

    def __init__(self, spec: KernelSpec, old: Path, arch: str):
        self.spec, self.old, self.arch = spec, old, arch
        self.then, self.now = identity.code_hash(old), identity.code_hash(spec.path)
        self.same: dict[str, bool] = {}
        self.carried = self.left = 0

    def _unchanged(self, params: dict) -> bool:
        key = json.dumps(params, sort_keys=True)
        if key not in self.same:
            now = compiler.compile_kernel(self.spec, params, self.arch)
            then = compiler.compile_kernel(self.spec, params, self.arch, source=self.old)
            self.same[key] = now.cubin == then.cubin
        return self.same[key]

    def row(self, row: dict, source: str | None) -> dict:
        """The row stamped with its code's identity: now's where its build is unchanged, else the one it had."""
        source = row.get("source", source)
        if row["kernel"] != self.spec.name or source != self.then:
            return row
        try:
            params = self.spec.resolve(row["params"])
        except IllegalConfig:               # a configuration the kernel no longer offers stays stale
            self.left += 1
            return {**row, "source": source}
        unchanged = self._unchanged(params)
        self.carried += unchanged
        self.left += not unchanged
        # stale or not, the row names its configuration as the kernel does now: a new timing of it replaces it
        return {**row, "params": params, "source": self.now if unchanged else source}


def settle(data: dict, kernel: str) -> None:
    """Where every recorded result of `kernel` is of its code now, the record says so once (its `sources`) and the
    rows drop their own identity."""
    rows = [r for r in data["results"] if r["kernel"] == kernel]
    now = identity.code_hash(registry.get(kernel).path)
    if rows and all(r.get("source", data["sources"].get(kernel)) == now for r in rows):
        data["sources"][kernel] = now
        for r in rows:
            r.pop("source", None)


def carry(kernel: str, rev: str, path: Path) -> tuple[int, int]:
    """Carry the record at `path` and its training rows over for `kernel`, from its code at `rev`: (rows carried,
    rows left stale)."""
    spec = registry.get(kernel)
    data = json.loads(path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        carrier = Carrier(spec, _old_source(spec, rev, Path(tmp)), data["device"]["arch"])
        recorded = data["sources"].get(spec.name)
        for section in ("results", "ladder", "final_search"):
            data[section] = [carrier.row(r, recorded) for r in data.get(section, [])]
        # the profiles and counters carry no identity of their own: their configurations take the new tunables
        for p in data.get("stalls", []) + data.get("ncu", {}).get(spec.name, []):
            if p.get("kernel", spec.name) == spec.name and isinstance(p.get("params"), dict):
                p["params"] = spec.resolve(p["params"])
        # a training row without an identity of its own was timed on the record's code (Record.row_is_fresh)
        trained = [carrier.row(r, recorded) for r in training.rows_of(records.Record(path, data))]
    settle(data, spec.name)
    files.write_atomic(path, json.dumps(data, indent=1) + "\n")
    if trained:
        training.save_rows(path, trained)
    return carrier.carried, carrier.left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemmlab.research.carry", description=__doc__.splitlines()[0])
    parser.add_argument("kernel")
    parser.add_argument("--from", dest="rev", required=True, help="the git revision the rows were timed on")
    parser.add_argument("--record", type=Path, help="the record (default: this GPU's newest)")
    args = parser.parse_args(argv)
    try:
        path = args.record or records.latest().path
        carried, left = carry(args.kernel, args.rev, path)
    except registry.UnknownKernel as exc:
        print(exc, file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(f"git could not show the kernel at {args.rev}: {exc.stderr.strip()}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print(f"the record {args.record or 'of this GPU'} cannot be read or written: {exc}", file=sys.stderr)
        return 2
    print(f"{path}: {carried} rows carried to the code now, {left} left stale (their builds changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
