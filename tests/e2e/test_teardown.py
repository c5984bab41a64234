"""Nothing outlives the harness: a cluster started in a child process is gone, by PID and
by port, after the child is interrupted (SIGINT, SIGTERM) or even killed (SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.clusters.host.ports import port_in_use
from harness.clusters.local.cluster import read_state
from harness.core.versions import REPO_ROOT
from harness.kit.waits import TIMEOUTS, wait_for

CHILD = Path(__file__).with_name("cluster_child.py")
COMPONENTS = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purpose.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1][0] != "Z"


def _listener(port: int) -> str:
    """Who listens on a port (for the failure message)."""
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "<no listener; connect still succeeded>"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_interrupting_the_harness_leaves_no_component_running(tmp_path: Path, sig: signal.Signals) -> None:
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(tmp_path)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        state = read_state(tmp_path)
        pids: dict[str, int] = state["pids"]
        ports: list[int] = list(state["ports"].values())
        assert set(pids) == COMPONENTS
        assert all(_alive(pid) for pid in pids.values())

        child.send_signal(sig)
        child.wait(timeout=TIMEOUTS.deletion)

        still = wait_for(
            lambda: {name: pid for name, pid in pids.items() if _alive(pid)},
            lambda alive: not alive,
            timeout=TIMEOUTS.deletion,
            describe=f"every component gone after {sig.name}",
        )
        assert still == {}
        wait_for(
            lambda: {p: _listener(p) for p in ports if port_in_use(p)},
            lambda busy: not busy,
            timeout=TIMEOUTS.deletion,
            describe=f"ports {ports} free after {sig.name}",
        )
    finally:
        if child.poll() is None:
            child.kill()
