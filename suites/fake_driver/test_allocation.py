"""The real scheduler allocates the fake driver's devices: a MIG device by profile, a full
GPU by product name, and DynamicMIG's shared counters keeping a full GPU and its MIG
devices apart."""

from __future__ import annotations

import pytest

from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.pods import (
    condition,
    create_claim_pod,
    own_reasons,
    verdict,
    wait_phase,
    wait_unschedulable,
)
from harness.kit.waits import TIMEOUTS, assert_stays

pytestmark = [pytest.mark.fake_driver_only("own slices, faults and installer")]

NV = "gpu.nvidia.com"


def _claim_pod(
    kube: Kube, namespace: str, name: str, cls: str, selector: str | None, node_selector: dict[str, str]
) -> None:
    request = b.exact_request("gpu", cls, selectors=[selector] if selector else [])
    create_claim_pod(kube, namespace, name, [request], node_selector)


def test_static_mig_device_chosen_by_profile(kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet) -> None:
    layout = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    fleet = gpu_fleet(
        GpuPoolSpec(gpus=1, personality="nvidia-v25.8", mig={"mode": "static", "layout": layout})
    )
    [node] = fleet.node_names
    selector = f"device.attributes['{NV}'].profile == '2g.20gb'"

    _claim_pod(kube, namespace, "mig", fleet.device_class("mig.nvidia.com"), selector, fleet.node_selector)

    pod = wait_phase(kube, namespace, "mig", "Running")
    [claim] = claims_of(kube, namespace, "mig")
    assert allocated_devices(claim) == [
        {"request": "gpu", "driver": NV, "pool": node, "device": "gpu-0-mig-14-0-2"}
    ]
    assert pod["spec"]["nodeName"] == node


def test_full_gpu_chosen_by_product_name(kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, suffix="h100"), GpuPoolSpec(profile="l4", gpus=2, suffix="l4"))
    [_h100], [l4] = fleet.pool_nodes
    selector = f"device.attributes['{NV}'].productName == 'NVIDIA L4'"

    _claim_pod(kube, namespace, "l4", fleet.device_class("gpu.nvidia.com"), selector, fleet.node_selector)

    pod = wait_phase(kube, namespace, "l4", "Running")
    [claim] = claims_of(kube, namespace, "l4")
    assert allocated_devices(claim) == [{"request": "gpu", "driver": NV, "pool": l4, "device": "gpu-0"}]
    assert pod["spec"]["nodeName"] == l4


@pytest.mark.feature_gate("DRAPartitionableDevices")
def test_dynamic_mig_full_gpu_waits_for_its_mig_device(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, personality="nvidia-v25.12", mig="dynamic"))
    [node] = fleet.node_names
    mig_selector = f"device.attributes['{NV}'].profile == '1g.10gb'"
    _claim_pod(
        kube, namespace, "mig", fleet.device_class("mig.nvidia.com"), mig_selector, fleet.node_selector
    )
    wait_phase(kube, namespace, "mig", "Running")
    [mig_claim] = claims_of(kube, namespace, "mig")
    assert allocated_devices(mig_claim) == [
        {"request": "gpu", "driver": NV, "pool": node, "device": "gpu-0-mig-1g10gb-19-0"}
    ]

    _claim_pod(kube, namespace, "full", fleet.device_class("gpu.nvidia.com"), None, fleet.node_selector)

    pending = wait_unschedulable(kube, namespace, "full")
    scheduled = condition(pending, "PodScheduled")
    assert scheduled is not None
    assert scheduled["reason"] == "Unschedulable"
    # The text after the reasons differs by minor (1.36 adds "still not schedulable,").
    assert own_reasons(scheduled["message"]) == {"cannot allocate all claims": 1}
    assert_stays(
        lambda: kube.get(*kinds.POD, "full", namespace),
        lambda p: (
            p["status"]["phase"] == "Pending" and verdict(condition(p, "PodScheduled")) == verdict(scheduled)
        ),
        duration=TIMEOUTS.stays_pending,
        describe="pod full Pending while gpu-0's MIG device is allocated",
    )

    kube.delete(*kinds.POD, "mig", namespace)

    pod = wait_phase(kube, namespace, "full", "Running")
    [claim] = claims_of(kube, namespace, "full")
    assert allocated_devices(claim) == [{"request": "gpu", "driver": NV, "pool": node, "device": "gpu-0"}]
    assert pod["spec"]["nodeName"] == node
