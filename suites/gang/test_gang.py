"""Gang scheduling (KEP-4671) of GPU pods: a gang binds only when all of its minCount pods
fit, whether the pods ask for GPUs by extended resource (device plugin) or by DRA claim.

The Workload/PodGroup objects and the pod field differ per minor; harness/kit/gang.py hides that.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from fixtures.fake_driver import FLEET_LABEL, GpuPoolSpec, MakeGpuFleet
from fixtures.nodes import MakePool
from fixtures.requirements import api_unserved, gate_reason, skip
from harness.clusters.base import Cell
from harness.core.expectations import gang_unschedulable_message
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.gang import GangApi, gang_api, gang_objects, join_gang, pod_group_kind
from harness.kit.kube import Kube, Obj
from harness.kit.pods import condition, wait_phase
from harness.kit.waits import TIMEOUTS, assert_stays, wait_for

pytestmark = [pytest.mark.min_version("1.35"), pytest.mark.feature_gate("GenericWorkload")]

GPU = "nvidia.com/gpu"
TEMPLATE = "two-gpus"


@pytest.fixture
def gang(cell: Cell, kube: Kube) -> GangApi:
    """The cell's gang API; skips where the scheduler plugin or the API version is off."""
    api = gang_api(cell.minor)
    # GangScheduling gates the plugin in 1.35/1.36; 1.37 merged it into GenericWorkload.
    if cell.gate("GangScheduling") is False:
        skip(gate_reason(cell, "GangScheduling"))
    status, _ = kube.raw_get(f"/apis/{api.api_version}")
    if status != 200:
        skip(api_unserved(cell, api.api_version))
    return api


@dataclass
class GpuNodes:
    """Nodes for gang pods; `add(gpus)` makes one more node of the same kind."""

    style: str  # "extended" (device plugin's nvidia.com/gpu) or "claim" (DRA template)
    add: Callable[[int], list[str]]
    node_selector: dict[str, str]

    def pod(self, name: str, namespace: str) -> Obj:
        if self.style == "extended":
            return b.pod(
                name, namespace, containers=[b.container(limits={GPU: "2"})], node_selector=self.node_selector
            )
        return b.template_pod(name, namespace, TEMPLATE, claim="gpus", node_selector=self.node_selector)


@pytest.fixture(params=["extended", "claim"])
def gpu_nodes(
    request: pytest.FixtureRequest, kube: Kube, namespace: str, node_pool: MakePool, gpu_fleet: MakeGpuFleet
) -> GpuNodes:
    style = str(request.param)
    made = [0]

    def add(gpus: int) -> list[str]:
        made[0] += 1
        if style == "extended":
            pool = node_pool(
                1, suffix=f"x{made[0]}", labels={FLEET_LABEL: namespace}, extended_resources={GPU: str(gpus)}
            )
            return pool.node_names()
        fleet = gpu_fleet(GpuPoolSpec(gpus=gpus, suffix=f"c{made[0]}"), classes=made[0] == 1)
        if made[0] == 1:
            gpu_class = fleet.device_class("gpu.nvidia.com")
            kube.create(b.claim_template(TEMPLATE, namespace, [b.exact_request("gpu", gpu_class, count=2)]))
        return fleet.node_names

    return GpuNodes(style, add, {FLEET_LABEL: namespace})


def _create_gang(
    kube: Kube, api: GangApi, gpus: GpuNodes, namespace: str, pods: int, min_count: int
) -> list[str]:
    for obj in gang_objects(api, "train", namespace, min_count=min_count):
        kube.create(obj)
    names = [f"train-{i}" for i in range(pods)]
    for name in names:
        kube.create(join_gang(gpus.pod(name, namespace), api, "train"))
    return names


def _none_bound(kube: Kube, namespace: str, count: int, why: str) -> None:
    assert_stays(
        lambda: kube.list(*kinds.POD, namespace),
        lambda pods: len(pods) == count and not any(p["spec"].get("nodeName") for p in pods),
        duration=TIMEOUTS.stays_unbound,
        describe=f"none of the {count} gang pods bound ({why})",
    )


def _all_running(kube: Kube, namespace: str, names: list[str]) -> dict[str, str]:
    return {n: wait_phase(kube, namespace, n, "Running")["spec"]["nodeName"] for n in names}


def _pod_group_condition(kube: Kube, api: GangApi, namespace: str, status: str) -> Obj | None:
    """The PodGroup's scheduling condition once it has `status`; None where the minor has none."""
    if api.scheduled_condition is None:
        return None
    api_version, kind = pod_group_kind(api)

    def cond(pg: Obj) -> Obj | None:
        found = [
            c for c in pg.get("status", {}).get("conditions") or [] if c["type"] == api.scheduled_condition
        ]
        return found[0] if found else None

    pg = wait_for(
        lambda: kube.get(api_version, kind, "train", namespace),
        lambda pg: (c := cond(pg)) is not None and c["status"] == status,
        timeout=TIMEOUTS.pod_scheduled,
        describe=f"PodGroup train {api.scheduled_condition}={status}",
    )
    return cond(pg)


def test_gang_of_4_pods_by_2_gpus_binds_on_8_gpus(
    kube: Kube, namespace: str, gang: GangApi, gpu_nodes: GpuNodes
) -> None:
    [node] = gpu_nodes.add(8)

    names = _create_gang(kube, gang, gpu_nodes, namespace, pods=4, min_count=4)

    assert _all_running(kube, namespace, names) == dict.fromkeys(names, node)
    if gpu_nodes.style == "claim":
        devices = [
            r["device"] for n in names for c in claims_of(kube, namespace, n) for r in allocated_devices(c)
        ]
        assert sorted(devices) == [f"gpu-{i}" for i in range(8)]
    scheduled = _pod_group_condition(kube, gang, namespace, "True")
    if scheduled is not None:
        assert (scheduled["reason"], scheduled["message"]) == ("Scheduled", "")


def test_gang_of_5_pods_by_2_gpus_on_8_gpus_binds_none_until_a_node_is_added(
    kube: Kube, namespace: str, gang: GangApi, gpu_nodes: GpuNodes
) -> None:
    [first] = gpu_nodes.add(8)

    names = _create_gang(kube, gang, gpu_nodes, namespace, pods=5, min_count=5)

    _none_bound(kube, namespace, 5, "5 x 2 GPUs do not fit on 8")
    unschedulable = _pod_group_condition(kube, gang, namespace, "False")
    if unschedulable is not None:
        assert (unschedulable["reason"], unschedulable["message"]) == (
            "Unschedulable",
            gang_unschedulable_message(gang.minor),
        )

    # Room for exactly one more pod: the only placement is 4 pods on the first node, 1 here.
    [second] = gpu_nodes.add(2)

    nodes = _all_running(kube, namespace, names)
    assert sorted(nodes.values()) == [first] * 4 + [second]
    scheduled = _pod_group_condition(kube, gang, namespace, "True")
    if scheduled is not None:
        assert scheduled["reason"] == "Scheduled"


def test_fewer_than_min_count_pods_are_not_scheduled(
    kube: Kube, namespace: str, gang: GangApi, gpu_nodes: GpuNodes
) -> None:
    [node] = gpu_nodes.add(8)
    names = _create_gang(kube, gang, gpu_nodes, namespace, pods=3, min_count=4)

    _none_bound(kube, namespace, 3, "3 of minCount 4 pods exist")
    # Held back before the scheduling cycle (PreEnqueue): never tried, so no PodScheduled.
    assert [condition(p, "PodScheduled") for p in kube.list(*kinds.POD, namespace)] == [None] * 3
    if gang.has_pod_group:
        assert kube.get(*pod_group_kind(gang), "train", namespace).get("status", {}).get("conditions") is None

    kube.create(join_gang(gpu_nodes.pod("train-3", namespace), gang, "train"))

    assert _all_running(kube, namespace, [*names, "train-3"]) == dict.fromkeys([*names, "train-3"], node)
