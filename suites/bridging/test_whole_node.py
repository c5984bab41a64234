"""A bridged pod that asks for every GPU of its node takes all of them, and the next one waits:
the bridge counts devices, it does not overcommit a full node. The waiting pod is refused by the
DRA plugin's Filter ("cannot allocate all claims", dynamicresources.go @ v1.37.2), not by the
node's allocatable: a DRA-only node advertises no nvidia.com/gpu to be insufficient."""

from __future__ import annotations

import pytest

from fixtures.driver import DriverUnderTest, MakeGpuPool
from harness.kit import builders as b
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.pods import scheduling_message, unschedulable_reasons, wait_phase, wait_unschedulable


@pytest.mark.bridged
def test_a_pod_taking_the_whole_node_leaves_the_next_one_pending(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool
) -> None:
    pool = gpu_pool(nodes=1, gpus=4)
    whole = b.container(limits={driver.extended_resource: "4"})
    kube.create(b.pod("whole", namespace, containers=[whole], node_selector=pool.node_selector))
    wait_phase(kube, namespace, "whole", "Running")
    kube.create(
        b.legacy_pod("next", namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
    )

    pod = wait_unschedulable(kube, namespace, "next")

    [claim] = claims_of(kube, namespace, "whole")
    assert len({r["device"] for r in allocated_devices(claim)}) == 4
    assert unschedulable_reasons(scheduling_message(pod)) == {"cannot allocate all claims": 1}
