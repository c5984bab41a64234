"""A process named beyond its PID. PIDs are reused; (PID, start time) is not, so a state
file that outlived its process can never make us signal an unrelated one."""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from typing import Any

import psutil


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    started: float  # psutil's create_time(): boot time + start ticks, stable for the process's life

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity:
        return cls(pid, psutil.Process(pid).create_time())

    @classmethod
    def from_json(cls, data: Any) -> ProcessIdentity | None:
        """None for anything that is not a well-formed identity (a hand-edited or old file)."""
        if not isinstance(data, dict):
            return None
        pid, started = data.get("pid"), data.get("started")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
            return None
        if not isinstance(started, int | float) or isinstance(started, bool):
            return None
        return cls(pid, float(started))

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "started": self.started}

    def alive(self) -> bool:
        try:
            proc = psutil.Process(self.pid)
            return proc.create_time() == self.started and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def parent(self) -> int | None:
        """The pid of this process's parent; None when it is gone (or no longer this process)."""
        try:
            proc = psutil.Process(self.pid)
            return proc.ppid() if proc.create_time() == self.started else None
        except psutil.Error:
            return None

    def signal(self, sig: int, *, group: bool = False) -> bool:
        """Send `sig` (to its process group when `group`: components lead their own) only if
        this is still the same process; False when it is gone."""
        if not self.alive():
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group and os.getpgid(self.pid) == self.pid:
                os.killpg(self.pid, sig)
            else:
                os.kill(self.pid, sig)
            return True
        return False

    def kill(self) -> bool:
        return self.signal(signal.SIGKILL, group=True)
