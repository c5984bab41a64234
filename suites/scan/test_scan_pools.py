"""`dra-harness scan` finds the pools of a real cluster from its providers' node labels (GKE
and EKS here, on kwok nodes labelled as theirs are), names the nodes that carry no pool label,
says on which pools bridging is available, and lists every check (text, JSON and JUnit)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.nodes import MakePool
from fixtures.scan import MakeKubeconfig, other_tests_gone, run_scan
from harness.clusters.base import Cell
from harness.clusters.nodes import POOL_LABEL
from harness.core.expectations import bridge_reaches_nodes_a_device_plugin_left
from harness.kit import kinds
from harness.kit.kube import Kube

pytestmark = [pytest.mark.serial]  # the scan reads the whole cluster

GKE, EKS = "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup"


@pytest.mark.feature_gate("DRAExtendedResource")
@pytest.mark.bridged
@pytest.mark.fake_driver_only("cluster to itself (node labels of cloud providers)")
def test_pools_are_read_from_gke_and_eks_labels_and_every_check_is_listed(
    kube: Kube,
    cell: Cell,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    node_pool: MakePool,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    [gpu_node] = gpu_pool(nodes=1, gpus=2).nodes
    # As GKE's DRA set-up labels a pool a DRA driver serves (without it: cloud-device-plugin WARN).
    labels = {GKE: f"{namespace}-h100", "gke-no-default-nvidia-gpu-device-plugin": "true"}
    kube.patch(*kinds.NODE, gpu_node, {"metadata": {"labels": labels}})
    node_pool(1, suffix="eks", labels={EKS: f"{namespace}-ng"})
    [bare] = node_pool(1, suffix="bare").node_names()
    kube.patch(*kinds.NODE, bare, {"metadata": {"labels": {POOL_LABEL: None}}})
    kubeconfig = service_account_kubeconfig(read=True)
    other_tests_gone(kube, namespace)

    code, output, _ = run_scan(kubeconfig, tmp_path / "scan.json", f"--junit={tmp_path / 'scan.xml'}")

    lines = output.splitlines()
    assert code == 0, output
    assert lines[1:5] == [
        f"pools (detected): by {GKE}, {EKS}",
        f"  (no pool label): 1 node(s): {bare}",
        f"  {namespace}-h100: 1 node(s): {gpu_node}",
        f"  {namespace}-ng: 1 node(s): {namespace}-eks-0",
    ]
    assert lines[5] == (
        f"bridging: {driver.extended_resource} -> DeviceClass {driver.device_class} on pools {namespace}-h100"
    )
    report = json.loads((tmp_path / "scan.json").read_text())
    assert report["pools"]["pools"] == [
        {"name": "(no pool label)", "label": "", "nodes": [bare]},
        {"name": f"{namespace}-h100", "label": GKE, "nodes": [gpu_node]},
        {"name": f"{namespace}-ng", "label": EKS, "nodes": [f"{namespace}-eks-0"]},
    ]
    statuses = {c["check"]: c["status"] for c in report["checks"]}
    assert statuses["bridge-support"] == statuses["ambiguous-mapping"] == statuses["double-stack"] == "PASS"
    # 1.34 keeps bridged pods off nodes a device plugin left, so the check applies there.
    leftover = "NOT APPLICABLE" if bridge_reaches_nodes_a_device_plugin_left(cell.number) else "PASS"
    assert (statuses["device-plugin-leftover"], statuses["api-removal"]) == (leftover, "NOT APPLICABLE")
    assert (
        f"PASS           {'ambiguous-mapping':<26} 1 DeviceClass(es) set extendedResourceName, "
        "each to a name no other class maps"
    ) in lines
    suite = ET.parse(tmp_path / "scan.xml").getroot()
    cases = [c.get("name") for c in suite.iter("testcase")]
    assert cases == [c["check"] for c in report["checks"]]
    assert (suite.get("tests"), suite.get("failures")) == (str(len(cases)), "0")
