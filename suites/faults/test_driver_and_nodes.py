"""Data-plane faults: the fake driver process killed and restarted (its slices survive, or
are republished without duplicate devices), and a node deleted (its slices go, its pods'
claims are deallocated). After each: nothing allocated twice, reservations match live
pods, no orphaned scheduler-created claim, the pods that should run are Running."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.fake_driver import GpuFleet, GpuPoolSpec, MakeGpuFleet
from harness.clusters.host.processes import ManagedProcess, log_tail
from harness.clusters.local.cluster import LocalCluster
from harness.core.versions import REPO_ROOT
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated, allocated_devices, allocations, claims_of
from harness.kit.kube import Kube, Obj
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for
from suites.faults.helpers import assert_full, settled

pytestmark = [pytest.mark.serial, pytest.mark.feature_gate("DRAExtendedResource"), pytest.mark.bridged]

# PodGC deletes pods bound to a deleted node after its quarantine (40s), checked every 20s.
POD_GC = TIMEOUTS.deletion + 40.0


def _slices(kube: Kube, node: str) -> list[Obj]:
    return [s for s in kube.list(*kinds.RESOURCE_SLICE) if s["spec"].get("nodeName") == node]


def _shape(slices: list[Obj]) -> list[tuple[str, int, list[str]]]:
    """(slice name, pool generation, device names) per slice."""
    return sorted(
        (s["metadata"]["name"], s["spec"]["pool"]["generation"], [d["name"] for d in s["spec"]["devices"]])
        for s in slices
    )


class DriverProcess:
    """`python -m fake_driver publish --watch` as its own process, like a kubelet plugin."""

    def __init__(self, fleet_file: Path, kubeconfig: Path, minor: str, log: Path):
        self.argv = [
            sys.executable,
            "-m",
            "fake_driver",
            "publish",
            f"--fleet={fleet_file}",
            f"--kubeconfig={kubeconfig}",
            f"--minor={minor}",
            "--watch",
            "--interval=0.5",
        ]
        self.log = log
        self.proc: ManagedProcess | None = None
        self._offset = 0  # where this run's output starts in the (appended) log

    def start(self) -> None:
        self._offset = self.log.stat().st_size if self.log.exists() else 0
        self.proc = ManagedProcess(
            "fake-driver", self.argv, self.log, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        )
        self.proc.start()

    def wait_reported(self, line: str) -> None:
        """Wait until this run's output has `line` (its first publish_all report)."""
        proc = self.proc
        assert proc is not None

        def observe() -> str:
            proc.check_running()
            return self.log.read_bytes()[self._offset :].decode() if self.log.exists() else ""

        wait_for(
            observe,
            lambda text: line in text.splitlines(),
            timeout=TIMEOUTS.api_object,
            describe=f"fake driver reporting {line!r}",
        )

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, the slices stay as they were."""
        proc = self.proc
        assert proc is not None
        os.killpg(proc.pid, signal.SIGKILL)
        wait_for(
            proc.running,
            lambda running: not running,
            timeout=TIMEOUTS.deletion,
            describe="fake driver process gone after SIGKILL",
        )
        proc.stop()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()


@pytest.fixture
def driver_process(
    kube: Kube, local_cluster: LocalCluster, tmp_path: Path, gpu_fleet: MakeGpuFleet, driver: DriverUnderTest
) -> Iterator[tuple[GpuFleet, DriverProcess]]:
    fleet = gpu_fleet(
        GpuPoolSpec(gpus=4, suffix="p", personality=driver.personality or "nvidia-v25.12"),
        classes=False,
        publish=False,
    )
    spec = {
        "pools": [
            {
                "name": "p",
                "nodes": fleet.node_names,
                "profile": "h100-80gb-hbm3",
                "gpus": 4,
                "personality": driver.personality or "nvidia-v25.12",
            }
        ]
    }
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(yaml.safe_dump(spec))
    proc = DriverProcess(
        fleet_file, local_cluster.kubeconfig, local_cluster.minor.name, tmp_path / "driver.log"
    )
    yield fleet, proc
    proc.stop()  # teardown: runs whether the test passed or failed
    if proc.log.exists():
        print(f"fake driver log:\n{log_tail(proc.log)}")


def test_fake_driver_killed_and_restarted(
    kube: Kube, namespace: str, driver: DriverUnderTest, driver_process: tuple[GpuFleet, DriverProcess]
) -> None:
    fleet, proc = driver_process
    [node] = fleet.node_names
    gpu = driver.extended_resource
    proc.start()
    proc.wait_reported(f"{node}\tcreated\tgeneration=1\tslices=1")
    published = _slices(kube, node)
    assert _shape(published) == [(published[0]["metadata"]["name"], 1, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"])]
    kube.create(b.legacy_pod("before", namespace, gpu, 1, node_selector=fleet.node_selector))
    wait_phase(kube, namespace, "before", "Running")

    # Killed: the slices survive untouched, and the scheduler keeps allocating from them.
    proc.kill()
    assert [(s["metadata"]["uid"], s["metadata"]["resourceVersion"]) for s in _slices(kube, node)] == [
        (published[0]["metadata"]["uid"], published[0]["metadata"]["resourceVersion"])
    ]
    kube.create(b.legacy_pod("while-dead", namespace, gpu, 1, node_selector=fleet.node_selector))
    wait_phase(kube, namespace, "while-dead", "Running")

    # Restarted: it finds its slices and leaves them alone (no duplicate, no new generation).
    proc.start()
    proc.wait_reported(f"{node}\tunchanged\tgeneration=1\tslices=1")
    assert [(s["metadata"]["uid"], s["metadata"]["resourceVersion"]) for s in _slices(kube, node)] == [
        (published[0]["metadata"]["uid"], published[0]["metadata"]["resourceVersion"])
    ]

    # Killed again, and its slices wiped while it is down (as the kubelet does when a
    # plugin stays unregistered): the restart republishes the same devices, once.
    proc.kill()
    for s in _slices(kube, node):
        kube.delete(*kinds.RESOURCE_SLICE, s["metadata"]["name"])
    wait_for(
        lambda: _slices(kube, node),
        lambda slices: slices == [],
        timeout=TIMEOUTS.deletion,
        describe=f"slices of {node} wiped",
    )
    proc.start()
    proc.wait_reported(f"{node}\tcreated\tgeneration=1\tslices=1")
    [republished] = _slices(kube, node)
    assert _shape([republished])[0][2] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert republished["metadata"]["uid"] != published[0]["metadata"]["uid"]
    kube.create(b.legacy_pod("after", namespace, gpu, 2, node_selector=fleet.node_selector))
    wait_phase(kube, namespace, "after", "Running")

    settled(kube, namespace, ["before", "while-dead", "after"], "the fake driver was killed and restarted")
    devices = allocated(kube, namespace)
    assert len(devices) == 4
    assert {d for _, _, d in devices} == {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}
    assert_full(kube, namespace, gpu, fleet.node_selector, 1)


def test_node_deleted_under_running_pods(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, local_cluster: LocalCluster
) -> None:
    gpu = driver.extended_resource
    pool = gpu_pool(nodes=2, gpus=2)
    keep, doomed = pool.nodes
    kube.create(b.claim_template("one-gpu", namespace, [b.exact_request("gpu", driver.device_class)]))
    placements = {"kept": keep, "lost-legacy": doomed, "lost-claim": doomed}
    for name, node in placements.items():
        selector = {"kubernetes.io/hostname": node}
        if name == "lost-claim":
            kube.create(b.template_pod(name, namespace, "one-gpu", node_selector=selector))
        else:
            kube.create(
                b.legacy_pod(name, namespace, gpu, 2 if name == "kept" else 1, node_selector=selector)
            )
    for name in placements:
        wait_phase(kube, namespace, name, "Running")
    kept_claims = {k: v for k, v in allocations(kube, namespace).items() if k.startswith("kept-")}
    assert len(kept_claims) == 1

    kube.delete(*kinds.NODE, doomed)

    wait_for(
        lambda: _slices(kube, doomed),
        lambda slices: slices == [],
        timeout=TIMEOUTS.deletion,
        describe=f"ResourceSlices of deleted node {doomed} garbage-collected",
    )
    wait_for(
        lambda: sorted(p["metadata"]["name"] for p in kube.list(*kinds.POD, namespace)),
        lambda names: names == ["kept"],
        timeout=POD_GC,
        describe=f"pods of deleted node {doomed} removed by the pod garbage collector",
    )
    wait_for(
        lambda: {
            c["metadata"]["name"]: [r["pool"] for r in allocated_devices(c)]
            for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)
        },
        lambda claims: list(claims) == list(kept_claims),
        timeout=TIMEOUTS.deletion,
        describe=f"claims of the pods on {doomed} deallocated and deleted",
    )
    settled(kube, namespace, ["kept"], f"node {doomed} was deleted")
    assert allocations(kube, namespace) == kept_claims
    [claim] = claims_of(kube, namespace, "kept")
    assert {r["pool"] for r in allocated_devices(claim)} == {keep}
    assert all(pool_name != doomed for _, pool_name, _ in allocated(kube, namespace))
    assert_full(kube, namespace, gpu, pool.node_selector, 1)
