"""Gang scheduling (KEP-4671) of GPU pods: a gang binds only when all of its minCount pods
fit, whether the pods ask for GPUs by extended resource (device plugin, or a driver's class that
maps the name) or by DRA claim - on the fake fleet or on an external driver's own nodes.

The Workload/PodGroup objects and the pod field differ per minor; harness/kit/gang.py hides that.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.fake_driver import FLEET_LABEL, GpuPoolSpec, MakeGpuFleet
from fixtures.nodes import MakePool
from fixtures.requirements import api_unserved, fake_driver_only, gate_reason, skip, unmapped_class
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
SMALLEST_GANG_GPUS = 4  # an external node needs room for a gang of 2 pods x 2 devices


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
    """Nodes for gang pods: `add(gpus)` gives a node with at least `gpus` GPUs (the fake fleet
    makes one; an external driver's first call gets one of its own nodes, later calls skip),
    and `capacity` how many the node really has (an external node may have more)."""

    style: str  # "extended" (a legacy nvidia.com/gpu-style request) or "claim" (DRA template)
    add: Callable[[int], list[str]]
    resource: str
    node_selector: dict[str, str]  # every node `add` gave (fake), the one node (external)
    capacity: dict[str, int]
    grows: bool = True  # can `add` make a node while a gang waits (the fake fleet only)?

    def pod(self, name: str, namespace: str) -> Obj:
        selector = self.node_selector
        if self.style == "extended":
            limits = {self.resource: "2"}
            return b.pod(name, namespace, containers=[b.container(limits=limits)], node_selector=selector)
        return b.template_pod(name, namespace, TEMPLATE, claim="gpus", node_selector=selector)


@pytest.fixture(params=["extended", "claim"])
def gpu_nodes(
    request: pytest.FixtureRequest, kube: Kube, namespace: str, driver: DriverUnderTest
) -> GpuNodes:
    """The fake driver: kwok nodes whose device plugin advertises nvidia.com/gpu ("extended")
    or fresh fleet pools ("claim"). An external driver: one of its nodes, and its own class, or
    (extended) the legacy name its class maps - gangs of any driver's devices."""
    style = str(request.param)
    if driver.source == "external":
        return _external_gpu_nodes(request, kube, namespace, driver, style)
    made = [0]
    gpus = GpuNodes(style, lambda n: [], GPU, {FLEET_LABEL: namespace}, {})

    def add(count: int) -> list[str]:
        made[0] += 1
        if style == "extended":
            node_pool: MakePool = request.getfixturevalue("node_pool")
            labels = {FLEET_LABEL: namespace}
            pool = node_pool(1, suffix=f"x{made[0]}", labels=labels, extended_resources={GPU: str(count)})
            names = pool.node_names()
        else:
            gpu_fleet: MakeGpuFleet = request.getfixturevalue("gpu_fleet")
            fleet = gpu_fleet(GpuPoolSpec(gpus=count, suffix=f"c{made[0]}"), classes=made[0] == 1)
            if made[0] == 1:
                _template(kube, namespace, fleet.device_class("gpu.nvidia.com"))
            names = list(fleet.node_names)
        gpus.capacity.update(dict.fromkeys(names, count))
        return names

    gpus.add = add
    return gpus


def _template(kube: Kube, namespace: str, device_class: str) -> None:
    kube.create(b.claim_template(TEMPLATE, namespace, [b.exact_request("gpu", device_class, count=2)]))


def _external_gpu_nodes(
    request: pytest.FixtureRequest, kube: Kube, namespace: str, driver: DriverUnderTest, style: str
) -> GpuNodes:
    if style == "extended":
        cls = kube.get(*kinds.DEVICE_CLASS, driver.device_class)
        if (cls.get("spec") or {}).get("extendedResourceName") != driver.extended_resource:
            skip(unmapped_class(driver.driver, driver.device_class, driver.extended_resource))
    else:
        _template(kube, namespace, driver.device_class)
    gpu_pool: MakeGpuPool = request.getfixturevalue("gpu_pool")
    gpus = GpuNodes(style, lambda n: [], driver.extended_resource, {}, {}, grows=False)

    def add(count: int) -> list[str]:
        assert not gpus.capacity, "one node of an external driver; a test that adds more checks `grows`"
        pool = gpu_pool(nodes=1, gpus=min(count, SMALLEST_GANG_GPUS))  # gangs fill what it has
        [node] = pool.nodes
        gpus.node_selector, gpus.capacity[node] = pool.node_selector, pool.per_node[node]
        return [node]

    gpus.add = add
    return gpus


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


def _devices(kube: Kube, namespace: str, names: list[str]) -> list[str]:
    return sorted(
        r["device"] for n in names for c in claims_of(kube, namespace, n) for r in allocated_devices(c)
    )


def test_a_gang_filling_a_node_by_2_gpus_a_pod_binds_every_pod_there(
    kube: Kube, namespace: str, gang: GangApi, gpu_nodes: GpuNodes, driver: DriverUnderTest
) -> None:
    [node] = gpu_nodes.add(8)
    pods = gpu_nodes.capacity[node] // 2  # the fake's 8 GPUs: 4 pods; an external node: all it has

    names = _create_gang(kube, gang, gpu_nodes, namespace, pods=pods, min_count=pods)

    assert _all_running(kube, namespace, names) == dict.fromkeys(names, node)
    if gpu_nodes.style == "claim":
        devices = _devices(kube, namespace, names)
        assert len(set(devices)) == len(devices) == 2 * pods, devices
        if driver.source == "fake":
            assert devices == [f"gpu-{i}" for i in range(8)]
    scheduled = _pod_group_condition(kube, gang, namespace, "True")
    if scheduled is not None:
        assert (scheduled["reason"], scheduled["message"]) == ("Scheduled", "")


def test_a_gang_needing_the_whole_node_binds_only_once_a_pod_holding_2_of_its_gpus_goes(
    kube: Kube, namespace: str, gang: GangApi, gpu_nodes: GpuNodes
) -> None:
    """Any driver: capacity freed on the node, not a node added, lets the waiting gang in."""
    [node] = gpu_nodes.add(8)
    pods = gpu_nodes.capacity[node] // 2
    kube.create(gpu_nodes.pod("holder", namespace))
    assert wait_phase(kube, namespace, "holder", "Running")["spec"]["nodeName"] == node

    names = _create_gang(kube, gang, gpu_nodes, namespace, pods=pods, min_count=pods)

    assert_stays(
        lambda: kube.list(*kinds.POD, namespace),
        lambda seen: not any(p["spec"].get("nodeName") for p in seen if p["metadata"]["name"] != "holder"),
        duration=TIMEOUTS.stays_unbound,
        describe=f"none of the {pods} gang pods bound while the holder keeps 2 of the node's GPUs",
    )
    kube.delete(*kinds.POD, "holder", namespace)

    assert _all_running(kube, namespace, names) == dict.fromkeys(names, node)


def test_gang_of_5_pods_by_2_gpus_on_8_gpus_binds_none_until_a_node_is_added(
    kube: Kube, namespace: str, gang: GangApi, gpu_nodes: GpuNodes
) -> None:
    if not gpu_nodes.grows:  # any driver: test_a_gang_needing_the_whole_node_... frees capacity instead
        skip(fake_driver_only("fleet: a node added while the gang waits"))
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
    full = gpu_nodes.capacity[node] // 2  # the fake's 8 GPUs: minCount 4, 3 pods first
    names = _create_gang(kube, gang, gpu_nodes, namespace, pods=full - 1, min_count=full)

    _none_bound(kube, namespace, full - 1, f"{full - 1} of minCount {full} pods exist")
    # Held back before the scheduling cycle (PreEnqueue): never tried, so no PodScheduled.
    assert [condition(p, "PodScheduled") for p in kube.list(*kinds.POD, namespace)] == [None] * (full - 1)
    if gang.has_pod_group:
        assert kube.get(*pod_group_kind(gang), "train", namespace).get("status", {}).get("conditions") is None

    last = f"train-{full - 1}"
    kube.create(join_gang(gpu_nodes.pod(last, namespace), gang, "train"))

    assert _all_running(kube, namespace, [*names, last]) == dict.fromkeys([*names, last], node)
