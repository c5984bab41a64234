"""A node moved from the device plugin to DRA keeps `nvidia.com/gpu: 0` in its status (the
kubelet never deletes a removed plugin's resource). Bridged pods reach it from 1.35; on 1.34
they wait there as "Insufficient" until the resource is taken out of the node's status
(harness.core.expectations.bridge_reaches_nodes_a_device_plugin_left)."""

from __future__ import annotations

import pytest

from fake_driver.publishing import legacy
from fixtures.driver import DriverUnderTest
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness import rollout
from harness.clusters.base import Cell
from harness.core.expectations import bridge_reaches_nodes_a_device_plugin_left
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import claims_of
from harness.kit.kube import Kube
from harness.kit.pods import scheduling_message, unschedulable_reasons, wait_phase, wait_unschedulable
from harness.scan.cluster import leftover_device_plugin_resource
from harness.scan.read import read_state

pytestmark = [pytest.mark.feature_gate("DRAExtendedResource"), pytest.mark.bridged]


def test_a_node_the_device_plugin_left_takes_bridged_pods_from_1_35(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_fleet: MakeGpuFleet, cell: Cell
) -> None:
    gpu = driver.extended_resource
    fleet = gpu_fleet(
        GpuPoolSpec(gpus=2, nodes=1, device_plugin=True, personality=driver.personality or "nvidia-v25.12"),
        classes=False,
        publish=False,
    )
    [[node]] = fleet.pool_nodes
    legacy.withdraw(kube.api_client, [node])  # the plugin is gone: 0, as the kubelet reports it
    fleet.publisher.publish_node(node)
    rollout.ensure_device_class(kube, rollout.gpu_device_class(driver.device_class, driver.driver, gpu))
    assert kube.get(*kinds.NODE, node)["status"]["allocatable"][gpu] == "0"
    kube.create(b.legacy_pod("bridged", namespace, gpu, 2, node_selector=fleet.node_selector))

    findings = leftover_device_plugin_resource(read_state(kube), gpu)
    leftover = [f.check for f in findings if f.subject == f"node/{node}"]
    if not bridge_reaches_nodes_a_device_plugin_left(cell.number):
        assert leftover == ["device-plugin-leftover"]  # the scan names the node beforehand
        pod = wait_unschedulable(kube, namespace, "bridged")
        assert unschedulable_reasons(scheduling_message(pod)).get(f"Insufficient {gpu}") == 1
        assert claims_of(kube, namespace, "bridged") == []
        legacy.withdraw(kube.api_client, [node], remove=True)  # the remediation on 1.34
    else:
        assert leftover == []
    pod = wait_phase(kube, namespace, "bridged", "Running")

    assert pod["spec"]["nodeName"] == node
    [claim] = claims_of(kube, namespace, "bridged")
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] != []
    assert pod["status"]["extendedResourceClaimStatus"]["requestMappings"][0]["resourceName"] == gpu
