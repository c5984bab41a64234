"""Checks of paths a command will write, made before it starts: a bad directory or socket path
is one line, not a traceback from the server or a run that loses its result at the end.

The checks create nothing: a refused command leaves no directories behind.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

# sun_path holds 108 bytes, the terminating NUL included (unix(7)).
MAX_SOCKET_PATH = 107
# What an input file that is not a regular file is: reading a FIFO blocks until a writer
# comes, /dev/zero never ends.
_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_a_regular_file(path: Path) -> str:
    """What `path` is when it is there and not a regular file (after links), e.g. "a FIFO";
    "" for a regular file or nothing at all. Asked before the file is opened."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return ""
    if stat.S_ISREG(mode):
        return ""
    return next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")


def unwritable(path: Path, *, directory: bool = False) -> str:
    """Why `path` (a file, or with directory=True a directory, that may not exist yet) cannot
    be written; "" when it can."""
    try:
        return _unwritable(path, directory)
    except OSError as err:  # a directory on the way that this user cannot search
        return err.strerror or str(err)


def _unwritable(path: Path, directory: bool) -> str:
    if path.exists():
        if path.is_dir() != directory:
            return "is a directory" if path.is_dir() else "is not a directory"
        if not directory:
            return "" if os.access(path, os.W_OK) else "permission denied"
    base = path if path.is_dir() else path.parent
    while not base.exists():  # the missing directories would be created inside `base`
        base = base.parent
    if not base.is_dir():
        return f"{base} is not a directory"
    try:
        with tempfile.TemporaryFile(dir=base):
            return ""
    except OSError as err:
        return f"cannot create files in {base}: {err.strerror}"


def socket_problem(path: Path) -> str:
    """Why a unix socket cannot be bound at `path` ("" when it can, as far as its length goes)."""
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH:
        return f"socket path {path} is {size} bytes; a unix socket path has at most {MAX_SOCKET_PATH}"
    return ""
