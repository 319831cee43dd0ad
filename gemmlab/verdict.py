"""A check's verdict on a learner's file: the checks that passed or failed, those that could not run
and why, the speeds measured; and paths and shapes in the words a verdict uses."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .spec import Problem


@dataclass
class Verdict:
    kernel: str
    file: str
    lines: list[tuple[bool, str]] = field(default_factory=list)    # the checks that ran: passed or not
    not_run: list[str] = field(default_factory=list)                 # the checks that could not run, and why
    gpu: str = ""                      # "" where there was none, else the device's name
    on_cpu: bool = False               # its correctness was checked on the CPU (gemmlab/cpu)
    tflops: float | None = None
    solution_tflops: float | None = None
    cublas_tflops: float | None = None

    @property
    def failed(self) -> bool:
        return any(not ok for ok, _ in self.lines)

    @property
    def verified(self) -> bool:
        """Its results were checked: on a GPU, or on the CPU."""
        return bool(self.gpu) or self.on_cpu

    @property
    def passed(self) -> bool:
        return bool(self.lines) and not self.failed and self.verified

    @property
    def exit_status(self) -> int:
        """0: passed; 1: failed; 3: not verified (its results could not be checked here)."""
        return 0 if self.passed else 1 if self.failed or not self.lines else 3

    def add(self, ok: bool, text: str) -> bool:
        self.lines.append((ok, text))
        return ok

    @property
    def shown_file(self) -> str:
        return shown_path(Path(self.file))

    @property
    def summary(self) -> str:
        if self.failed or not self.lines:
            return "FAIL"
        if not self.verified:
            return "NOT VERIFIED"
        return f"PASS on {self.gpu}" if self.gpu else "PASS on the CPU"

    def __str__(self) -> str:
        head = f"{self.summary}: {self.kernel} exercise, {self.shown_file}"
        body = [f"  {'ok  ' if ok else 'FAIL'} {text}" for ok, text in self.lines]
        body += [f"  not run: {text}" for text in self.not_run]
        return "\n".join([head, *body])


def wrong_shapes(bad: list[str], good: list[str], where: str = "") -> str:
    """Which shapes gave wrong results and which right: the pattern points at the cause. `where`: " on the CPU"."""
    return f"wrong results{where} at {', '.join(bad)}" + (f", right at {', '.join(good)}" if good else "")


def edge_advice(at_edge: bool, summed: bool) -> str:
    """The advice to look at the edges, where the first wrong elements lie at them, or where a shape whose K is over 1
    was right (`summed`) beside the wrong ones; else nothing. A shape whose K is 1 proves nothing about the edges:
    any sum of one product is right."""
    if not (at_edge or summed):
        return ""
    return ": look at the edge predicates (the rows and columns past M, N and K) or the leading dimensions"


def shown_path(path: Path) -> str:
    """A path as a learner reads it and a saved notebook may keep it: relative to the working folder
    where it lies inside it (a notebook's folder), else from ~, else whole."""
    path = Path(os.path.abspath(path))
    for base, prefix in ((Path.cwd(), ""), (Path.home(), "~/")):
        try:
            return prefix + path.relative_to(base).as_posix()
        except ValueError:
            continue
    return str(path)


def shape_words(p: Problem) -> str:
    """A shape as a verdict line says it: 512³, or 200 x 136 x 72."""
    return f"{p.M}³" if p.M == p.N == p.K else f"{p.M} x {p.N} x {p.K}"
