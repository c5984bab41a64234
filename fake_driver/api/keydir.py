"""The private directory for key material the kubernetes client writes to disk.

The client writes a kubeconfig's client-certificate-data, client-key-data and
certificate-authority-data (and an exec plugin's returned certificate and key) to temporary
files, and removes them only at a normal exit: a process killed with SIGKILL left the private
key in /tmp. Here those files go into `<runtime dir>/dra-harness-<uid>/keys/<pid>-<start>`,
mode 0700, removed when the process exits; one that was killed is removed by the next process
that makes its own (its owner is dead: no process of that id and start time), as cluster
run directories are.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from fake_driver.core.errors import KubeconfigError

_mine: dict[int, Path] = {}  # by pid: a forked child makes its own


def keys_root() -> Path:
    """Per user, on tmpfs where there is one ($XDG_RUNTIME_DIR), else in the temp directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = Path(runtime) if runtime and os.path.isdir(runtime) else Path(tempfile.gettempdir())
    return base / f"dra-harness-{os.getuid()}" / "keys"


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat, field 22); ""
    when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return text.rsplit(")", 1)[-1].split()[19]


def _owned_dir(path: Path) -> None:
    """`path` exists as a directory of this user's, not a link, mode 0700; else one line."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise KubeconfigError(f"{path} is not a directory of this user's: refusing to write keys into it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)


def _sweep(root: Path) -> None:
    """Remove the key directories of processes that are gone (killed before they could)."""
    for entry in root.iterdir():
        pid, _, start = entry.name.partition("-")
        if pid.isdigit() and _start_time(int(pid)) != start:
            shutil.rmtree(entry, ignore_errors=True)


def private_dir() -> str:
    """This process's key directory, made (and older ones of dead processes swept) on first use."""
    pid = os.getpid()
    if pid not in _mine:
        root = keys_root()
        _owned_dir(root.parent)
        _owned_dir(root)
        _sweep(root)
        mine = root / f"{pid}-{_start_time(pid)}"
        _owned_dir(mine)
        atexit.register(shutil.rmtree, mine, ignore_errors=True)
        _mine[pid] = mine
    return str(_mine[pid])
