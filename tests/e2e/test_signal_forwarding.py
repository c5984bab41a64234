"""A CI cancel (SIGTERM) or Ctrl-C (SIGINT) to `dra-harness run` or `matrix` reaches its
pytest children once: their teardown runs, nothing outlives the command, and it exits 128 + N."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psutil
import pytest

from harness.clusters.host.rundirs import runs_root
from harness.core.layout import REPORTS_ENV
from harness.core.versions import REPO_ROOT, load_matrix
from harness.kit.waits import TIMEOUTS, wait_for
from tests.e2e.lifecycle_probe import processes_of

TARGET = "tests/e2e/stop_target.py"
T = TypeVar("T")


def _commands() -> dict[str, list[str]]:
    cell = f"{load_matrix().default_minor}/nvidia-v25.12/dra-all"
    return {
        "matrix": ["matrix", "--cells", cell, "--suite", TARGET, "--no-report", "-j", "1"],
        "run": ["run", "-n", "0", f"{TARGET}::test_waits_for_a_stop"],
    }


def _start(argv: list[str], probe: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", *argv],
        cwd=REPO_ROOT,
        # reports under the test's directory, not the repository's reports/out
        env={**os.environ, "DRA_HARNESS_STOP_PROBE": str(probe), REPORTS_ENV: str(probe / "reports"), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _stopped(proc: subprocess.Popen[str], sig: signal.Signals, ready: Callable[[], T]) -> tuple[T, str]:
    """`ready()` once the run is where the test wants it, then `sig`; the run's output."""
    try:
        got = ready()
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=TIMEOUTS.deletion)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, out
    return got, out


@pytest.mark.parametrize("command", ["matrix", "run"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_stop_signal_runs_the_pytest_teardown_and_exits_128_plus_n(
    tmp_path: Path, sig: signal.Signals, command: str
) -> None:
    proc = _start(_commands()[command], tmp_path)
    _, out = _stopped(
        proc,
        sig,
        lambda: wait_for(
            lambda: (tmp_path / "setup").exists(), timeout=120, describe="the cell's test to start"
        ),
    )
    pytest_pid = int((tmp_path / "setup").read_text())
    assert (tmp_path / "teardown").read_text() == str(pytest_pid)
    assert not psutil.pid_exists(pytest_pid) or psutil.Process(pytest_pid).status() == psutil.STATUS_ZOMBIE
    if command == "matrix":
        assert "interrupted: stopping running cells" in out
    else:
        assert "dra-harness: interrupted" in out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_stopped_parallel_run_stops_its_one_shared_cluster(tmp_path: Path, sig: signal.Signals) -> None:
    proc = _start(["run", "-n", "2", f"{TARGET}::test_waits_on_the_shared_cluster_for_a_stop"], tmp_path)
    probes, _ = _stopped(
        proc,
        sig,
        lambda: wait_for(
            lambda: sorted(tmp_path.glob("on-cluster-*")),
            lambda found: len(found) == 2,
            timeout=TIMEOUTS.shared_cluster_start,
            describe="both workers' tests on the cluster",
        ),
    )
    matrix = load_matrix()
    run_dirs = [
        runs_root() / f"{matrix.default_minor}-{matrix.default_profile}-{p.name.removeprefix('on-cluster-')}-"
        f"{json.loads(p.read_text())['pid']}"
        for p in probes
    ]
    assert sum((d / "state.json").exists() for d in run_dirs) == 1, run_dirs  # one owner started it
    assert [p for d in run_dirs for p in processes_of(d)] == []


@pytest.mark.parametrize("command", ["matrix", "run"])
def test_a_second_ctrl_c_during_the_teardown_is_one_line_and_130(tmp_path: Path, command: str) -> None:
    """Issue 41: the second Ctrl-C abandoned pytest mid-teardown; its interrupt report then
    ended in a traceback (its PDEATHSIG SIGTERM) after our line. Now the teardown finishes."""
    proc = _start(_commands()[command], tmp_path, DRA_HARNESS_STOP_HOLD="1")
    try:
        wait_for(lambda: (tmp_path / "setup").exists(), timeout=120, describe="the cell's test to start")
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: (tmp_path / "tearing-down").exists(), timeout=60, describe="the teardown to start")
        proc.send_signal(signal.SIGINT)  # the second Ctrl-C, while pytest tears down
        wait_for(lambda: proc.poll() is None, timeout=5, describe="the command to outlive the second Ctrl-C")
        (tmp_path / "release").write_text("")
        out, _ = proc.communicate(timeout=TIMEOUTS.deletion)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    assert "Traceback" not in out, out
    assert (tmp_path / "teardown").exists(), out  # the teardown ran to its end
    stopped = "interrupted: stopping running cells" if command == "matrix" else "dra-harness: interrupted"
    assert out.count(stopped) == 1, out
