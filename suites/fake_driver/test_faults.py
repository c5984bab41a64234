"""Fault injection through the Node annotation, seen in the slices the API server stores."""

from __future__ import annotations

import pytest

from fake_driver.api import apilimits
from fake_driver.fleetspec.faultstate import FAULTS_ANNOTATION
from fake_driver.publishing import faults
from fixtures.fake_driver import GpuFleet, GpuPoolSpec, MakeGpuFleet
from harness.clusters.base import Cell
from harness.kit import kinds
from harness.kit.drastate import device_names, node_slices, pools
from harness.kit.kube import Kube

pytestmark = [pytest.mark.fake_driver_only("own slices, faults and installer")]


def _fleet(gpu_fleet: MakeGpuFleet) -> GpuFleet:
    return gpu_fleet(GpuPoolSpec(gpus=2, personality="nvidia-v0.4", nodes=2, suffix="p"), classes=False)


def test_a_dropped_attribute_leaves_that_nodes_devices_without_it_in_a_new_generation(
    kube: Kube, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = _fleet(gpu_fleet)
    n1, n2 = fleet.node_names
    faults.drop_attribute(fleet.publisher, [n2], "productName")
    [s2] = node_slices(kube, n2)
    assert s2["spec"]["pool"]["generation"] == 2
    assert [sorted(d["attributes"]).count("productName") for d in s2["spec"]["devices"]] == [0, 0]
    [s1] = node_slices(kube, n1)
    assert [("productName" in d["attributes"]) for d in s1["spec"]["devices"]] == [True, True]


@pytest.mark.feature_gate("DRADeviceTaints")  # the v0.4 health taint is dropped without it
def test_an_unhealthy_device_carries_the_v0_4_xid_taint_and_its_neighbour_none(
    kube: Kube, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = _fleet(gpu_fleet)
    n1 = fleet.node_names[0]
    faults.mark_unhealthy(fleet.publisher, n1, ["gpu-0"])
    [s1] = node_slices(kube, n1)
    [tainted, healthy] = s1["spec"]["devices"]
    [taint] = tainted["taints"]
    assert "taints" not in healthy
    assert taint.pop("timeAdded")  # set by the API server
    assert taint == {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}


def test_a_crashed_plugins_slices_stay_as_they_were_and_a_wipe_removes_them(
    kube: Kube, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = _fleet(gpu_fleet)
    n1, pub = fleet.node_names[0], fleet.publisher
    [before] = node_slices(kube, n1)
    faults.crash(pub, [n1])
    assert [r.action for r in pub.sync().results] == ["crashed", "unchanged"]
    assert [s["metadata"]["resourceVersion"] for s in node_slices(kube, n1)] == [
        before["metadata"]["resourceVersion"]
    ]
    faults.crash(pub, [n1], wipe=True)
    assert node_slices(kube, n1) == []


@pytest.mark.feature_gate("DRADeviceTaints")
def test_recover_clears_every_fault_and_republishes_what_was_wiped(
    kube: Kube, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = _fleet(gpu_fleet)
    n1, n2 = fleet.node_names
    pub = fleet.publisher
    faults.drop_attribute(pub, [n2], "productName")
    faults.mark_unhealthy(pub, n1, ["gpu-0"])
    faults.crash(pub, [n1], wipe=True)

    faults.recover(pub, [n1, n2])

    annotated = [FAULTS_ANNOTATION in kube.get(*kinds.NODE, n)["metadata"]["annotations"] for n in (n1, n2)]
    assert annotated == [False, False]
    [s1] = node_slices(kube, n1)
    assert all("taints" not in d and "productName" in d["attributes"] for d in s1["spec"]["devices"])
    assert pools(node_slices(kube, n2)) == [{"name": n2, "generation": 3, "resourceSliceCount": 1}]


@pytest.mark.min_version("1.35")  # DeviceTaintEffectNone is served from 1.35
@pytest.mark.feature_gate("DRADeviceTaints")
@pytest.mark.parametrize(
    ("event", "xid", "taint"),
    [
        ("", 13, {"key": "gpu.nvidia.com/xid", "value": "13", "effect": "None"}),
        ("gpu-lost", 79, {"key": "gpu.nvidia.com/gpu-lost", "effect": "NoSchedule"}),
        ("unmonitored", 79, {"key": "gpu.nvidia.com/unmonitored", "effect": "None"}),
    ],
    ids=["xid-13-non-fatal", "gpu-lost", "unmonitored"],
)
def test_v0_4_health_event_stored_as_its_taint(
    kube: Kube, gpu_fleet: MakeGpuFleet, event: str, xid: int, taint: dict[str, str]
) -> None:
    # NV cmd/gpu-kubelet-plugin/device_health.go healthEventToTaint @ v0.4.1.
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, personality="nvidia-v0.4", suffix="p"), classes=False)
    [node] = fleet.node_names

    faults.mark_unhealthy(fleet.publisher, node, ["gpu-0"], event=event, xid=xid)

    [s] = node_slices(kube, node)
    [stored] = s["spec"]["devices"][0]["taints"]
    assert stored.pop("timeAdded")  # set by the API server
    assert stored == taint


@pytest.mark.min_version("1.35")
@pytest.mark.feature_gate("DRADeviceTaints")
def test_v0_4_lost_gpu_taints_every_device_of_the_node(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    # As the real plugin does (suites/device_health): device_health.go sendHealthEventForAllDevices.
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, personality="nvidia-v0.4", suffix="p"), classes=False)
    [node] = fleet.node_names

    faults.mark_unhealthy(fleet.publisher, node, ["gpu-1"], event="gpu-lost")

    [s] = node_slices(kube, node)
    taints = {d["name"]: [(t["key"], t["effect"]) for t in d.get("taints", [])] for d in s["spec"]["devices"]}
    assert taints == {n: [("gpu.nvidia.com/gpu-lost", "NoSchedule")] for n in ("gpu-0", "gpu-1")}


def test_unhealthy_device_removed_when_mode_overridden(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, personality="nvidia-v25.8", suffix="p"), classes=False)
    [node] = fleet.node_names

    faults.mark_unhealthy(fleet.publisher, node, ["gpu-1"], mode="remove")

    assert device_names(node_slices(kube, node)) == ["gpu-0"]


@pytest.mark.feature_gate("DRAPartitionableDevices")  # a multi-slice pool needs DynamicMIG here
def test_stale_generation_leaves_one_slice_behind(kube: Kube, gpu_fleet: MakeGpuFleet, cell: Cell) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, mig="dynamic", suffix="p"), classes=False)
    [node] = fleet.node_names

    faults.stale_generation(fleet.publisher, [node])

    # Split layout from 1.35 (counters slice + one per GPU), one slice per GPU before.
    split = cell.number >= apilimits.SPLIT_COUNTERS_SINCE
    assert [p["generation"] for p in pools(node_slices(kube, node))] == ([1, 2, 2] if split else [1, 2])
