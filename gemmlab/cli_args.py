"""The command line's arguments checked before any work: -D defines, sizes, architectures, the files a
command writes, a shape with its leading dimensions, a tune's search; a mistake is a UsageError (one
line to stderr, exit status 2) or argparse's own refusal."""
from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from . import registry
from .spec import Problem


class UsageError(ValueError):
    """A mistake in the command line: one line to stderr, exit status 2."""


def defines(pairs: list[str]) -> dict[str, int]:
    """-D NAME=INTEGER pairs as {NAME: value}, each name given once."""
    out = {}
    for pair in pairs or []:
        pair = pair[2:] if pair.startswith("-D") else pair
        name, sep, value = pair.partition("=")
        if not sep or not name or not re.fullmatch(r"-?[0-9]+", value):   # not isdigit: it takes '²'
            raise UsageError(f"-D expects NAME=INTEGER (for example -D TILE=32), got {pair!r}")
        if name in out:
            raise UsageError(f"-D {name} is given twice ({out[name]} and {value}); give it once")
        out[name] = int(value)
    return out


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def arch_name(text: str) -> str:
    from . import arch
    try:
        return arch.get(text).name
    except arch.UnknownArch as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def output_file(text: str, what: str, flag: str = "--out") -> Path:
    """The file a command will write, checked before it starts working (a fit takes minutes): UsageError naming
    it and what to give instead, where it is empty, a folder, or in a folder that is missing or not writable."""
    if not text.strip():
        raise UsageError(f"{what} '' names no file: give the path of the file to write (for example {flag} model.json)")
    path = Path(text).expanduser()
    if path.is_dir() or text.endswith("/"):
        raise UsageError(f"{what} {text} is a folder: give the path of a file to write in it (for example "
                         f"{flag} {path / 'model.json'})")
    if path.exists() and not path.is_file():
        raise UsageError(f"{what} {text} is not a plain file: give the path of a file to write")
    folder = path.parent
    if not folder.exists():
        raise UsageError(f"{what} {text}: the folder {folder} does not exist; make it first (mkdir -p {folder}) "
                         f"or give {flag} a file elsewhere")
    if not folder.is_dir():
        raise UsageError(f"{what} {text}: {folder} is not a folder; give the path of a file in a folder")
    import tempfile
    try:                               # what the write will do: a temporary file beside it, renamed over it
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{what} {text}: cannot write in the folder {folder} ({exc.strerror or exc}); "
                         f"give {flag} a file elsewhere") from None
    return path


def problem_of(size, ld=None) -> Problem:
    """The shape from --size, with the leading dimensions from --ld (rows padded) if given."""
    try:
        problem = Problem(*size)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        return Problem(*size, *ld) if ld else problem
    except ValueError as exc:
        raise UsageError(f"--ld: {exc}; each leading dimension is at least its row (K for A, N for B and C)") from None


def only_values(pairs: list[str] | None) -> dict[str, set[int]]:
    """--only NAME=V1,V2 (repeatable), as {NAME: {V1, V2}}: whole numbers, each tunable once."""
    only: dict[str, set[int]] = {}
    for pair in pairs or []:
        name, _, values = pair.partition("=")
        if not name or not all(re.fullmatch(r"-?[0-9]+", v) for v in values.split(",")):
            raise UsageError(f"--only expects NAME=V1,V2,... with whole numbers (for example --only TILE=16,32), "
                             f"got {pair!r}")
        if name in only:
            raise UsageError(f"--only {name} is given twice; give its values once: --only {name}=V1,V2")
        only[name] = {int(v) for v in values.split(",")}
    return only


def record_only(args) -> dict[str, set[int]]:
    """record's --only sets, checked before any GPU work: they name configurations of the kernels named."""
    from . import tune
    only = only_values(args.only)
    if only and not args.kernel:
        raise UsageError("--only names configurations of the kernels named: record KERNEL --only NAME=V1,V2")
    for kernel in args.kernel or []:
        if not tune.candidates(kernel, only):
            raise UsageError(f"no configuration of {registry.get(kernel).name} has "
                             + ", ".join(f"{k} in {sorted(v)}" for k, v in only.items()))
    return only


# The most configurations `gemmlab tune` searches unless --max raises it: about 5 minutes (a second each).
TUNE_MAX = 300


def tune_plan(args) -> tuple[tuple, dict]:
    """The size and the --only sets of a tune, checked before any GPU work: how many configurations,
    about how long, and a refusal above --max."""
    from . import tune
    size = tuple(args.size) if args.size else (4096, 4096, 4096)
    only = only_values(args.only)
    if args.sliders:                           # the values the chapter's sliders offer, unless --only says
        only = {p.name: set(p.offered) for p in registry.get(args.kernel).params} | only
    count = len(tune.candidates(args.kernel, only))
    # about a second each: compile, validate, time against cuBLAS (measured: chapter 10's 60 slider
    # configurations in about a minute on the H100)
    minutes = round(count / 60)
    print(f"{count} configurations to try, about {minutes} minute{'s' if minutes > 1 else ''}" if count >= 60 else
          f"{count} configurations to try, about {count} seconds")
    if count > args.max:
        raise UsageError(f"{count} configurations are more than --max {args.max}: narrow the search with --sliders "
                         f"or --only NAME=V1,V2 (or raise --max if you mean it)")
    return size, only


def shape(text: str) -> tuple[int, int, int]:
    """A shape written MxNxK, each a whole number of at least 1."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(re.fullmatch(r"[0-9]+", p) and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(f"'{text}' is not a shape MxNxK of whole numbers of at least 1")
    return tuple(int(p) for p in parts)
