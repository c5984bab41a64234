"""Device-plugin time-slicing lost in the move (issue 37 item 1): with `replicas: 4` the plugin
advertises 4 x GPUs of nvidia.com/gpu, so a Deployment runs 4 pods per GPU. Under DRA a bridged
pod gets whole devices (time-slicing and MPS are set per claim), so after the migration the same
Deployment leaves 3 of every 4 pods Pending ("cannot allocate all claims"). The scan counts it
per node beforehand and the rollout warns before it drains (LLMKube#1378, jfroy/flatops#2620,
dra-driver-nvidia-gpu#1231). From 1.35: on 1.34 bridged pods never reach a node the device
plugin left (harness.core.expectations.bridge_reaches_nodes_a_device_plugin_left)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.driver import DriverUnderTest
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from fixtures.scan import MakeKubeconfig, other_tests_gone, run_scan
from harness import rollout
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.migration import detect_time_slicing
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube, Obj
from harness.kit.pods import condition, own_reasons, phase, scheduling_message
from harness.kit.waits import TIMEOUTS, wait_for

# Serial: the scan reads the whole cluster.
pytestmark = [
    pytest.mark.serial,
    pytest.mark.feature_gate("DRAExtendedResource"),
    pytest.mark.min_version("1.35"),
    pytest.mark.bridged,
]

GPUS, REPLICAS = 2, 4


def _deployment(namespace: str, resource: str, node_selector: dict[str, str]) -> Obj:
    labels = {"app": "shared-gpu"}
    spec = {
        "nodeSelector": node_selector,
        "terminationGracePeriodSeconds": 0,
        "containers": [b.container(limits={resource: "1"})],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "inference", "namespace": namespace},
        "spec": {
            "replicas": GPUS * REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def _states(kube: Kube, namespace: str) -> dict[str, int]:
    """Live pods by phase, Pending ones by what the scheduler said about their own node."""
    out: dict[str, int] = {}
    for p in kube.list(*kinds.POD, namespace):
        if p["metadata"].get("deletionTimestamp"):
            continue
        key = phase(p)
        if key == "Pending" and condition(p, "PodScheduled"):
            key = f"Pending: {', '.join(own_reasons(scheduling_message(p))) or '-'}"
        out[key] = out.get(key, 0) + 1
    return out


def test_a_time_sliced_pool_runs_4x_pods_and_after_the_move_the_deployment_leaves_pods_pending(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_fleet: MakeGpuFleet,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    gpu = driver.extended_resource
    fleet = gpu_fleet(
        GpuPoolSpec(
            gpus=GPUS,
            device_plugin=True,
            time_slicing_replicas=REPLICAS,
            personality=driver.personality or "nvidia-v25.12",
            suffix="ts",
        ),
        classes=False,
        publish=False,
    )
    [[node]] = fleet.pool_nodes
    kube.create(_deployment(namespace, gpu, fleet.node_selector))
    wait_for(
        lambda: _states(kube, namespace),
        lambda seen: seen == {"Running": GPUS * REPLICAS},
        timeout=TIMEOUTS.pod_running,
        describe=f"{GPUS * REPLICAS} pods Running on {GPUS} time-sliced GPUs",
    )
    assert [claims_of(kube, namespace, p["metadata"]["name"]) for p in kube.list(*kinds.POD, namespace)] == [
        []
    ] * (GPUS * REPLICAS)
    other_tests_gone(kube, namespace)

    code, output, _ = run_scan(service_account_kubeconfig(read=True), tmp_path / "scan.json")

    [finding] = detect_time_slicing([kube.get(*kinds.NODE, node)], kube.list(*kinds.POD, namespace), gpu)
    assert finding.message == (
        f"advertises {gpu}: 8 for 2 GPU(s) (device-plugin time-slicing, 4 replicas): 6 over-advertised; "
        "8 pod(s) use 8 here, 6 will not fit once DRA serves the node (a bridged pod gets whole devices)"
    )
    assert code == 3, output
    assert f"BLOCKING {'time-slicing':<26} node/{node}: {finding.message}" in output.splitlines()
    assert f"{'':<8} {'':<26} fix: {finding.remediation}" in output.splitlines()

    events: list[str] = []
    rollout.migrate_pool(
        kube,
        rollout.PoolToMove(fleet.fleet.pools[0].name, (node,), driver.driver, gpu),
        [rollout.SimulatedDevicePlugin(kube, fleet.fleet)],
        lambda nodes: [fleet.publisher.publish_node(n) for n in nodes],
        rollout.gpu_device_class(driver.device_class, driver.driver, gpu),
        on_step=events.append,
        on_warning=lambda text: events.append(f"warning: {text}"),
    )

    assert events[:4] == [
        f"warning: node/{node}: {finding.message}; fix: {finding.remediation}",
        "label",
        "cordon",
        "drain",
    ]
    wait_for(
        lambda: _states(kube, namespace),
        lambda seen: seen == {"Running": GPUS, "Pending: cannot allocate all claims": GPUS * (REPLICAS - 1)},
        timeout=TIMEOUTS.pod_scheduled,
        describe=f"the Deployment on DRA: {GPUS} Running, the rest Pending",
    )
    held = [
        (r["pool"], r["device"])
        for p in kube.list(*kinds.POD, namespace)
        for c in claims_of(kube, namespace, p["metadata"]["name"])
        for r in allocated_devices(c)
    ]
    assert len(held) == len(set(held)) == GPUS  # a whole GPU each, both on the node
    assert {pool for pool, _ in held} == {node}
