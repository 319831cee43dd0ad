"""A kernel's source identity: what its records and tuned configurations are tied to.

It is a hash of the code's tokens, not of the file's bytes: comments and the layout of white space
do not count, so fixing a typo in a kernel's header comment leaves its records fresh, while any
change to a statement, a define or a string (inline PTX) makes them stale. The headers a kernel
includes from its own folder (kernels/ptx.cuh) are part of its code: a change to one makes the
records of every kernel that includes it stale.
"""
from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

# String and character literals are kept whole (a '//' inside one is no comment); comments go.
_LITERAL_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[A-Za-z_]\w*|\d[\w.]*'
                    r'|<<=|>>=|->|\+\+|--|<<|>>|&&|\|\||::|[-+*/%&|^<>=!]=|\S')


def _without_comments(text: str) -> str:
    return _LITERAL_OR_COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", text)


def code_tokens(text: str) -> list[str]:
    """The tokens of C/CUDA source with comments dropped. A preprocessor directive ends at its
    line's end, so each one is closed by a newline token."""
    tokens = []
    for line in re.sub(r"\\\n", " ", _without_comments(text)).splitlines():
        found = _TOKEN.findall(line)
        tokens += found
        if found and found[0] == "#":
            tokens.append("\n")
    return tokens


# `#include "name"` (or <name>), in code with its comments gone.
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*["<]([^">\n]+)[">]', re.MULTILINE)


def headers(text: str, folder: Path) -> dict[str, Path]:
    """The headers of `folder` (the kernels folder) that C/CUDA source includes, directly or through
    one another, by the name it includes them by, in the order first included. Includes of files not
    in `folder` (none of the kernels has any) are not followed."""
    found: dict[str, Path] = {}
    pending = [text]
    while pending:
        for name in _INCLUDE.findall(_without_comments(pending.pop(0))):
            path = folder / name
            if name not in found and path.is_file():
                found[name] = path
                pending.append(path.read_text())
    return found


def code_hash(path: Path) -> str:
    """16 hex digits of SHA-256 over the code's tokens, then those of each header it includes from
    its own folder."""
    text = path.read_text()
    tokens = list(_tokens_of(text))
    for header in headers(text, path.parent).values():
        tokens += _tokens_of(header.read_text())
    return hashlib.sha256("\x1f".join(tokens).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=64)
def _tokens_of(text: str) -> tuple[str, ...]:
    """code_tokens, once per text in a process: the kernels that share a header (ptx.cuh) tokenize it once."""
    return tuple(code_tokens(text))
