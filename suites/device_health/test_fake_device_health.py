"""Sick GPUs on the fake driver's nvidia-v0.5 and nvidia-v0.4 personalities, on kwok nodes of
the session cluster (fixtures/fakehealth.py): the bodies of test_nvidia_device_health.py
(suites/device_health/checks.py) with faults made by the fake driver's fault API, so the
personality's taints meet the real scheduler and the real taint eviction controller. kwok
nodes have no kubelet: eviction here is kube-controller-manager's device-taint-eviction
controller deleting the pod (pkg/controller/devicetainteviction @ v1.36.3, v1.37.2,
v1.38.0-beta.0), which a real node's kubelet would then stop.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fake_driver.core.errors import FakeDriverError
from fake_driver.publishing import faults
from fixtures.devicehealth import Taint
from fixtures.fakehealth import FAKE_GPUS, FakeHealth
from harness.clusters.base import Cluster
from harness.core.versions import REPO_ROOT
from suites.device_health import checks
from suites.device_health.checks import FATAL, NON_FATAL, taint

# Effect None (non-fatal Xid, unmonitored) needs 1.35 (fake_driver.api.apilimits).
pytestmark = [pytest.mark.min_version("1.35"), pytest.mark.feature_gate("DRADeviceTaints")]

CLEAN: dict[str, list[Taint]] = {f"gpu-{i}": [] for i in range(4)}


def test_an_xid_taints_exactly_the_sick_device(fake_health: FakeHealth) -> None:
    checks.xid_taints_exactly_the_sick_device(fake_health)


def test_two_devices_sick_with_different_events_at_once(fake_health: FakeHealth) -> None:
    checks.two_devices_sick_with_different_events_at_once(fake_health)


def test_a_lost_gpu_taints_every_device_beside_their_own_xids(fake_health: FakeHealth) -> None:
    h = fake_health
    h.inject("xid", "gpu-0", FATAL)
    h.inject("xid", "gpu-1", NON_FATAL)
    checks.a_lost_gpu_taints_every_device_of_the_node(h)
    lost = taint("gpu-lost")
    want = CLEAN | {d: [lost] for d in CLEAN}
    want |= {"gpu-0": sorted([taint("xid", FATAL), lost]), "gpu-1": sorted([taint("xid", NON_FATAL), lost])}
    assert h.taints() == want


def test_an_unmonitored_gpu_and_an_xid_on_another_at_once(fake_health: FakeHealth) -> None:
    h = fake_health
    h.inject("unmonitored", "gpu-2")
    h.inject("xid", "gpu-0", FATAL)
    want = CLEAN | {"gpu-0": [taint("xid", FATAL)], "gpu-2": [taint("unmonitored")]}
    assert h.wait_taints(want, "unmonitored on gpu-2, Xid 79 on gpu-0") == want


def test_taints_stay_after_the_device_recovers_until_the_plugin_restarts(fake_health: FakeHealth) -> None:
    checks.taints_stay_after_the_device_recovers_until_the_plugin_restarts(fake_health)


def test_a_fault_for_a_device_that_does_not_exist_names_the_nodes_devices(fake_health: FakeHealth) -> None:
    h = fake_health
    with pytest.raises(FakeDriverError) as err:
        faults.mark_unhealthy(h.fleet.publisher, h.node, ["gpu-9"])
    assert str(err.value) == f"node {h.node} has no device gpu-9 (its devices: gpu-0, gpu-1, gpu-2, gpu-3)"
    assert h.taints() == CLEAN


def test_a_no_schedule_taint_keeps_new_claims_off_and_a_toleration_gets_the_device(
    fake_health: FakeHealth, namespace: str
) -> None:
    checks.no_schedule_keeps_new_claims_off_and_a_toleration_gets_the_device(fake_health, namespace)


@pytest.mark.serial  # the personality's real gpu.nvidia.com class, which maps nvidia.com/gpu
@pytest.mark.feature_gate("DRADeviceTaintRules")
@pytest.mark.feature_gate("DRAExtendedResource")
def test_a_no_execute_rule_over_the_xid_key_evicts_a_claim_pod_and_a_bridged_pod_per_minor(
    fake_health: FakeHealth, namespace: str
) -> None:
    checks.no_execute_rule_evicts_a_claim_pod_and_a_bridged_pod_per_minor(fake_health, namespace)


def test_the_fault_command_line_adds_one_device_at_a_time_and_restart_clears(
    fake_health: FakeHealth, cluster: Cluster, tmp_path: Path
) -> None:
    """The command an external check (qualify's device-health) runs: a second call adds to
    the running node's state; a device the node lacks is one line and exit 2 (bad input)."""
    h = fake_health
    fleet = tmp_path / "fleet.yaml"
    pool = {"name": "h", "nodes": [h.node], "profile": "h100-80gb-hbm3", "gpus": FAKE_GPUS}
    fleet.write_text(yaml.safe_dump({"pools": [pool | {"personality": h.personality}]}))
    common = ["--fleet", str(fleet), "--kubeconfig", str(cluster.kubeconfig), "--nodes", h.node]
    for args in (
        ["--devices", "gpu-0", "--event", "xid", "--xid", "79"],
        ["--devices", "gpu-1", "--xid", "13"],
    ):
        done = _fake_driver("fault", "unhealthy", *common, *args)
        assert (done.returncode, done.stderr) == (0, "")
    want = CLEAN | {"gpu-0": [taint("xid", FATAL)], "gpu-1": [taint("xid", NON_FATAL)]}
    assert h.wait_taints(want, "Xid 79 on gpu-0 and Xid 13 on gpu-1 from two commands") == want

    bad = _fake_driver("fault", "unhealthy", *common, "--devices", "gpu-9")
    line = f"node {h.node} has no device gpu-9 (its devices: gpu-0, gpu-1, gpu-2, gpu-3)"
    assert (bad.returncode, bad.stderr, bad.stdout) == (2, f"fake_driver: error: {line}\n", "")

    done = _fake_driver("fault", "restart", *common)
    assert (done.returncode, done.stderr) == (0, "")
    assert h.wait_taints(CLEAN, "no taint after fault restart") == CLEAN


def _fake_driver(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fake_driver", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
