"""`dra-harness scan` reads device taints: those the driver publishes on unhealthy GPUs and the
DeviceTaintRules an admin wrote (harness.scan.taints), as the scan's read-only ServiceAccount."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_driver.publishing import faults
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from fixtures.scan import MakeKubeconfig, other_tests_gone, run_scan
from harness.clusters.base import Cell
from harness.core.expectations import device_taint_rule_api
from harness.kit import builders as b
from harness.kit.kube import Kube
from harness.kit.objects import Created

pytestmark = [pytest.mark.serial]  # the scan reads the whole cluster

NV = "gpu.nvidia.com"


@pytest.mark.feature_gate("DRADeviceTaints")
@pytest.mark.feature_gate("DRADeviceTaintRules")
def test_the_scan_reports_tainted_gpus_and_device_taint_rules(
    kube: Kube,
    namespace: str,
    gpu_fleet: MakeGpuFleet,
    objects: Created,
    cell: Cell,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, personality="nvidia-v0.4"))
    [node] = fleet.node_names
    faults.mark_unhealthy(fleet.publisher, node, ["gpu-0"])  # xid 79: gpu.nvidia.com/xid=79:NoSchedule
    rule = f"{namespace}-drain"
    key = "maintenance.dra-harness.io/drain"
    api = device_taint_rule_api(cell.number)
    objects.create(
        b.device_taint_rule(rule, api, driver=NV, pool=node, device="gpu-1", key=key, effect="NoExecute")
    )
    kubeconfig = service_account_kubeconfig(read=True)
    other_tests_gone(kube, namespace)

    _, output, report = run_scan(kubeconfig, tmp_path / "scan.json")

    found = {(f["check"], f["subject"]): (f["severity"], f["message"]) for f in report["findings"]}  # type: ignore[attr-defined]
    assert found[("device-taints", f"driver/{NV}")] == (
        "WARNING",
        f"1 device(s) carry taints: 1 x {NV}/xid=79:NoSchedule",
    ), output
    assert found[("device-taint-rule", f"devicetaintrule/{rule}")] == (
        "WARNING",
        f"taints 1 published device(s) with {key}:NoExecute",
    ), output
