"""Disassemble a build with nvdisasm (from pip) and summarise its instruction mix. No GPU needed."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import subprocess
from collections import Counter
from pathlib import Path

from . import files, toolchain

_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def _head(cubin_path: Path) -> str:
    """What the kept text of a cubin is headed by: the cubin's hash and the nvdisasm it came from."""
    tool = toolchain.nvdisasm()
    stat = tool.stat()
    return f"{hashlib.sha256(cubin_path.read_bytes()).hexdigest()} {tool} {stat.st_size} {stat.st_mtime_ns}"


def _kept_text(cubin_path: Path, head: str) -> str | None:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        first, _, text = cubin_path.with_suffix(".sass").read_text().partition("\n")
        if first == head:
            return text
    return None


def kept(cubin_path: Path) -> bool:
    """Whether this cubin's SASS text is kept beside it, from this nvdisasm: disassembling it costs no nvdisasm run."""
    try:
        return _kept_text(cubin_path, _head(cubin_path)) is not None
    except Exception:     # no nvdisasm, or the cubin unreadable: whoever disassembles it says why
        return False


@functools.lru_cache(maxsize=512)   # a cubin's path names its content (the compile cache key)
def _disassemble(cubin_path: Path) -> str:
    # nvdisasm takes about a second for a large kernel, and a chapter, its exercise and its claims ask for the
    # same builds from processes of their own: the text is kept beside the cubin, headed by the cubin's hash
    # and the nvdisasm it came from, so a rebuilt cubin or another nvdisasm is disassembled anew.
    tool = toolchain.nvdisasm()
    head = _head(cubin_path)
    text = _kept_text(cubin_path, head)
    if text is not None:
        return text
    result = subprocess.run([str(tool), "-c", str(cubin_path)], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"nvdisasm failed: {result.stderr.strip()}")
    with contextlib.suppress(OSError):        # only a cache: a folder we cannot write leaves it out
        files.write_atomic(cubin_path.with_suffix(".sass"), f"{head}\n{result.stdout}")
    return result.stdout


def disassemble(build) -> str:
    return _disassemble(build.cubin_path)


def opcodes(cubin_path: Path) -> list[str]:
    """Opcodes with their modifiers (e.g. 'LDS.128', 'FFMA'), in program order."""
    return [m.group(1) for m in _INSTRUCTION.finditer(_disassemble(cubin_path))]


def instructions(build) -> list[str]:
    return opcodes(build.cubin_path)


# The families a GEMM reader cares about, by opcode prefix.
FAMILIES = {
    "FFMA": "FP32 fused multiply-add (the useful work)",
    "LDG": "load from global memory",
    "STG": "store to global memory",
    "LDS": "load from shared memory",
    "STS": "store to shared memory",
    "LDL": "load from local memory (spills)",
    "STL": "store to local memory (spills)",
    "BAR": "barrier (__syncthreads)",
}


def mix(build) -> Counter:
    """Static counts per opcode with width, e.g. {'FFMA': 512, 'LDS.128': 64, 'LDG.E': 8}."""
    counts: Counter = Counter()
    for op in instructions(build):
        base = op.split(".")[0]
        if base in FAMILIES:
            width = next((part for part in op.split(".")[1:] if part in ("64", "128", "U8", "S8", "U16")), "")
            counts[f"{base}.{width}" if width else base] += 1
        else:
            counts["other"] += 1
    return counts


_LABEL = re.compile(r"^(\.L_x_\d+):")
_BRANCH = re.compile(r"BRA\s+`?\(?(\.L_x_\d+)")


def hot_lines(build) -> list[str]:
    """The instructions (full text) of the innermost loop that does FFMAs: with the k loop
    unrolled, the loop over K tiles (loads, barriers and all); rolled, the k loop itself."""
    lines = disassemble(build).splitlines()
    labels, instrs, branches = {}, [], []
    for line in lines:
        m = _LABEL.match(line.strip())
        if m:
            labels[m.group(1)] = len(instrs)
            continue
        op = _INSTRUCTION.search(line)
        if op:
            b = _BRANCH.search(line)
            if b:
                branches.append((len(instrs), b.group(1)))
            instrs.append(line[op.start(1):].split(";")[0].strip())
    loops = [(labels[target], at) for at, target in branches if target in labels and labels[target] <= at]
    loops = [(a, b) for a, b in loops if any(i.startswith("FFMA") for i in instrs[a:b + 1])]
    if not loops:
        return []
    start, end = min(loops, key=lambda ab: ab[1] - ab[0])
    return instrs[start:end + 1]


def hot_region(build) -> list[str]:
    """The opcodes of hot_lines."""
    return [i.split()[0] for i in hot_lines(build)]


_REGISTER = re.compile(r"\bR(\d+)(\.reuse)?")


def operand_reads(build) -> dict:
    """How the FFMAs of the hot loop get their three source operands. A source in the same slot as
    the previous instruction's, flagged .reuse there, comes from the operand reuse cache; the
    others are read from the register file, whose two banks (register number mod 2: what
    microbenchmarks of Volta and Turing found; NVIDIA does not document it) each give one value per
    cycle: two reads from one bank cost a cycle ('dispatch' stalls in Nsight Compute)."""
    ffma = from_cache = same_bank = 0
    cached = [None, None, None]
    for ins in hot_lines(build):
        if not ins.startswith("FFMA"):
            cached = [None, None, None]
            continue
        sources = _REGISTER.findall(ins)[1:4]
        reads, now = [], [None, None, None]
        for slot, (reg, reuse) in enumerate(sources):
            if cached[slot] == reg:
                from_cache += 1
            else:
                reads.append(int(reg) % 2)
            if reuse:
                now[slot] = reg
        cached = now
        ffma += 1
        same_bank += len(reads) - len(set(reads)) > 0
    return {"ffma": ffma, "from_cache": from_cache, "same_bank": same_bank}


def summary(build) -> str:
    counts = mix(build)
    total = sum(counts.values())
    ffma = counts.get("FFMA", 0)
    lds = sum(v for k, v in counts.items() if k.startswith("LDS"))
    lines = [f"SASS of {build.kernel} [{build.spec.config_label(build.params)}] for {build.arch}: "
             f"{total} instructions (static count, whole kernel)"]
    for key, value in sorted(counts.items(), key=lambda kv: (kv[0] == "other", -kv[1])):
        family = FAMILIES.get(key.split(".")[0], "everything else (address math, branches, moves)")
        lines.append(f"  {key:<9} {value:>6}  {family}")
    if lds:
        lines.append(f"  FFMA per shared-memory load instruction: {ffma / lds:.2f}")
    return "\n".join(lines)
