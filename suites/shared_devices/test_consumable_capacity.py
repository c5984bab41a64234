"""Consumable capacity (KEP-5075): one device that allows multiple allocations is shared by
pods until its memory capacity is used up; each allocation gets its own shareID."""

from __future__ import annotations

import pytest

from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.pods import (
    assert_stays_pending,
    create_claim_pod,
    scheduling_message,
    unschedulable_reasons,
    wait_phase,
    wait_unschedulable,
)

pytestmark = [pytest.mark.needs_devices("shared"), pytest.mark.feature_gate("DRAConsumableCapacity")]

EXAMPLE = "gpu.example.com"


def test_two_pods_share_one_gpus_memory_and_a_third_waits(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, personality="example-v0.4", consumable_capacity=True))
    [node] = fleet.node_names
    # Both amounts are asked for: the driver's default for an amount not asked for is the
    # whole device (EX gpu.go memoryCapacity/computeCapacity @ v0.4.0).
    half = b.exact_request("gpu", fleet.device_class(EXAMPLE), capacity={"memory": "40Gi", "compute": "50"})
    results = {}
    for name in ("a", "b"):
        create_claim_pod(kube, namespace, name, [half], fleet.node_selector)
        wait_phase(kube, namespace, name, "Running")
        [claim] = claims_of(kube, namespace, name)
        [results[name]] = allocated_devices(claim)
    create_claim_pod(kube, namespace, "c", [half], fleet.node_selector)
    pending = wait_unschedulable(kube, namespace, "c")

    for r in results.values():
        assert _without_share_id(r) == _gpu_0_result(node, compute="50", memory="40Gi")
    assert results["a"]["shareID"] != results["b"]["shareID"]
    assert unschedulable_reasons(scheduling_message(pending)).get("cannot allocate all claims") == 1
    assert_stays_pending(kube, namespace, "c", "a and b hold all 80Gi of gpu-0")

    kube.delete(*kinds.POD, "a", namespace)

    wait_phase(kube, namespace, "c", "Running")
    [claim] = claims_of(kube, namespace, "c")
    [result] = allocated_devices(claim)
    assert (result["device"], result["consumedCapacity"]) == ("gpu-0", {"compute": "50", "memory": "40Gi"})
    assert result["shareID"] not in {results["a"]["shareID"], results["b"]["shareID"]}


def test_a_claim_that_asks_for_no_amount_takes_the_whole_gpu(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    # The request policy's default is the device's whole capacity (EX gpu.go @ v0.4.0), so a
    # shared GPU is shared only by claims that say how much they need.
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, personality="example-v0.4", consumable_capacity=True))
    [node] = fleet.node_names
    plain = b.exact_request("gpu", fleet.device_class(EXAMPLE))
    create_claim_pod(kube, namespace, "a", [plain], fleet.node_selector)
    wait_phase(kube, namespace, "a", "Running")
    create_claim_pod(kube, namespace, "b", [plain], fleet.node_selector)
    pending = wait_unschedulable(kube, namespace, "b")

    [claim] = claims_of(kube, namespace, "a")
    [result] = allocated_devices(claim)
    assert _without_share_id(result) == _gpu_0_result(node, compute="100", memory="80Gi")
    assert unschedulable_reasons(scheduling_message(pending)).get("cannot allocate all claims") == 1


def _without_share_id(result: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in result.items() if k != "shareID"}


def _gpu_0_result(node: str, *, compute: str, memory: str) -> dict[str, object]:
    return {
        "request": "gpu",
        "driver": EXAMPLE,
        "pool": node,
        "device": "gpu-0",
        "consumedCapacity": {"compute": compute, "memory": memory},
    }
