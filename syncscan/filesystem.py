"""Reading the analysed tree's files without hanging on what is not a file.

A FIFO, socket or device named `x.py` (or `pyproject.toml`) would block a plain
`read_bytes()` forever. Every file syncscan reads goes through here: it is
opened without blocking, checked to be a regular file on the open descriptor
(no window between a check and the read), and refused when it is larger than
the caller's limit, before any of it is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFileError(OSError):
    """The path names a directory, FIFO, socket or device, not a file."""

    def __init__(self, path: Path | str, mode: int) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({kind_of(mode)})", str(path))


class FileTooLargeError(OSError):
    """The file is over the size limit; nothing of it was read."""

    def __init__(self, path: Path | str, size: int, limit: int) -> None:
        self.size, self.limit = size, limit
        super().__init__(errno.EFBIG, f"too large: {size:,} bytes (limit {limit:,})", str(path))


def kind_of(mode: int) -> str:
    """What a non-regular stat mode is ("a FIFO", ...); "a regular file" otherwise."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def stat_is_regular(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode)


def read_regular_file(path: Path | str, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file; OSError (with a one-line strerror) otherwise."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(path, info.st_mode)
        if max_bytes is not None and info.st_size > max_bytes:
            raise FileTooLargeError(path, info.st_size, max_bytes)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:  # it grew since the stat
            raise FileTooLargeError(path, len(data), max_bytes)
        return data
    finally:
        os.close(fd)


def read_regular_text(path: Path | str) -> str:
    """A regular file as UTF-8 text (configuration, packs, baselines)."""
    return read_regular_file(path).decode("utf-8")
