"""Prioritized list (KEP-4816, `firstAvailable`): prefer a 3g MIG device, fall back to 1g
when none is left; the allocation result names the subrequest that was chosen."""

from __future__ import annotations

import pytest

from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.kit import builders as b
from harness.kit.drastate import allocation, claims_of
from harness.kit.kube import Kube
from harness.kit.pods import create_claim_pod, wait_phase
from suites.mig.claims import nv, prefer_3g_then_1g

pytestmark = [pytest.mark.needs_devices("mig"), pytest.mark.feature_gate("DRAPrioritizedList")]


def test_first_available_prefers_3g_and_falls_back_to_1g(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    layout = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, mig={"mode": "static", "layout": layout}))
    [node] = fleet.node_names
    mig = fleet.device_class("mig.nvidia.com")
    request = prefer_3g_then_1g(mig)

    create_claim_pod(kube, namespace, "first", [request], fleet.node_selector)
    wait_phase(kube, namespace, "first", "Running")
    kube.create(b.template_pod("second", namespace, "first", node_selector=fleet.node_selector))
    wait_phase(kube, namespace, "second", "Running")

    assert allocation(kube, namespace, "first") == [("mig/big", node, "gpu-0-mig-3g40gb-9-4")]
    assert allocation(kube, namespace, "second") == [("mig/small", node, "gpu-0-mig-1g10gb-19-2")]
    [claim] = claims_of(kube, namespace, "second")
    assert claim["spec"]["devices"]["requests"] == [request]


def test_match_attribute_across_requests_picks_the_subrequest_that_fits(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    # Each GPU has one 3g device. "b" prefers a 3g, but must share a PCIe root with "a": the
    # only 3g there is taken by "a", so the allocator takes "b"'s second choice, though a 3g is
    # free on the other GPU (upstream: prioritized list with matchAttribute constraints).
    layout = ["3g.40gb", "1g.10gb", "1g.10gb"]
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, mig={"mode": "static", "layout": layout}))
    [node] = fleet.node_names
    mig = fleet.device_class("mig.nvidia.com")
    profile = nv("profile")
    a = b.exact_request("a", mig, selectors=[f"{profile} == '3g.40gb'"])
    choice = b.first_available_request(
        "b",
        [
            b.subrequest("big", mig, selectors=[f"{profile} == '3g.40gb'"]),
            b.subrequest("small", mig, selectors=[f"{profile} == '1g.10gb'"]),
        ],
    )
    same_root = b.match_attribute(["a", "b"], "resource.kubernetes.io/pcieRoot")

    create_claim_pod(kube, namespace, "pair", [a, choice], fleet.node_selector, constraints=[same_root])
    wait_phase(kube, namespace, "pair", "Running")

    assert allocation(kube, namespace, "pair") == [
        ("a", node, "gpu-0-mig-3g40gb-9-0"),
        ("b/small", node, "gpu-0-mig-1g10gb-19-4"),
    ]
