"""Runs a bad-input row as the user would: a fresh process, a hard timeout, and a home, cache
and PATH of its own in which a `go` that is called leaves a trace (so a build that starts by
mistake is seen, and never runs). Each row's directory ("{tmp}") holds COMMON_FILES, plus what
its setup writes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.core.versions import REPO_ROOT, VERSIONS_FILE

TIMEOUT = 30.0  # seconds a row may take; each takes well under 2
PROGRAMS = {
    "dra-harness": ["-m", "harness.cli.main"],
    "fake_driver": ["-m", "fake_driver"],
    "kubeletplugin": ["-m", "fake_driver.kubeletplugin"],
    "deviceplugin": ["-m", "fake_driver.deviceplugin"],
    "standin": ["-m", "harness.qualify.standin"],
    "pytest": ["-m", "pytest", "-p", "no:cacheprovider", "suites/smoke"],
}
# `go` on the row's PATH: records that it was called, builds nothing.
FAKE_GO = '#!/bin/sh\necho "$@" >> "$GO_CALLS"\nexit 1\n'
SUMMARY = (
    '{"cell": {"minor": "%s", "personality": "nvidia-v25.12", "profile": "dra-all"}, '
    '"tests": [{"nodeid": "suites/smoke/test_x.py::test_x", "area": "smoke", "outcome": "%s", '
    '"duration": 1.0, "message": ""}], "wall_seconds": %s}'
)
COMMON_FILES: dict[str, str | bytes] = {
    "afile": "",  # a regular file, where a directory is needed: unwritable even for root
    "empty/.keep": "",
    "fleet.yaml": "pools: [{name: h100, count: 2, profile: h100-80gb-hbm3, gpus: 8}]\n",
    "claims.json": "[]",
    "kubeconfig": "apiVersion: v1\n",
    "run/summary.json": SUMMARY % ("1.37", "passed", "1.0"),
    "versions.toml": VERSIONS_FILE.read_text(),
}


def files(contents: dict[str, str | bytes]) -> Callable[[Path], None]:
    """A setup: write these files (relative path: content) into the row's directory."""

    def setup(tmp: Path) -> None:
        for name, content in contents.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode())

    return setup


def versions(edit: Callable[[str], str]) -> Callable[[Path], None]:
    return files({"versions.toml": edit(VERSIONS_FILE.read_text())})


def summary(minor: str = "1.37", outcome: str = "passed", wall: str = "1.0") -> Callable[[Path], None]:
    return files({"run/summary.json": SUMMARY % (minor, outcome, wall)})


@dataclass(frozen=True)
class Row:
    id: str
    argv: tuple[str, ...]  # "{tmp}" stands for the row's own directory
    code: int
    line: str  # a regex the one line on stderr must match; "" for nothing on stderr at all
    program: str = "dra-harness"
    setup: Callable[[Path], None] | None = None
    closed_stdout: bool = False  # stdout is a pipe its reader has closed (`... | head`)


@dataclass(frozen=True)
class Outcome:
    code: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    left_running: bool  # a process of the row's session outlived it
    go_calls: str  # what the row asked `go` to do ("" when nothing)
    seconds: float


def _environment(tmp: Path) -> dict[str, str]:
    fake_bin = tmp / "bin"
    fake_bin.mkdir()
    (fake_bin / "go").write_text(FAKE_GO)
    (fake_bin / "go").chmod(0o755)
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TZ", "TMPDIR")}
    return keep | {
        "HOME": str(tmp / "home"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "PATH": f"{fake_bin}:{Path(sys.executable).parent}:/usr/bin:/bin",
        "GO_CALLS": str(tmp / "go-calls"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)  # do not leave it to the next test
    return True


def run_row(row: Row, tmp: Path) -> Outcome:
    (tmp / "home").mkdir(parents=True)
    files(COMMON_FILES)(tmp)
    if row.setup:
        row.setup(tmp)
    argv = [a.replace("{tmp}", str(tmp)) for a in row.argv]
    cmd = [sys.executable, *PROGRAMS[row.program], *argv]
    read_end, write_end = os.pipe() if row.closed_stdout else (-1, -1)
    if row.closed_stdout:
        os.close(read_end)
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=REPO_ROOT if row.program == "pytest" else tmp,
        env=_environment(tmp),
        stdin=subprocess.DEVNULL,
        stdout=write_end if row.closed_stdout else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: anything it leaves behind is found
    )
    if row.closed_stdout:
        os.close(write_end)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    calls = tmp / "go-calls"
    return Outcome(
        code,
        out or "",
        err,
        _group_alive(proc.pid),
        calls.read_text() if calls.exists() else "",
        time.monotonic() - started,
    )
