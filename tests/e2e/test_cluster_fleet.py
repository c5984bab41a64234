"""`cluster up --fleet`: the fleet's nodes, classes and slices, and a publisher the supervisor
keeps running; `--no-fleet`: a bare cluster."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters.host.identity import ProcessIdentity
from harness.clusters.named import records
from harness.clusters.named.supervisor import restart_delay
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.waits import TIMEOUTS, wait_for
from tests.e2e.lifecycle_probe import cli, finish, processes_of, remove_cluster

FLEET = """\
personality: nvidia-v25.12
pools:
  - {name: l4, count: 1, profile: l4, gpus: 2}
  - {name: old, count: 1, profile: t4, gpus: 4, device_plugin: true, dra: false}
"""


@pytest.fixture
def name() -> Iterator[str]:
    name = f"t{os.getpid()}-fleet"
    yield name
    remove_cluster(name)


def _devices_per_node(kube: Kube) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in kube.list(*kinds.RESOURCE_SLICE):
        node = s["spec"]["nodeName"]
        counts[node] = counts.get(node, 0) + len(s["spec"]["devices"])
    return counts


def _wait_l4_slices(kube: Kube, describe: str) -> None:
    wait_for(lambda: _devices_per_node(kube), lambda d: d == {"l4-0": 2}, timeout=30, describe=describe)


def _publisher(name: str) -> ProcessIdentity:
    record = records.running(name)
    assert record is not None
    return record.components["fake-driver-publisher"]


def test_the_supervisor_restarts_a_killed_publisher_and_the_slices_stay(name: str, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    code, out, err = finish(cli("cluster", "up", "--name", name, "--fleet", str(fleet)), "cluster up")
    assert code == 0, err
    assert f"# GPU fleet from {fleet}" in out
    fleet.unlink()  # the cluster keeps its own copy
    kube = Kube.from_kubeconfig(records.state_dir(name) / "admin.kubeconfig")
    wait_for(
        lambda: _devices_per_node(kube), lambda d: d == {"l4-0": 2}, timeout=30, describe="l4-0's slices"
    )
    old = kube.get(*kinds.NODE, "old-0")
    assert old["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    first = _publisher(name)
    os.kill(first.pid, signal.SIGKILL)
    second = wait_for(
        lambda: _publisher(name),
        lambda p: p.pid != first.pid and p.alive(),
        timeout=TIMEOUTS.node_ready,
        describe="the supervisor's record naming a restarted publisher",
    )
    assert "fake-driver-publisher exited: restart 1" in (records.state_dir(name) / records.LOG).read_text()
    kube.delete(*kinds.RESOURCE_SLICE, kube.list(*kinds.RESOURCE_SLICE)[0]["metadata"]["name"])
    _wait_l4_slices(kube, "the restarted publisher republishing a deleted slice")
    assert finish(cli("cluster", "down", "--name", name), "down")[0] == 0
    assert not second.alive()
    assert processes_of(records.state_dir(name)) == []


def test_no_fleet_gives_a_bare_cluster(name: str) -> None:
    code, out, err = finish(cli("cluster", "up", "--name", name, "--no-fleet"), "cluster up")
    assert code == 0, err
    assert "GPU fleet" not in out
    kube = Kube.from_kubeconfig(records.state_dir(name) / "admin.kubeconfig")
    assert kube.list(*kinds.NODE) == []
    assert kube.list(*kinds.DEVICE_CLASS) == []
    record = records.running(name)
    assert record is not None
    assert "fake-driver-publisher" not in record.components


def _restarted(name: str, old: int, n: int) -> ProcessIdentity:
    return wait_for(
        lambda: _publisher(name),
        lambda p: p.pid != old and p.alive(),
        timeout=TIMEOUTS.node_ready,
        describe=f"the supervisor's record naming publisher restart {n}",
    )


def test_a_publisher_that_keeps_dying_is_restarted_after_growing_delays(name: str, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    code, _, err = finish(cli("cluster", "up", "--name", name, "--fleet", str(fleet)), "cluster up")
    assert code == 0, err
    delays = [restart_delay(n) for n in range(1, 5)]
    assert delays == [1.0, 2.0, 4.0, 8.0]
    gaps = []
    current = _publisher(name)
    for n in range(1, 5):
        os.kill(current.pid, signal.SIGKILL)
        killed = time.monotonic()
        current = _restarted(name, current.pid, n)
        gaps.append(time.monotonic() - killed)
    log = (records.state_dir(name) / records.LOG).read_text().splitlines()
    assert [line for line in log if line.startswith("fake-driver-publisher exited")] == [
        f"fake-driver-publisher exited: restart {n} in {d:.0f}s" for n, d in enumerate(delays, 1)
    ]
    assert all(gap >= delay for gap, delay in zip(gaps, delays, strict=True)), gaps
    kube = Kube.from_kubeconfig(records.state_dir(name) / "admin.kubeconfig")
    _wait_l4_slices(kube, "l4-0's slices from the fifth publisher")
    assert finish(cli("cluster", "down", "--name", name), "down")[0] == 0
    assert not current.alive()
