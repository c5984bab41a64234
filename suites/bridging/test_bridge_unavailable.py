"""Where the bridge does not exist — DRAExtendedResource off (1.34/1.35 defaults) or a driver
whose class sets no extendedResourceName (NVIDIA before v25.12) — unchanged pods do not
silently get devices: they stay Pending with the scheduler's "Insufficient <name>"."""

from __future__ import annotations

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.requirements import bridge_available, skip
from harness.clusters.base import Cell
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.pods import scheduling_message, unschedulable_reasons, wait_unschedulable
from harness.kit.waits import TIMEOUTS, assert_stays


def test_legacy_request_stays_pending_without_the_bridge(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    if cell.gate("DRAExtendedResource") and driver.maps_extended_resource is not False:
        skip(bridge_available(cell, driver.personality or driver.driver))
    pool = gpu_pool(nodes=1, gpus=8)
    kube.create(
        b.legacy_pod("legacy", namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
    )

    pod = wait_unschedulable(kube, namespace, "legacy")

    assert unschedulable_reasons(scheduling_message(pod)).get(f"Insufficient {driver.extended_resource}") == 1
    assert_stays(
        lambda: kube.get(*kinds.POD, "legacy", namespace),
        lambda p: not p["spec"].get("nodeName"),
        duration=TIMEOUTS.stays_pending,
        describe="legacy pod unbound on a DRA-only pool",
    )
    assert kube.list(*kinds.RESOURCE_CLAIM, namespace) == []
    assert "extendedResourceClaimStatus" not in pod["status"]
