"""Unchanged pods that request `nvidia.com/gpu` get DRA devices through a DeviceClass's
extendedResourceName (KEP-5004), with exactly the claim and pod status the scheduler writes."""

from __future__ import annotations

import pytest

from fixtures.driver import DriverUnderTest, MakeGpuPool
from harness.clusters.base import Cell
from harness.core.expectations import (
    extended_claim_blocks_owner_deletion,
    implicit_names_recognized,
    init_containers_reuse_bridged_devices,
)
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.verification import verify
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import (
    own_reasons,
    scheduling_message,
    wait_phase,
    wait_unschedulable,
)

CLAIM_ANNOTATION = {"resource.kubernetes.io/extended-resource-claim": "true"}

pytestmark = [pytest.mark.feature_gate("DRAExtendedResource")]


@pytest.mark.bridged
def test_legacy_gpu_request_gets_a_scheduler_created_claim(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=4)
    legacy = b.container(limits={driver.extended_resource: "2"})
    kube.create(b.pod("legacy", namespace, containers=[legacy], node_selector=pool.node_selector))

    pod = wait_phase(kube, namespace, "legacy", "Running")

    [claim] = claims_of(kube, namespace, "legacy")
    meta = claim["metadata"]
    assert meta["generateName"] == "legacy-extended-resources-"
    assert meta["annotations"] == CLAIM_ANNOTATION
    owner = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "legacy",
        "uid": pod["metadata"]["uid"],
        "controller": True,
    }
    if extended_claim_blocks_owner_deletion(cell.number):
        owner["blockOwnerDeletion"] = True
    assert meta["ownerReferences"] == [owner]
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-0",
            "exactly": {"deviceClassName": driver.device_class, "allocationMode": "ExactCount", "count": 2},
        }
    ]
    results = allocated_devices(claim)
    assert [(r["request"], r["driver"], r["pool"]) for r in results] == [
        ("container-0-request-0", driver.driver, pool.nodes[0])
    ] * 2
    assert len({r["device"] for r in results}) == 2
    assert pod["status"]["extendedResourceClaimStatus"] == {
        "resourceClaimName": meta["name"],
        "requestMappings": [
            {
                "containerName": "main",
                "resourceName": driver.extended_resource,
                "requestName": "container-0-request-0",
            }
        ],
    }
    assert verify(kube, driver.driver, pool.nodes, [pod]) == []


@pytest.mark.bridged
@pytest.mark.kwok_pods  # its init container (the pause image) never ends on a real node
def test_init_and_regular_containers_share_one_claim_with_exact_mappings(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=4)
    gpu = driver.extended_resource
    kube.create(
        b.pod(
            "multi",
            namespace,
            node_selector=pool.node_selector,
            init_containers=[b.container("init", limits={gpu: "3"})],
            containers=[
                b.container("main", limits={"cpu": "100m", gpu: "2"}),
                b.container("aux", limits={gpu: "1"}),
            ],
        )
    )

    if not init_containers_reuse_bridged_devices(cell.number):  # 1.34: 3 + 2 + 1 devices of 4
        stuck = wait_unschedulable(kube, namespace, "multi")
        assert own_reasons(scheduling_message(stuck)) == {"cannot allocate all claims": 1}
        return
    pod = wait_phase(kube, namespace, "multi", "Running")

    [claim] = claims_of(kube, namespace, "multi")
    # Index i counts initContainers then containers; j is the resource's place among the
    # container's sorted request names (cpu < nvidia.com/gpu). The init container reuses the
    # long-lived containers' devices (2 + 1 >= 3), so it adds no request of its own.
    exactly = {"deviceClassName": driver.device_class, "allocationMode": "ExactCount"}
    assert claim["spec"]["devices"]["requests"] == [
        {"name": "container-1-request-1", "exactly": {**exactly, "count": 2}},
        {"name": "container-2-request-0", "exactly": {**exactly, "count": 1}},
    ]
    assert len(allocated_devices(claim)) == 3
    assert pod["status"]["extendedResourceClaimStatus"]["requestMappings"] == [
        {"containerName": "main", "resourceName": gpu, "requestName": "container-1-request-1"},
        {"containerName": "aux", "resourceName": gpu, "requestName": "container-2-request-0"},
        {"containerName": "init", "resourceName": gpu, "requestName": "container-1-request-1"},
        {"containerName": "init", "resourceName": gpu, "requestName": "container-2-request-0"},
    ]


@pytest.mark.bridged
def test_two_extended_resources_in_one_container_get_one_request_each(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=4)
    other = f"{namespace}-any"
    implicit = f"deviceclass.resource.kubernetes.io/{other}"
    objects.create(b.device_class(other, selectors=[f'device.driver == "{driver.driver}"']))
    kube.create(
        b.pod(
            "two",
            namespace,
            node_selector=pool.node_selector,
            containers=[b.container(limits={"cpu": "100m", driver.extended_resource: "1", implicit: "2"})],
        )
    )

    pod = wait_phase(kube, namespace, "two", "Running")

    [claim] = claims_of(kube, namespace, "two")
    requests = [
        (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
        for r in claim["spec"]["devices"]["requests"]
    ]
    if not implicit_names_recognized(cell.number):  # 1.34: the implicit name gets nothing at all
        assert requests == [("container-0-request-2", driver.device_class, 1)]
        assert [
            m["resourceName"] for m in pod["status"]["extendedResourceClaimStatus"]["requestMappings"]
        ] == [driver.extended_resource]
        assert len(allocated_devices(claim)) == 1
        return
    # Sorted request names: cpu, deviceclass.resource.kubernetes.io/..., nvidia.com/gpu.
    assert [
        (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
        for r in claim["spec"]["devices"]["requests"]
    ] == [
        ("container-0-request-1", other, 2),
        ("container-0-request-2", driver.device_class, 1),
    ]
    assert pod["status"]["extendedResourceClaimStatus"]["requestMappings"] == [
        {"containerName": "main", "resourceName": implicit, "requestName": "container-0-request-1"},
        {
            "containerName": "main",
            "resourceName": driver.extended_resource,
            "requestName": "container-0-request-2",
        },
    ]
    assert len({r["device"] for r in allocated_devices(claim)}) == 3


@pytest.mark.bridged
def test_zero_request_creates_no_claim_and_no_status(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    kube.create(
        b.legacy_pod("zero", namespace, driver.extended_resource, 0, node_selector=pool.node_selector)
    )

    pod = wait_phase(kube, namespace, "zero", "Running")

    assert kube.list(*kinds.RESOURCE_CLAIM, namespace) == []
    assert "extendedResourceClaimStatus" not in pod["status"]


def test_one_container_with_three_explicit_resources_gets_one_request_each(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created
) -> None:
    """Upstream twin: test/e2e/dra/dra.go @ v1.37.2 "must run a pod with explicit extended
    resource with one container three resources" (three classes, one explicit name each)."""
    pool = gpu_pool(nodes=1, gpus=4)
    tag = namespace.rsplit("-", 1)[1]
    names = [f"three.dra-harness.io/{tag}-{i}" for i in range(3)]
    for i, name in enumerate(names):
        selectors = [f'device.driver == "{driver.driver}"']
        objects.create(b.device_class(f"{namespace}-r{i}", selectors=selectors, extended_resource_name=name))
    limits = dict.fromkeys(names, "1")
    kube.create(
        b.pod("three", namespace, node_selector=pool.node_selector, containers=[b.container(limits=limits)])
    )

    pod = wait_phase(kube, namespace, "three", "Running")

    [claim] = claims_of(kube, namespace, "three")
    # Sorted: 1.34.4 lists the requests in map order (request-1 first, seen here), later
    # minors by resource name; the pairing of request, class and name is what holds.
    assert sorted(
        (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
        for r in claim["spec"]["devices"]["requests"]
    ) == [(f"container-0-request-{i}", f"{namespace}-r{i}", 1) for i in range(3)]
    mappings = pod["status"]["extendedResourceClaimStatus"]["requestMappings"]
    assert sorted(mappings, key=lambda m: m["requestName"]) == [
        {"containerName": "main", "resourceName": name, "requestName": f"container-0-request-{i}"}
        for i, name in enumerate(names)
    ]
    assert len({r["device"] for r in allocated_devices(claim)}) == 3
