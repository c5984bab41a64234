"""Legacy-style and claim-style pods on one DRA pool, the same name backed by the device
plugin on one pool and by DRA on another, GPU tiers, and what quotas count."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.driver import DriverNodes, DriverUnderTest, MakeGpuPool
from fixtures.nodes import MakePool
from fixtures.requirements import fleet_lacks, skip
from harness.clusters.base import Cell
from harness.clusters.nodes import POOL_LABEL
from harness.core.expectations import (
    device_plugin_wins_where_it_advertises,
    quota_counts_implicit_device_class_name,
)
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.migration import detect_served_both_ways
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.fleet_inventory import Inventory, class_selectors
from harness.kit.kube import ForbiddenError, Kube
from harness.kit.objects import Created
from harness.kit.pods import scheduling_message, unschedulable_reasons, wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.feature_gate("DRAExtendedResource")]


def _product_selector(driver: DriverUnderTest, product: str) -> str:
    return f'device.attributes["{driver.driver}"].productName == "{product}"'


def _two_products(inv: Inventory, driver: DriverUnderTest) -> tuple[DriverNodes, DriverNodes]:
    """An external driver's nodes of its first two products (its productName attribute), each
    product with a node of 2 such devices; skips naming the products the fleet has otherwise."""
    per_product: dict[str, list[str]] = {}
    for node in inv.nodes:
        products = [
            str((d.get("attributes") or {}).get("productName", {}).get("string")) for d in node.matching
        ]
        for product in sorted(set(products)):
            if products.count(product) >= 2 and product != "None":
                per_product.setdefault(product, []).append(node.node)
    if len(per_product) < 2:
        named = sum("productName" in (d.get("attributes") or {}) for n in inv.nodes for d in n.matching)
        has = f"{', '.join(per_product)} only" if per_product else f"{named} devices with productName"
        skip(fleet_lacks(driver.device_class, "2 devices of each of 2 products (productName) on a node", has))
    a, b_ = sorted(per_product)[:2]
    return (
        DriverNodes(a, tuple(per_product[a]), 2, a),
        DriverNodes(b_, tuple(per_product[b_]), 2, b_),
    )


@pytest.mark.bridged
def test_legacy_and_claim_pods_share_a_pool_without_exceeding_it(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool
) -> None:
    pool = gpu_pool(nodes=1, gpus=4)
    kube.create(
        b.claim_template(
            "by-product",
            namespace,
            [
                b.exact_request(
                    "gpu",
                    driver.device_class,
                    selectors=[_product_selector(driver, pool.product)] if pool.product else [],
                )
            ],
        )
    )
    legacy = pool.gpus_per_node - 2  # the claim pods take one each
    kube.create(
        b.legacy_pod("legacy", namespace, driver.extended_resource, legacy, node_selector=pool.node_selector)
    )
    for name in ("claim-a", "claim-b"):
        kube.create(b.template_pod(name, namespace, "by-product", node_selector=pool.node_selector))
    for name in ("legacy", "claim-a", "claim-b"):
        wait_phase(kube, namespace, name, "Running")
    kube.create(
        b.legacy_pod("one-too-many", namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
    )

    pod = wait_unschedulable(kube, namespace, "one-too-many")

    assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == 1
    devices = [
        r["device"]
        for name in ("legacy", "claim-a", "claim-b")
        for c in claims_of(kube, namespace, name)
        for r in allocated_devices(c)
    ]
    assert len(devices) == pool.gpus_per_node
    assert len(set(devices)) == pool.gpus_per_node


@pytest.mark.bridged
def test_device_plugin_pool_and_dra_pool_serve_the_same_name(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    node_pool: MakePool,
    cell: Cell,
) -> None:
    legacy_pool = node_pool(1, suffix="dp", extended_resources={driver.extended_resource: "4"})
    dra_pool = gpu_pool(nodes=1, gpus=4)
    both_pool = gpu_pool(nodes=1, gpus=4, suffix="both", device_plugin=True)
    for name, selector in (
        ("on-dp", {POOL_LABEL: legacy_pool.name}),
        ("on-dra", dra_pool.node_selector),
        ("on-both", both_pool.node_selector),
    ):
        kube.create(b.legacy_pod(name, namespace, driver.extended_resource, 1, node_selector=selector))

    pods = {name: wait_phase(kube, namespace, name, "Running") for name in ("on-dp", "on-dra", "on-both")}

    assert "extendedResourceClaimStatus" not in pods["on-dp"]["status"]
    assert claims_of(kube, namespace, "on-dp") == []
    assert pods["on-dra"]["status"]["extendedResourceClaimStatus"]["requestMappings"][0]["resourceName"] == (
        driver.extended_resource
    )
    assert len(claims_of(kube, namespace, "on-dra")) == 1
    # A node that advertises the name in allocatable is served by the device plugin, even
    # though the driver publishes the same GPUs there: no claim, no DRA allocation
    # (kubernetes#139141; the source lines per minor are in the expectation).
    assert device_plugin_wins_where_it_advertises(cell.number)
    assert "extendedResourceClaimStatus" not in pods["on-both"]["status"]
    assert claims_of(kube, namespace, "on-both") == []
    # The scan names the node (its own nodes only: other tests' may serve both ways too).
    findings = detect_served_both_ways(
        [n for n in kube.list(*kinds.NODE) if n["metadata"]["name"] in (*both_pool.nodes, *dra_pool.nodes)],
        kube.list(*kinds.RESOURCE_SLICE),
        [kube.get(*kinds.DEVICE_CLASS, driver.device_class)],
        cell.number,
    )
    assert [(f.check, f.subject) for f in findings] == [("served-both-ways", f"node/{both_pool.nodes[0]}")]


# Serial: with no node selector, any H100 or L4 on the cluster meets the tier's class, and in
# a parallel run another test's pool of that product may be there (make test: 4 workers).
@pytest.mark.serial
def test_gpu_tiers_by_product_get_their_own_extended_resource_names(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    objects: Created,
    external_inventory: Callable[[], Inventory],
) -> None:
    tag = namespace.rsplit("-", 1)[1]
    if driver.source == "external":
        pools = _two_products(external_inventory(), driver)
    else:
        pools = (
            gpu_pool(nodes=1, gpus=2, profile="h100-80gb-hbm3", suffix="h100"),
            gpu_pool(nodes=1, gpus=2, profile="l4", suffix="l4"),
        )
    tiers = {
        tier: (pool, f"tier.dra-harness.io/{tier}-{tag}")
        for tier, pool in zip(("a", "b"), pools, strict=True)
    }
    # A tier is the driver's class narrowed to one product: a product's MIG devices carry its
    # productName too (NVIDIA's), and the class, not the product, keeps them out.
    base = [f'device.driver == "{driver.driver}"', *class_selectors(kube, driver.device_class)]
    for tier, (pool, resource) in tiers.items():
        objects.create(
            b.device_class(
                f"{namespace}-{tier}",
                extended_resource_name=resource,
                selectors=[*dict.fromkeys(base), _product_selector(driver, pool.product)],
            )
        )
        # No node selector: the tier alone decides where the pod lands.
        kube.create(b.pod(f"wants-{tier}", namespace, containers=[b.container(limits={resource: "2"})]))

    for tier, (pool, _) in tiers.items():
        pod = wait_phase(kube, namespace, f"wants-{tier}", "Running")
        assert pod["spec"]["nodeName"] in pool.nodes
        [claim] = claims_of(kube, namespace, f"wants-{tier}")
        assert {r["pool"] for r in allocated_devices(claim)} == {pod["spec"]["nodeName"]}
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == f"{namespace}-{tier}"


@pytest.mark.bridged
def test_quota_counts_bridged_and_claimed_devices_under_all_three_names(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=4)
    names = [
        f"requests.{driver.extended_resource}",
        f"{driver.device_class}.deviceclass.resource.k8s.io/devices",
        f"requests.deviceclass.resource.kubernetes.io/{driver.device_class}",
    ]
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gpus", "namespace": namespace},
            "spec": {"hard": dict.fromkeys(names, "3")},
        }
    )
    wait_for(
        lambda: kube.get(*kinds.RESOURCE_QUOTA, "gpus", namespace),
        lambda q: "used" in q.get("status", {}),
        timeout=TIMEOUTS.api_object,
        describe="quota gpus observed by the quota controller",
    )
    kube.create(
        b.legacy_pod("legacy", namespace, driver.extended_resource, 2, node_selector=pool.node_selector)
    )
    wait_phase(kube, namespace, "legacy", "Running")

    counted = names if quota_counts_implicit_device_class_name(cell.number) else names[:2]  # 1.34: 2 names
    quota = wait_for(
        lambda: kube.get(*kinds.RESOURCE_QUOTA, "gpus", namespace),
        lambda q: q["status"].get("used") == dict.fromkeys(counted, "2"),
        timeout=TIMEOUTS.api_object,
        describe=f"quota usage 2 under {counted}",
    )
    assert quota["status"]["hard"] == dict.fromkeys(names, "3")
    with pytest.raises(ForbiddenError) as refused:
        kube.create(
            b.pod("over", namespace, containers=[b.container(limits={driver.extended_resource: "2"})])
        )
    assert f"exceeded quota: gpus, requested: {names[0]}=2, used: {names[0]}=2, limited: {names[0]}=3" in str(
        refused.value.body
    )
