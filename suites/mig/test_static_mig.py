"""Static MIG (devices pre-created, parent GPUs not announced): a CEL selector on `profile`
gets exactly that profile, and `matchAttribute` on `parentUUID` keeps two MIG devices on
one physical GPU."""

from __future__ import annotations

import pytest

from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.kit import builders as b
from harness.kit.drastate import allocation, node_slices
from harness.kit.kube import Kube
from harness.kit.pods import create_claim_pod, wait_phase
from suites.mig.claims import NV, nv

LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]

pytestmark = [pytest.mark.needs_devices("mig")]


def test_profile_selector_gets_exactly_that_profile(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, mig={"mode": "static", "layout": LAYOUT}))
    [node] = fleet.node_names
    mig = fleet.device_class("mig.nvidia.com")
    one_g = b.exact_request("gpu", mig, count=2, selectors=[f"{nv('profile')} == '1g.10gb'"])

    create_claim_pod(kube, namespace, "small", [one_g], fleet.node_selector)

    wait_phase(kube, namespace, "small", "Running")
    assert allocation(kube, namespace, "small") == [
        ("gpu", node, "gpu-0-mig-1g10gb-19-2"),
        ("gpu", node, "gpu-0-mig-1g10gb-19-3"),
    ]
    profiles = {
        d["name"]: d["attributes"]["profile"]["string"]
        for s in node_slices(kube, node)
        for d in s["spec"]["devices"]
    }
    assert [profiles["gpu-0-mig-1g10gb-19-2"], profiles["gpu-0-mig-1g10gb-19-3"]] == ["1g.10gb"] * 2


def test_match_attribute_parent_uuid_keeps_two_mig_devices_on_one_gpu(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, mig={"mode": "static", "layout": LAYOUT}))
    [node] = fleet.node_names
    mig = fleet.device_class("mig.nvidia.com")
    big = b.exact_request("big", mig, selectors=[f"{nv('profile')} == '3g.40gb'"])
    small = b.exact_request("small", mig, selectors=[f"{nv('profile')} == '1g.10gb'"])
    create_claim_pod(kube, namespace, "first", [big], fleet.node_selector)
    wait_phase(kube, namespace, "first", "Running")
    assert allocation(kube, namespace, "first") == [("big", node, "gpu-0-mig-3g40gb-9-4")]

    # gpu-0 still has free 1g devices but no 3g: the pair must move to gpu-1 as a whole.
    create_claim_pod(
        kube,
        namespace,
        "pair",
        [small, big],
        fleet.node_selector,
        constraints=[b.match_attribute(["small", "big"], f"{NV}/parentUUID")],
    )

    wait_phase(kube, namespace, "pair", "Running")
    assert allocation(kube, namespace, "pair") == [
        ("small", node, "gpu-1-mig-1g10gb-19-2"),
        ("big", node, "gpu-1-mig-3g40gb-9-4"),
    ]
    parents = {
        d["name"]: d["attributes"]["parentUUID"]["string"]
        for s in node_slices(kube, node)
        for d in s["spec"]["devices"]
    }
    assert (
        parents["gpu-1-mig-1g10gb-19-2"] == parents["gpu-1-mig-3g40gb-9-4"] != parents["gpu-0-mig-3g40gb-9-4"]
    )
