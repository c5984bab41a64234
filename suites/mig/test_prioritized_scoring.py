"""Node scoring for the prioritized list (KEP-4816): among nodes that can all satisfy a
`firstAvailable` request, the scheduler prefers the one where a higher-ranked subrequest fits.
Source: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go Score/computeScore
@ v1.35.4+ (FirstAvailableDeviceRequestMaxSize - index per allocated subrequest); v1.34.4 has no
Score, so there the node is any feasible one (harness.core.expectations)."""

from __future__ import annotations

import pytest

from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from fixtures.requirements import skip
from harness.clusters.base import Cell
from harness.core.expectations import prioritized_list_scores_nodes
from harness.core.requirements import Kind, Reason
from harness.kit.drastate import allocation
from harness.kit.kube import Kube
from harness.kit.pods import create_claim_pod, wait_phase
from suites.mig.claims import prefer_3g_then_1g

pytestmark = [pytest.mark.needs_devices("mig"), pytest.mark.feature_gate("DRAPrioritizedList")]


def test_the_scheduler_prefers_the_node_where_the_first_choice_fits(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, cell: Cell
) -> None:
    if not prioritized_list_scores_nodes(cell.number):
        skip(Reason(Kind.VERSION, minor=cell.minor, profile=cell.profile, need="1.35"))
    # Three nodes offer only the fallback (1g), one offers the first choice (3g): without
    # scoring the pod lands on the 3g node one time in four.
    only_small = GpuPoolSpec(gpus=1, nodes=3, mig={"mode": "static", "layout": ["1g.10gb"] * 7}, suffix="s")
    has_big = GpuPoolSpec(gpus=1, mig={"mode": "static", "layout": ["3g.40gb", "1g.10gb"]}, suffix="b")
    fleet = gpu_fleet(only_small, has_big)
    [[big_node]] = fleet.pool_nodes[1:]
    mig = fleet.device_class("mig.nvidia.com")
    request = prefer_3g_then_1g(mig)

    create_claim_pod(kube, namespace, "p", [request], fleet.node_selector)

    pod = wait_phase(kube, namespace, "p", "Running")
    [(chosen, pool, _)] = allocation(kube, namespace, "p")
    assert (pod["spec"]["nodeName"], pool, chosen) == (big_node, big_node, "mig/big")
