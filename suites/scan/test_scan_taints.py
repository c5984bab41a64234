"""`dra-harness scan` reads device taints: those the driver publishes on unhealthy GPUs and the
DeviceTaintRules an admin wrote (harness.scan.taints), as the scan's read-only ServiceAccount;
and lists the tainted devices by pool in its text, JSON and Markdown, from slices shaped as
NVIDIA's v0.5.0 plugin publishes them (the nvidia-v0.5 personality, compared with it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fake_driver.fleetspec.faultstate import HealthEvent, NodeFaults
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.publishing import faults
from fake_driver.rendering.slices import render_node
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from fixtures.requirements import skip, version_unmet
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


def _planted_pools(namespace: str, objects: Created, cell: Cell) -> list[str]:
    """Three nodes' pools of 4 H100s as v0.5.0 publishes them (no Node objects: nothing is
    scheduled there): a fatal Xid 79 on gpu-1 of the first, a lost GPU on the second (the
    plugin taints every device of the node), a non-fatal Xid 13 on gpu-0 of the third."""
    fleet = fleet_from_dict(
        {"pools": [{"name": f"{namespace}-h100", "count": 3, "profile": "h100-80gb-hbm3", "gpus": 4}]},
    )
    sick = [
        NodeFaults(events=(HealthEvent("gpu-1", "xid", 79),)),
        NodeFaults(events=(HealthEvent("gpu-0", "gpu-lost"),)),
        NodeFaults(events=(HealthEvent("gpu-0", "xid", 13),)),
    ]
    for node, f in zip(fleet.nodes, sick, strict=True):
        for s in render_node(node, cell.number, faults=f).slices:
            objects.create(s)
    return [n.name for n in fleet.nodes]


@pytest.mark.feature_gate("DRADeviceTaints")
@pytest.mark.feature_gate("DRADeviceTaintRules")
def test_the_scan_lists_tainted_devices_by_pool_with_their_source(
    kube: Kube,
    namespace: str,
    objects: Created,
    cell: Cell,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    if reason := version_unmet(cell, "1.35"):  # the non-fatal Xid's effect None
        skip(reason)
    xid, lost, ok = _planted_pools(namespace, objects, cell)
    rule = f"{namespace}-xid"
    api = device_taint_rule_api(cell.number)
    # On the device the driver tainted already: one device, two taints.
    objects.create(
        b.device_taint_rule(
            rule, api, driver=NV, pool=xid, device="gpu-1", key=f"{NV}/xid", effect="NoExecute"
        )
    )
    kubeconfig = service_account_kubeconfig(read=True)
    other_tests_gone(kube, namespace)

    _, output, report = run_scan(kubeconfig, tmp_path / "scan.json", f"--markdown={tmp_path / 'scan.md'}")

    ours = {p["pool"]: p for p in report["tainted_devices"] if p["pool"] in (xid, lost, ok)}  # type: ignore[attr-defined]
    counts = {pool: (p["node"], p["devices"], p["tainted"], p["kept_off"]) for pool, p in ours.items()}
    assert counts == {xid: (xid, 4, 1, 1), lost: (lost, 4, 4, 4), ok: (ok, 4, 1, 0)}, output
    [gpu1] = ours[xid]["tainted_devices"]
    assert [(t["key"], t["value"], t["effect"], t["from"], t["label"]) for t in gpu1["taints"]] == [
        (f"{NV}/xid", "79", "NoSchedule", "ResourceSlice", "NVIDIA device health: Xid 79 (fatal)"),
        (f"{NV}/xid", None, "NoExecute", "DeviceTaintRule", None),
    ]
    assert gpu1["taints"][1]["name"] == rule
    # The API server stamps timeAdded on both (k8s.io/api resource/v1 types.go DeviceTaint @
    # v0.37.2, v1alpha3 @ v0.34.4; pkg/registry/resource/devicetaintrule/strategy.go @ v1.37.2).
    published, ruled = gpu1["taints"]
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    assert [bool(re.fullmatch(stamp, t["time_added"] or "")) for t in (published, ruled)] == [True, True]
    [[device, taint]] = [(d["device"], t) for d in ours[ok]["tainted_devices"] for t in d["taints"]]
    assert (device, taint["effect"], taint["meaning"]) == (
        "gpu-0",
        "None",
        "informational: scheduling is unaffected",
    )
    found = {(f["check"], f["subject"]): f["severity"] for f in report["findings"]}  # type: ignore[attr-defined]
    assert found[("tainted-pool", f"pool/{NV}/{lost}")] == "WARNING", output
    assert ("tainted-pool", f"pool/{NV}/{xid}") not in found
    assert (
        f"tainted devices in {NV} pool {lost} (node {lost}): 4 of 4 devices tainted, 4 kept off new claims"
        in output
    )
    md = (tmp_path / "scan.md").read_text().splitlines()
    head = f"| {NV}/{xid} | {xid} | 1 of 4 devices tainted, 1 kept off new claims | gpu-1 |"
    assert [line for line in md if line.startswith(head)] == [
        f"{head} {NV}/xid=79:NoSchedule [NVIDIA device health: Xid 79 (fatal)] | the driver's "
        f"ResourceSlice {published['name']} | {published['time_added']} | new claims do not get it "
        "unless they tolerate the taint |",
        f"{head} {NV}/xid:NoExecute | DeviceTaintRule {rule} | {ruled['time_added']} | pods using "
        "it are evicted; new claims do not get it unless they tolerate the taint |",
    ]
    assert sum(line.startswith(f"| {NV}/{lost} |") for line in md) == 4
