"""CEL selectors: one that matches nothing, one that fails at runtime on some nodes, and
comparisons on quantities and versions."""

from __future__ import annotations

from fake_driver.fleet import fleet_from_dict
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.clusters.base import Cell
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocation, claims_of
from harness.kit.kube import Kube, Obj
from harness.kit.pods import (
    condition,
    create_claim_pod,
    scheduling_message,
    unschedulable_reasons,
    verdict,
    wait_phase,
    wait_unschedulable,
)
from harness.kit.waits import TIMEOUTS, assert_stays, wait_for
from suites.mig.claims import NV, nv

HINT_1_37 = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() "
    "for optional fields"
)


def _pending(kube: Kube, namespace: str, name: str, scheduled: Obj | None) -> None:
    assert_stays(
        lambda: kube.get(*kinds.POD, name, namespace),
        lambda p: (
            p["status"]["phase"] == "Pending" and verdict(condition(p, "PodScheduled")) == verdict(scheduled)
        ),
        duration=TIMEOUTS.stays_pending,
        describe=f"pod {name} Pending with the same PodScheduled condition",
    )


def test_selector_matching_nothing_keeps_the_pod_pending(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, mig={"mode": "static", "layout": ["3g.40gb", "3g.40gb"]}))
    mig = fleet.device_class("mig.nvidia.com")
    nothing = b.exact_request("gpu", mig, selectors=[f"{nv('profile')} == '1g.10gb'"])

    create_claim_pod(kube, namespace, "nothing", [nothing], fleet.node_selector)

    pod = wait_unschedulable(kube, namespace, "nothing")
    assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == 1
    _pending(kube, namespace, "nothing", condition(pod, "PodScheduled"))


def test_selector_reading_an_attribute_missing_on_some_nodes_is_a_cel_runtime_error(
    kube: Kube, namespace: str, cell: Cell, gpu_fleet: MakeGpuFleet
) -> None:
    # nvidia-v25.3 still publishes `index`; v25.8+ dropped it (NV PR #624).
    fleet = gpu_fleet(
        GpuPoolSpec(gpus=1, personality="nvidia-v25.3"), GpuPoolSpec(gpus=1, personality="nvidia-v25.12")
    )
    by_index = b.exact_request("gpu", fleet.device_class("gpu.nvidia.com"), selectors=[f"{nv('index')} == 0"])

    create_claim_pod(kube, namespace, "index", [by_index], fleet.node_selector)

    pod = wait_for(
        lambda: kube.get(*kinds.POD, "index", namespace),
        lambda p: "CEL runtime error" in scheduling_message(p),
        timeout=TIMEOUTS.pod_scheduled,
        describe="pod index PodScheduled=False with a CEL runtime error",
    )
    [claim] = claims_of(kube, namespace, "index")
    [_old, new_node] = fleet.node_names
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None
    assert (scheduled["status"], scheduled["reason"]) == ("False", "SchedulerError")
    # The filter error aborts the whole scheduling attempt, so the v25.3 node that would fit is
    # never chosen. 1.37 names the device and appends a hint (dynamic-resource-allocation
    # v0.37 structured/internal/*/allocator_*.go and cel/errors.go); 1.35/1.36 do neither.
    device = f" on device {NV}/{new_node}/gpu-0" if cell.number >= (1, 37) else ""
    hint = HINT_1_37 if cell.number >= (1, 37) else ""
    assert scheduled["message"] == (
        f'running "DynamicResources" filter plugin: claim {namespace}/{claim["metadata"]["name"]}: '
        f"selector #0{device}: CEL runtime error: no such key: index{hint}"
    )
    _pending(kube, namespace, "index", scheduled)


def test_cel_on_quantities_and_versions_selects_the_right_gpus(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    made = gpu_fleet(
        GpuPoolSpec(gpus=1), GpuPoolSpec(gpus=1, profile="l4"), GpuPoolSpec(gpus=1), publish=False
    )
    # gpu_fleet's GpuPoolSpec has no driver_version: publish the same nodes with the fleet field set.
    versions = ["550.163.01", "580.95.05", "580.95.05"]
    pools = [
        {
            "name": p.name,
            "nodes": list(p.node_names),
            "profile": p.profile.key,
            "gpus": 1,
            "driver_version": v,
        }
        for p, v in zip(made.fleet.pools, versions, strict=True)
    ]
    made.publisher_for(fleet_from_dict({"personality": "nvidia-v25.12", "pools": pools})).publish_all()
    [old_h100], [_new_l4], [new_h100] = made.pool_nodes
    memory = f"device.capacity['{NV}'].memory.compareTo(quantity('40Gi')) >= 0"
    version = f"{nv('driverVersion')}.compareTo(semver('570.0.0'))"
    gpu = made.device_class("gpu.nvidia.com")

    for name, newer in (("new", ">= 0"), ("old", "< 0")):
        selectors = [memory, f"{version} {newer}"]
        create_claim_pod(
            kube, namespace, name, [b.exact_request("gpu", gpu, selectors=selectors)], made.node_selector
        )

    wait_phase(kube, namespace, "new", "Running")
    wait_phase(kube, namespace, "old", "Running")
    assert allocation(kube, namespace, "new") == [("gpu", new_h100, "gpu-0")]
    assert allocation(kube, namespace, "old") == [("gpu", old_h100, "gpu-0")]
