"""A named cluster's directory, lock and record: what `cluster up|down|status|list|delete`
and the supervisor share.

Each name owns one directory under the cache, `<cache>/clusters/<name>/` (the cluster's run
directory, `supervisor.json`, `supervisor.log`), and one lock file beside it. The record names
the supervisor by PID *and* start time, so a reused PID is never signalled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.clusters.host.identity import ProcessIdentity
from harness.controlplane.build import cache_root
from harness.core.errors import HarnessError
from harness.kit.waits import TIMEOUTS, wait_for

MAX_NAME = 40
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
RECORD = "supervisor.json"
LOG = "supervisor.log"
# Longer than a `down` may hold the lock: its bounded stop (SIGTERM, then SIGKILL).
LOCK_TIMEOUT = TIMEOUTS.deletion + 30.0


@dataclass
class ClusterRecord:
    """supervisor.json: written by `up` (phase "starting") and the supervisor ("ready")."""

    name: str
    minor: str
    kubernetes: str
    profile: str
    phase: str
    supervisor: ProcessIdentity
    kubeconfig: str
    components: dict[str, ProcessIdentity] = field(default_factory=dict)
    kubelets: dict[str, str] = field(default_factory=dict)  # real node -> its kubelet's minor

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "minor": self.minor,
            "kubernetes": self.kubernetes,
            "profile": self.profile,
            "phase": self.phase,
            "supervisor": self.supervisor.to_json(),
            "kubeconfig": self.kubeconfig,
            "components": {k: v.to_json() for k, v in self.components.items()},
            "kubelets": dict(self.kubelets),
        }

    @classmethod
    def from_json(cls, data: Any) -> ClusterRecord | None:
        if not isinstance(data, dict):
            return None
        supervisor = ProcessIdentity.from_json(data.get("supervisor"))
        strings = [data.get(k) for k in ("name", "minor", "kubernetes", "profile", "phase", "kubeconfig")]
        if supervisor is None or not all(isinstance(s, str) for s in strings):
            return None
        raw = data.get("components")
        parsed = {k: ProcessIdentity.from_json(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        components = {k: v for k, v in parsed.items() if v is not None}
        name, minor, kubernetes, profile, phase, kubeconfig = (str(s) for s in strings)
        raw = data.get("kubelets")
        kubelets = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        return cls(name, minor, kubernetes, profile, phase, supervisor, kubeconfig, components, kubelets)


def validate_name(name: str) -> str:
    if len(name) > MAX_NAME or not _NAME.fullmatch(name):
        raise HarnessError(
            f"cluster name {name!r} is not valid: 1-{MAX_NAME} lowercase letters, digits or '-', "
            "starting and ending with a letter or digit"
        )
    return name


def clusters_root() -> Path:
    return cache_root() / "clusters"


def state_dir(name: str) -> Path:
    """The cluster's own directory; refused if it resolves anywhere else (a planted symlink)."""
    root = clusters_root()
    path = root / validate_name(name)
    if path.is_symlink() or (path.exists() and path.resolve().parent != root.resolve()):
        raise HarnessError(f"{path} is not a directory of dra-harness's own; remove it by hand")
    return path


@contextlib.contextmanager
def locked(name: str, *, busy: str = "") -> Iterator[None]:
    """Hold the name's lock; waits for another holder, or with `busy` refuses at once with
    that message (a second upgrade must not queue behind the first)."""
    root = clusters_root()
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / f"{validate_name(name)}.lock", os.O_RDWR | os.O_CREAT, 0o600)

    def acquire() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    try:
        if busy and not acquire():
            raise HarnessError(busy)
        wait_for(
            acquire,
            timeout=LOCK_TIMEOUT,
            describe=f"cluster {name!r}: the lock another dra-harness command holds",
            interval=0.2,
        )
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def read_record(directory: Path) -> ClusterRecord | None:
    try:
        return ClusterRecord.from_json(json.loads((directory / RECORD).read_text()))
    except (OSError, ValueError):
        return None


def write_record(directory: Path, record: ClusterRecord) -> None:
    tmp = directory / f".{RECORD}.{os.getpid()}"
    tmp.write_text(json.dumps(record.to_json(), indent=2))
    tmp.replace(directory / RECORD)  # readers never see half a file


def running(name: str) -> ClusterRecord | None:
    record = read_record(state_dir(name))
    return record if record is not None and record.supervisor.alive() else None


@dataclass(frozen=True)
class StoredCluster:
    """A name's directory under the cache, running or left by a stopped cluster."""

    name: str
    running: bool
    kubernetes: str  # "" when no record says (a stopped cluster's record is removed)
    size: int  # bytes on disk: etcd's data, logs, the PKI
    modified: float  # the newest file's time (seconds since the epoch)


def disk_usage(directory: Path) -> tuple[int, float]:
    size, newest = 0, directory.stat().st_mtime
    for path in directory.rglob("*"):
        try:
            stat = path.lstat()
        except OSError:
            continue  # removed meanwhile by the running cluster
        size += stat.st_size
        newest = max(newest, stat.st_mtime)
    return size, newest


def stored() -> list[StoredCluster]:
    """Every named cluster's directory, by name: `dra-harness cluster list`."""
    root = clusters_root()
    found = []
    for directory in sorted(root.iterdir()) if root.is_dir() else []:
        if not directory.is_dir() or directory.is_symlink() or not _NAME.fullmatch(directory.name):
            continue  # lock files, and anything not made by this module
        record = read_record(directory)
        alive = record is not None and record.supervisor.alive()
        size, modified = disk_usage(directory)
        found.append(
            StoredCluster(directory.name, alive, record.kubernetes if record else "", size, modified)
        )
    return found
