"""What a named cluster left behind, seen from outside: processes by command line and
listening ports by the cluster's own records. Shared by the lifecycle tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import yaml

from harness.clusters.host import health
from harness.clusters.host.pki import CertPair
from harness.clusters.host.ports import port_in_use
from harness.clusters.local.cluster import read_state
from harness.clusters.named import lifecycle as named
from harness.clusters.named import records
from harness.core.versions import REPO_ROOT
from harness.kit.waits import TIMEOUTS, assert_stays, wait_for


def cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], what: str) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=named.READY_TIMEOUT + TIMEOUTS.deletion)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"{what} did not exit; stderr: {err[-2000:]}") from None
    return proc.returncode, out, err


def remove_cluster(name: str) -> None:
    """A test's own named cluster gone with its directory: `cluster down` alone leaves a stopped
    cluster in the user's cache (`cluster list`). Whatever state a failed test left it in."""
    finish(cli("cluster", "down", "--name", name), "cluster down")
    finish(cli("cluster", "delete", "--name", name), "cluster delete")


def processes_of(directory: Path) -> list[str]:
    """Every live process whose command line names the cluster's directory (the supervisor
    and each component: data dir, certificates, kubeconfigs)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(str(directory) in a for a in cmdline):
            found.append(f"{proc.info['pid']}: {' '.join(cmdline)[:160]}")
    return found


def recorded_ports(directory: Path) -> list[int]:
    try:
        state = read_state(directory)
    except (OSError, ValueError):
        return []
    return [int(p) for p in state.get("ports", {}).values()]


def leftovers(directory: Path, ports: list[int]) -> dict[str, list[str]]:
    return {
        "processes": processes_of(directory),
        "ports": [str(p) for p in ports if port_in_use(p)],
    }


def assert_nothing_left(directory: Path, ports: list[int], after: str) -> None:
    wait_for(
        lambda: leftovers(directory, ports),
        lambda left: not any(left.values()),
        timeout=TIMEOUTS.deletion,
        describe=f"nothing of {directory.name} left after {after}",
    )


def assert_serves_after_up_exits(name: str) -> None:
    """`up` has exited: the cluster it reported must outlive it (the supervisor detached)."""
    record = records.running(name)
    assert record is not None, f"cluster {name!r} is gone once `up` exited"
    kubeconfig = yaml.safe_load(Path(record.kubeconfig).read_text())
    server, directory = kubeconfig["clusters"][0]["cluster"]["server"], records.state_dir(name)
    tls = health.tls_context(
        directory / "pki" / "ca.crt",
        CertPair(directory / "pki" / "admin.crt", directory / "pki" / "admin.key"),
    )
    assert_stays(
        lambda: (records.running(name) is not None, health.get(f"{server}/readyz", tls)[0]),
        lambda seen: seen == (True, 200),
        duration=3.0,
        describe=f"cluster {name!r} running and ready after `up` exited",
    )


def interrupt(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, sig)
