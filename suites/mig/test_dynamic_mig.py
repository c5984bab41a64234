"""DynamicMIG (KEP-4815 partitionable devices): every MIG placement and the full GPU draw on
one shared counter set per GPU, so the scheduler hands out exactly what fits and gives the
counters back when a claim is freed (upstream e2e "must consume and free up counters")."""

from __future__ import annotations

import pytest

from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocation
from harness.kit.kube import Kube
from harness.kit.pods import (
    create_claim_pod,
    scheduling_message,
    unschedulable_reasons,
    wait_phase,
    wait_unschedulable,
)
from harness.kit.waits import TIMEOUTS, assert_stays
from suites.mig.claims import nv

pytestmark = [pytest.mark.needs_devices("mig"), pytest.mark.feature_gate("DRAPartitionableDevices")]

ONE_G = f"{nv('profile')} == '1g.10gb'"


def _stays_unschedulable(kube: Kube, namespace: str, name: str, why: str) -> None:
    pod = wait_unschedulable(kube, namespace, name)
    assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == 1
    assert_stays(
        lambda: kube.get(*kinds.POD, name, namespace),
        lambda p: p["status"]["phase"] == "Pending" and not p["spec"].get("nodeName"),
        duration=TIMEOUTS.stays_pending,
        describe=f"pod {name} Pending while {why}",
    )


def test_seven_1g_devices_fill_an_h100_and_give_the_counters_back(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, mig="dynamic"))
    [node] = fleet.node_names
    mig = fleet.device_class("mig.nvidia.com")
    create_claim_pod(
        kube,
        namespace,
        "seven",
        [b.exact_request("gpu", mig, count=7, selectors=[ONE_G])],
        fleet.node_selector,
    )
    wait_phase(kube, namespace, "seven", "Running")
    assert allocation(kube, namespace, "seven") == [
        ("gpu", node, f"gpu-0-mig-1g10gb-19-{i}") for i in range(7)
    ]

    # 7 x 16 of 132 multiprocessors and memory slices 0-6 are used: no MIG placement fits.
    create_claim_pod(kube, namespace, "any", [b.exact_request("gpu", mig)], fleet.node_selector)
    _stays_unschedulable(kube, namespace, "any", "seven 1g.10gb devices hold gpu-0's counters")

    kube.delete(*kinds.POD, "seven", namespace)

    wait_phase(kube, namespace, "any", "Running")
    assert allocation(kube, namespace, "any") == [("gpu", node, "gpu-0-mig-1g10gb-19-0")]


def test_a_4g_and_a_3g_fit_together_and_keep_the_full_gpu_out(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, mig="dynamic"))
    [node] = fleet.node_names
    mig = fleet.device_class("mig.nvidia.com")
    four = b.exact_request("four", mig, selectors=[f"{nv('profile')} == '4g.40gb'"])
    three = b.exact_request("three", mig, selectors=[f"{nv('profile')} == '3g.40gb'"])
    create_claim_pod(kube, namespace, "split", [four, three], fleet.node_selector)
    wait_phase(kube, namespace, "split", "Running")
    assert allocation(kube, namespace, "split") == [
        ("four", node, "gpu-0-mig-4g40gb-5-0"),
        ("three", node, "gpu-0-mig-3g40gb-9-4"),
    ]

    create_claim_pod(
        kube,
        namespace,
        "full",
        [b.exact_request("gpu", fleet.device_class("gpu.nvidia.com"))],
        fleet.node_selector,
    )
    _stays_unschedulable(kube, namespace, "full", "gpu-0's 4g and 3g MIG devices are allocated")

    kube.delete(*kinds.POD, "split", namespace)

    wait_phase(kube, namespace, "full", "Running")
    assert allocation(kube, namespace, "full") == [("gpu", node, "gpu-0")]
