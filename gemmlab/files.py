"""Writing files so that nothing is lost: whole or not at all, never through a planted link."""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


class UnusableDirectory(RuntimeError):
    """A folder gemmlab must write to cannot be used safely; the message says which and what to do."""


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write beside the file under a fresh unique name (created exclusively, so never through a
    symlink planted there), then rename over it: a reader sees the old file or the new one, never a
    part, and concurrent writers (threads or processes) cannot truncate each other's."""
    raw = data.encode() if isinstance(data, str) else data
    # mkstemp makes the file owner-only (0600); the file takes the mode it had, or a new file's usual 0644,
    # so a record written here can be read by everyone who installs the package.
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def private_dir(path: Path, what: str, fix: str) -> Path:
    """`path` as a folder this user owns and nobody else may write to (created so if missing)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise UnusableDirectory(f"{what} {path} is a file, not a folder: {fix}") from None
    except OSError as exc:
        raise UnusableDirectory(f"cannot create {what} {path} ({exc.strerror}): {fix}") from None
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnusableDirectory(f"{what} {path} is not a plain folder: {fix}")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise UnusableDirectory(f"{what} {path} belongs to another user: {fix}")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnusableDirectory(f"{what} {path} can be written by other users (chmod go-w {path}), or: {fix}")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UnusableDirectory(f"{what} {path} is not writable: {fix}")
    return path
