"""An installed driver's devices, as it publishes them (--driver external): CEL selectors on
its own attributes, a prioritized list that falls back, and its partitions (what DRA says makes
one: a device consuming shared counters, or a MIG device with a parentUUID; harness.kit.partitions,
never what its GPU class leaves out). Everything is derived from its slices; the fake driver's
fleets are covered by suites/mig, and parent/partition exclusion by suites/driver/test_partitions.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.requirements import fleet_lacks, provider_unmet, skip
from harness.kit import builders as b
from harness.kit.drastate import allocation
from harness.kit.fleet_inventory import Inventory, partitioned
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import create_claim_pod, wait_phase
from suites.driver.published import WHAT, equals, exact_selector, unique_attribute


@pytest.fixture(autouse=True)
def _external(driver: DriverUnderTest) -> None:
    if driver.source != "external":
        skip(
            provider_unmet(
                "covers an installed driver's own slices (--driver external); suites/mig covers the fake"
            )
        )


def test_selector_on_a_unique_attribute_value_allocates_exactly_that_device(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    external_inventory: Callable[[], Inventory],
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    [node] = [n for n in external_inventory().nodes if n.node == pool.nodes[0]]
    found = unique_attribute(node)
    if found is None:
        skip(fleet_lacks(driver.device_class, "a string attribute unique to one device", node.node))
    device, name, value = found
    request = b.exact_request("gpu", driver.device_class, selectors=[equals(driver.driver, name, value)])
    create_claim_pod(kube, namespace, "picked", [request], pool.node_selector)
    wait_phase(kube, namespace, "picked", "Running")

    assert allocation(kube, namespace, "picked") == [("gpu", node.node, device["name"])]


@pytest.mark.feature_gate("DRAPrioritizedList")
def test_prioritized_list_falls_back_when_the_first_choice_cannot_be_met(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    too_many = pool.gpus_per_node + 1  # more than the pinned node has
    request = b.first_available_request(
        "gpu",
        [b.subrequest("all", driver.device_class, count=too_many), b.subrequest("one", driver.device_class)],
    )
    create_claim_pod(kube, namespace, "fallback", [request], pool.node_selector)
    wait_phase(kube, namespace, "fallback", "Running")

    [(chosen, node, _)] = allocation(kube, namespace, "fallback")
    assert (chosen, node) == ("gpu/one", pool.nodes[0])


def test_a_partition_device_is_allocated_on_its_node(
    kube: Kube, namespace: str, driver: DriverUnderTest, objects: Created
) -> None:
    found = [
        (n, f.partitions, exact_selector(n.devices, f.partitions, driver.driver))
        for n in partitioned(kube, driver.driver)
        if "kubernetes.io/hostname" in n.labels
        for f in n.families
    ]
    usable = [(n, parts, sel) for n, parts, sel in found if sel is not None]
    if not usable:
        has = f"{len(found)} partition families, none a selector singles out" if found else "none"
        skip(fleet_lacks(driver.device_class, WHAT, has))
    node, parts, selector = usable[0]
    cls = f"{namespace}-part"
    objects.create(b.device_class(cls, selectors=[f'device.driver == "{driver.driver}"', str(selector)]))
    host = {"kubernetes.io/hostname": node.labels["kubernetes.io/hostname"]}
    create_claim_pod(kube, namespace, "part", [b.exact_request("part", cls)], host)
    wait_phase(kube, namespace, "part", "Running")

    [(request, pool, device)] = allocation(kube, namespace, "part")
    assert (request, pool) == ("part", node.node)
    assert device in {d["name"] for d in parts}


@pytest.mark.feature_gate("DRAConsumableCapacity")
def test_a_shared_device_serves_two_claims(
    kube: Kube, namespace: str, driver: DriverUnderTest, external_inventory: Callable[[], Inventory]
) -> None:
    inv = external_inventory()
    shared = [(n, d) for n in inv.nodes for d in n.matching if d.get("allowMultipleAllocations")]
    if not shared:
        skip(
            fleet_lacks(
                driver.device_class,
                "consumable capacity (devices with allowMultipleAllocations)",
                inv.summary(),
            )
        )
    node, device = shared[0]
    found = unique_attribute(node, [device])
    if found is None:
        skip(fleet_lacks(driver.device_class, f"an attribute singling out {device['name']}", node.node))
    _, name, value = found
    host = {"kubernetes.io/hostname": node.labels["kubernetes.io/hostname"]}
    for pod in ("first", "second"):
        request = b.exact_request("gpu", driver.device_class, selectors=[equals(driver.driver, name, value)])
        create_claim_pod(kube, namespace, pod, [request], host)
    for pod in ("first", "second"):
        wait_phase(kube, namespace, pod, "Running")

    assert (
        allocation(kube, namespace, "first")
        == allocation(kube, namespace, "second")
        == [("gpu", node.node, device["name"])]
    )
