"""Device taints in scheduling (KEP-5055): a NoSchedule taint on a device, from the driver or
from a DeviceTaintRule, keeps a claim off the device; a toleration in the request lets it on.
Upstream counterpart: kubernetes test/e2e/dra "DeviceTaints" (scheduling half)."""

from __future__ import annotations

import pytest

from fake_driver.publishing import faults
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.clusters.base import Cell
from harness.core.expectations import (
    allocation_result_copies_tolerations,
    device_taint_rule_api,
    device_taint_rule_status_checked,
)
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import (
    create_claim_pod,
    scheduling_message,
    unschedulable_reasons,
    wait_phase,
    wait_unschedulable,
)
from harness.kit.waits import TIMEOUTS, wait_for

NV = "gpu.nvidia.com"


@pytest.mark.feature_gate("DRADeviceTaints")
def test_a_no_schedule_device_taint_keeps_a_claim_off_and_a_toleration_lets_it_on(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, cell: Cell
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, personality="nvidia-v0.4"))
    [node] = fleet.node_names
    faults.mark_unhealthy(fleet.publisher, node, ["gpu-0"])  # xid 79: gpu.nvidia.com/xid=79:NoSchedule
    gpu = fleet.device_class(NV)
    tolerate = b.device_toleration(f"{NV}/xid", "NoSchedule", "79")

    create_claim_pod(kube, namespace, "plain", [b.exact_request("gpu", gpu)], fleet.node_selector)
    pending = wait_unschedulable(kube, namespace, "plain")
    tolerant = b.exact_request("gpu", gpu, tolerations=[tolerate])
    create_claim_pod(kube, namespace, "tolerant", [tolerant], fleet.node_selector)
    wait_phase(kube, namespace, "tolerant", "Running")

    assert unschedulable_reasons(scheduling_message(pending)).get("cannot allocate all claims") == 1
    [claim] = claims_of(kube, namespace, "tolerant")
    [result] = allocated_devices(claim)
    assert (result["device"], result["pool"]) == ("gpu-0", node)
    copied = allocation_result_copies_tolerations(cell.number)
    assert result.get("tolerations") == ([tolerate] if copied else None)


@pytest.mark.feature_gate("DRADeviceTaintRules")
def test_a_device_taint_rule_keeps_a_claim_off_until_the_rule_is_deleted(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, objects: Created, cell: Cell
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, personality="nvidia-v0.4"))
    [node] = fleet.node_names
    api = device_taint_rule_api(cell.number)
    name = f"{namespace}-gpu-0"
    objects.create(_drain_gpu_0(name, api, node, "NoSchedule"))

    create_claim_pod(
        kube, namespace, "waits", [b.exact_request("gpu", fleet.device_class(NV))], fleet.node_selector
    )
    pending = wait_unschedulable(kube, namespace, "waits")
    assert unschedulable_reasons(scheduling_message(pending)).get("cannot allocate all claims") == 1
    if device_taint_rule_status_checked(cell.number):
        stored = wait_for(
            lambda: kube.get(api, "DeviceTaintRule", name),
            lambda r: bool(r.get("status", {}).get("conditions")),
            timeout=TIMEOUTS.api_object,
            describe=f"DeviceTaintRule {name} has a status condition",
        )
        [condition] = stored["status"]["conditions"]
        assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
            "EvictionInProgress",
            "False",
            "OtherEffect",
            "Eviction only happens for the NoExecute effect.",
        )

    kube.delete(api, "DeviceTaintRule", name)

    wait_phase(kube, namespace, "waits", "Running")


@pytest.mark.feature_gate("DRADeviceTaintRules")
def test_a_no_execute_device_taint_rule_evicts_the_pod_using_the_device(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, objects: Created, cell: Cell
) -> None:
    # kube-controller-manager's device-taint-eviction controller deletes pods whose allocated
    # device gets a NoExecute taint they do not tolerate.
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, personality="nvidia-v0.4"))
    [node] = fleet.node_names
    create_claim_pod(
        kube, namespace, "victim", [b.exact_request("gpu", fleet.device_class(NV))], fleet.node_selector
    )
    wait_phase(kube, namespace, "victim", "Running")
    rule = _drain_gpu_0(f"{namespace}-evict", device_taint_rule_api(cell.number), node, "NoExecute")

    objects.create(rule)

    wait_for(
        lambda: [p["metadata"]["name"] for p in kube.list(*kinds.POD, namespace)],
        lambda names: names == [],
        timeout=TIMEOUTS.deletion,
        describe="pod victim evicted by the NoExecute DeviceTaintRule",
    )


def _drain_gpu_0(name: str, api: str, node: str, effect: str) -> dict[str, object]:
    """A DeviceTaintRule an admin would write to drain gpu-0 of `node`."""
    key = "maintenance.dra-harness.io/drain"
    return b.device_taint_rule(name, api, driver=NV, pool=node, device="gpu-0", key=key, effect=effect)
