"""Shared counters and consumable capacity together (KEP-4815 DRAPartitionableDevices +
KEP-5075 DRAConsumableCapacity): a GPU published whole (shareable, with consumable memory) and
as a half partition, both drawing on one counter set of 80Gi. Shares of the whole GPU charge
the counters once; what a partition of the same GPU meets then differs per minor
(harness/core/expectations.py shared_device_holds_counters).
Fields: k8s.io/api resource/v1 types.go Device.AllowMultipleAllocations, ConsumesCounters,
DeviceCapacity.RequestPolicy, DeviceRequestAllocationResult.ConsumedCapacity/ShareID @ v0.37.2."""

from __future__ import annotations

import pytest

from fake_driver.api import apilimits
from fixtures.nodes import MakePool
from harness.clusters.base import Cell
from harness.core.expectations import shared_device_holds_counters
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created
from harness.kit.pods import (
    assert_stays_pending,
    create_claim_pod,
    scheduling_message,
    unschedulable_reasons,
    wait_phase,
    wait_unschedulable,
)

DRIVER = "shared.dra-harness.io"
COUNTER_SET = "gpu-0-counters"

pytestmark = [
    pytest.mark.needs_devices("counters"),
    pytest.mark.feature_gate("DRAPartitionableDevices"),
    pytest.mark.feature_gate("DRAConsumableCapacity"),
]


def _consumes(memory: str) -> list[Obj]:
    return [{"counterSet": COUNTER_SET, "counters": {"memory": {"value": memory}}}]


def _gpu_slices(namespace: str, node: str, minor: tuple[int, int]) -> list[Obj]:
    """gpu-0 (whole, shareable: memory taken in steps of 10Gi) and gpu-0-half, on one counter
    set. From 1.35 counter sets live in a slice without devices (fake_driver/api/apilimits.py)."""
    counters = [{"name": COUNTER_SET, "counters": {"memory": {"value": "80Gi"}}}]
    policy = {"default": "80Gi", "validRange": {"min": "10Gi", "step": "10Gi", "max": "80Gi"}}
    whole = b.device("gpu-0", {"owner": namespace, "part": "whole"}) | {
        "allowMultipleAllocations": True,
        "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}},
        "consumesCounters": _consumes("80Gi"),
    }
    half = b.device("gpu-0-half", {"owner": namespace, "part": "half"}, {"memory": "40Gi"})
    half["consumesCounters"] = _consumes("40Gi")
    split = minor >= apilimits.SPLIT_COUNTERS_SINCE
    bodies: list[tuple[list[Obj] | None, list[Obj]]] = (
        [(counters, []), (None, [whole, half])] if split else [(counters, [whole, half])]
    )
    slices = []
    for k, (sets, devices) in enumerate(bodies):
        body = b.resource_slice(f"{node}-shared-{k}", driver=DRIVER, node_name=node, devices=devices)
        body["spec"]["pool"]["resourceSliceCount"] = len(bodies)
        if sets is not None:
            body["spec"]["sharedCounters"] = sets
        if not devices:
            del body["spec"]["devices"]  # a counters-only slice carries no devices (1.35+)
        slices.append(body)
    return slices


def _request(device_class: str, part: str, memory: str | None = None) -> Obj:
    selector = f'device.attributes["{DRIVER}"].part == "{part}"'
    capacity = {"memory": memory} if memory else None
    return b.exact_request("gpu", device_class, selectors=[selector], capacity=capacity)


def test_shares_of_a_gpu_and_its_partition_draw_on_one_counter_set(
    kube: Kube, namespace: str, cell: Cell, node_pool: MakePool, objects: Created
) -> None:
    pool = node_pool(1, suffix="g")
    [node] = pool.node_names()
    device_class = f"{namespace}-shared"
    objects.create(b.device_class(device_class, selectors=[f'device.driver == "{DRIVER}"']))
    for body in _gpu_slices(namespace, node, cell.number):
        objects.create(body)
    selector = {"kubernetes.io/hostname": node}
    results = {}
    for name in ("a", "b"):
        # 35Gi is not a step of the policy: the allocator rounds it up to min + n*step = 40Gi.
        create_claim_pod(kube, namespace, name, [_request(device_class, "whole", "35Gi")], selector)
        wait_phase(kube, namespace, name, "Running")
        [claim] = claims_of(kube, namespace, name)
        [results[name]] = allocated_devices(claim)
    create_claim_pod(kube, namespace, "c", [_request(device_class, "half")], selector)

    for r in results.values():
        assert {k: v for k, v in r.items() if k != "shareID"} == {
            "request": "gpu",
            "driver": DRIVER,
            "pool": node,
            "device": "gpu-0",
            "consumedCapacity": {"memory": "40Gi"},
        }
    assert results["a"]["shareID"] != results["b"]["shareID"]
    if not shared_device_holds_counters(cell.number):
        # 1.35: the shares' counters are forgotten once allocated, and the partition
        # over-commits the set (80Gi + 40Gi of 80Gi).
        wait_phase(kube, namespace, "c", "Running")
        assert _devices_of(kube, namespace, "c") == [("gpu-0-half", None)]
        return
    pending = wait_unschedulable(kube, namespace, "c")
    assert unschedulable_reasons(scheduling_message(pending)).get("cannot allocate all claims") == 1
    assert_stays_pending(kube, namespace, "c", "shares of gpu-0 hold all 80Gi of its counter set")

    kube.delete(*kinds.POD, "a", namespace)
    assert_stays_pending(kube, namespace, "c", "pod b's share still charges gpu-0's counters")
    kube.delete(*kinds.POD, "b", namespace)

    wait_phase(kube, namespace, "c", "Running")
    assert _devices_of(kube, namespace, "c") == [("gpu-0-half", None)]


def _devices_of(kube: Kube, namespace: str, pod: str) -> list[tuple[str, object]]:
    [claim] = claims_of(kube, namespace, pod)
    return [(r["device"], r.get("consumedCapacity")) for r in allocated_devices(claim)]
