"""`dra-harness cluster up|down` against a hostile user: interrupted at every moment of a
start, run twice at once, stopped while starting, and fooled by a reused PID. Asserted
from outside, by process command line and listening port: nothing is ever left."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.clusters.host.identity import ProcessIdentity
from harness.clusters.named import lifecycle as named
from harness.clusters.named import records, supervisor
from harness.kit.waits import TIMEOUTS, wait_for
from tests.e2e.lifecycle_probe import (
    assert_nothing_left,
    assert_serves_after_up_exits,
    cli,
    finish,
    interrupt,
    processes_of,
    recorded_ports,
)

TRIALS = 20
SEED = int(os.environ.get("DRA_HARNESS_TORTURE_SEED", "20261203"))


@pytest.fixture
def name(request: pytest.FixtureRequest) -> Iterator[str]:
    """A cluster name of this test's own, removed with whatever it left."""
    cluster = f"t{os.getpid()}-{request.node.name.split('[')[0][-20:].replace('_', '-')}".strip("-")
    yield cluster
    subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "cluster", "down", "--name", cluster], check=False
    )
    shutil.rmtree(records.state_dir(cluster), ignore_errors=True)
    (records.clusters_root() / f"{cluster}.lock").unlink(missing_ok=True)


def _exists(path: Callable[[Path], Path]) -> Callable[[Path], bool]:
    return lambda d: path(d).exists()


# Moments of a start, each observable from outside (no timed sleeps): the interrupt lands
# before the supervisor exists, then after each component was launched, then at ready.
MOMENTS: dict[str, Callable[[Path], bool]] = {
    "at once": lambda d: True,
    "supervisor spawned": _exists(lambda d: d / records.RECORD),
    "etcd launched": _exists(lambda d: d / "logs" / "etcd.log"),
    "apiserver launched": _exists(lambda d: d / "logs" / "kube-apiserver.log"),
    "controllers launched": _exists(lambda d: d / "logs" / "kube-scheduler.log"),
    "kwok launched": _exists(lambda d: d / "logs" / "kwok.log"),
    "ready": lambda d: (r := records.read_record(d)) is not None and r.phase == "ready",
}
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)


def _trials() -> list[tuple[str, signal.Signals]]:
    rng = random.Random(SEED)
    plan = [(m, s) for m in MOMENTS for s in SIGNALS]
    rng.shuffle(plan)
    return plan[:TRIALS]


def _reach(up: subprocess.Popen[str], directory: Path, moment: str) -> None:
    wait_for(
        lambda: MOMENTS[moment](directory) or up.poll() is not None,
        timeout=named.READY_TIMEOUT,
        describe=f"`cluster up` to reach {moment!r}",
        interval=0.02,
    )


def test_twenty_interrupts_of_cluster_up_leave_nothing_running(name: str) -> None:
    directory = records.state_dir(name)
    outcomes = []
    for moment, sig in _trials():
        shutil.rmtree(directory, ignore_errors=True)  # moments are files: none from the last trial
        up = cli("cluster", "up", "--name", name)
        _reach(up, directory, moment)
        ports = recorded_ports(directory)
        assert up.poll() is None or moment == "ready", f"`up` ended before {moment!r}: {up.communicate()}"
        interrupt(up, sig)
        code, out, err = finish(up, f"cluster up after {sig.name} at {moment!r}")
        # "at once" may land while the interpreter itself starts, before any line of ours runs:
        # CPython then reports its own init failure (a fresh venv's first imports are slow).
        in_startup = moment == "at once" and err.startswith("Fatal Python error: init_")
        assert in_startup or "Traceback" not in err, err
        if "export KUBECONFIG=" in out:  # the signal came after `up` reported success: a cluster
            assert finish(cli("cluster", "down", "--name", name), "down")[0] == 0
        assert_nothing_left(directory, recorded_ports(directory) or ports, f"{sig.name} at {moment!r}")
        # Before Python's handlers exist the signal kills `up` outright (-N); after, it unwinds
        # (128 + N); at "ready", `up` may already have finished (0).
        allowed = {-sig.value, 128 + sig.value} | ({0} if moment == "ready" else set())
        allowed |= {1, -signal.SIGABRT.value} if in_startup else set()  # Py_FatalError: exit 1 or abort
        assert code in allowed, (moment, sig.name, code, err)
        outcomes.append((moment, sig.name, code))
    print("\n".join(f"{m:>20} {s:>7} -> exit {c}" for m, s, c in outcomes))
    assert len(outcomes) == TRIALS
    # Still usable afterwards: a stale record from a killed `up` blocks nothing.
    code, out, err = finish(cli("cluster", "up", "--name", name), "cluster up after the trials")
    assert code == 0, err
    assert "export KUBECONFIG=" in out
    assert_serves_after_up_exits(name)
    code, out, _ = finish(cli("cluster", "down", "--name", name), "cluster down")
    assert (code, out.strip()) == (0, f"cluster {name!r} stopped")
    assert processes_of(directory) == []


def test_two_ups_of_one_name_make_one_cluster(name: str) -> None:
    first, second = cli("cluster", "up", "--name", name), cli("cluster", "up", "--name", name)
    (c1, out1, err1), (c2, out2, err2) = finish(first, "first up"), finish(second, "second up")
    assert (c1, c2) == (0, 0), err1 + err2
    exports = {line for line in (out1 + out2).splitlines() if line.startswith("export KUBECONFIG=")}
    assert len(exports) == 1
    assert sorted("already running" in o for o in (out1, out2)) == [False, True]
    supervisors = [
        p for p in processes_of(records.state_dir(name)) if "harness.clusters.named.supervisor" in p
    ]
    assert len(supervisors) == 1, supervisors
    assert_serves_after_up_exits(name)
    ports = recorded_ports(records.state_dir(name))
    assert finish(cli("cluster", "down", "--name", name), "down")[0] == 0
    assert_nothing_left(records.state_dir(name), ports, "down")


def test_down_during_a_start_stops_it(name: str) -> None:
    directory = records.state_dir(name)
    up = cli("cluster", "up", "--name", name)
    wait_for(
        lambda: MOMENTS["etcd launched"](directory), timeout=named.READY_TIMEOUT, describe="etcd launched"
    )
    code, out, _ = finish(cli("cluster", "down", "--name", name), "down")
    assert (code, out.strip()) == (0, f"cluster {name!r} stopped")
    code, _, err = finish(up, "the interrupted up")
    assert code == 1
    assert err.startswith(f"dra-harness: cluster {name!r} did not start:\n"), err
    assert "stopped by SIGTERM while starting" in err
    assert_nothing_left(directory, recorded_ports(directory), "down during start")


def test_up_of_another_version_under_a_running_name_is_refused(name: str) -> None:
    assert finish(cli("cluster", "up", "--name", name, "-g", "dra-all"), "up")[0] == 0
    code, out, err = finish(cli("cluster", "up", "--name", name, "-g", "defaults"), "second up")
    assert (code, out) == (1, "")
    assert err.startswith(f"dra-harness: cluster {name!r} is ready with Kubernetes "), err
    assert err.endswith(
        "not 1.37 (defaults): `dra-harness cluster down --name "
        + name
        + "` first, or choose another --name\n"
    )


def test_a_reused_pid_in_a_stale_record_is_never_signalled(name: str) -> None:
    """The record names a live, unrelated process by PID with another start time: `down` and
    `status` treat the cluster as not running and leave the process alone."""
    bystander = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        directory = records.state_dir(name)
        directory.mkdir(parents=True)
        real = ProcessIdentity.of(bystander.pid)
        stale = ProcessIdentity(bystander.pid, real.started - 3600.0)
        record = records.ClusterRecord(
            name, "1.37", "v1.37.2", "dra-all", "ready", stale, "x", {"etcd": stale}
        )
        (directory / records.RECORD).write_text(json.dumps(record.to_json()))
        assert finish(cli("cluster", "status", "--name", name), "status")[:2] == (
            1,
            f"cluster {name!r} is not running\n",
        )
        assert finish(cli("cluster", "down", "--name", name), "down")[:2] == (
            0,
            f"cluster {name!r} is not running\n",
        )
        assert bystander.poll() is None, "down signalled a process that only shares the PID"
        assert real.alive()
    finally:
        bystander.kill()
        bystander.wait(timeout=TIMEOUTS.deletion)


def _listed(name: str) -> list[str]:
    code, out, err = finish(cli("cluster", "list"), "cluster list")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.split()[:1] == [name]]
    return rows[0] if rows else []


def test_list_shows_running_and_stopped_clusters_and_delete_removes_only_a_stopped_one(name: str) -> None:
    code, _, err = finish(cli("cluster", "up", "--name", name, "--no-fleet"), "up")
    assert code == 0, err
    assert _listed(name)[1:3] == ["running", "v1.37.2"]
    assert finish(cli("cluster", "delete", "--name", name), "delete while running") == (
        1,
        "",
        f"dra-harness: cluster {name!r} is running: `dra-harness cluster down --name {name}` first\n",
    )
    assert records.state_dir(name).is_dir()
    assert finish(cli("cluster", "down", "--name", name), "down")[0] == 0

    state, version, size = _listed(name)[1:4]
    assert (state, version) == ("stopped", "-")  # down removes the record, not the directory
    assert int(size.removesuffix("MB")) > 0  # etcd's data at least
    code, out, err = finish(cli("cluster", "delete", "--name", name), "delete")
    assert (code, err) == (0, "")
    assert out == f"cluster {name!r} deleted: {size.removesuffix('MB')} MB freed\n"
    assert not records.state_dir(name).exists()
    assert not (records.clusters_root() / f"{name}.lock").exists()
    assert _listed(name) == []
    assert finish(cli("cluster", "delete", "--name", name), "second delete")[::2] == (
        1,
        f"dra-harness: no cluster {name!r} in {records.clusters_root()}; "
        "`dra-harness cluster list` shows them\n",
    )


def test_a_frozen_api_server_is_not_ready_and_status_is_one_line(name: str) -> None:
    """Issue 41: with kube-apiserver stopped (SIGSTOP) the supervisor kept saying "ready" and
    `cluster status` ended in a traceback. Now the record says so within a health period and
    status is one line at once; SIGCONT brings "ready" back."""
    assert finish(cli("cluster", "up", "--name", name), "up")[0] == 0
    record = records.running(name)
    assert record is not None
    apiserver = record.components["kube-apiserver"].pid
    os.kill(apiserver, signal.SIGSTOP)
    try:
        phase = wait_for(
            lambda: (records.running(name) or record).phase,
            lambda p: p.startswith("unresponsive"),
            timeout=supervisor.HEALTH_EVERY * (supervisor.MISSES + 2),
            describe="the record to say the API server is unresponsive",
        )
        assert phase.startswith("unresponsive: kube-apiserver /readyz: "), phase
        started = time.monotonic()
        code, _, err = finish(cli("cluster", "status", "--name", name), "status")
        assert (code, err) == (1, f"dra-harness: cluster {name!r} is {phase}\n")
        assert time.monotonic() - started < 10
    finally:
        os.kill(apiserver, signal.SIGCONT)
    wait_for(
        lambda: (records.running(name) or record).phase,
        lambda p: p == "ready",
        timeout=supervisor.HEALTH_EVERY * 3,
        describe="the record to say ready again",
    )
    assert finish(cli("cluster", "status", "--name", name), "status")[0] == 0
