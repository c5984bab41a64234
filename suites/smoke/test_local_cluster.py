"""The local cluster does what every other suite relies on: real scheduling onto
simulated nodes, and real DRA allocation by the real scheduler."""

from __future__ import annotations

from fixtures.nodes import MakePool
from harness.clusters.nodes import POOL_LABEL
from harness.kit import builders as b
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import wait_phase

DRIVER = "smoke.dra-harness.io"


def test_pod_is_bound_to_a_simulated_node_and_runs(kube: Kube, namespace: str, node_pool: MakePool) -> None:
    pool = node_pool(1)
    kube.create(b.pod("plain", namespace, node_selector={POOL_LABEL: pool.name}))

    pod = wait_phase(kube, namespace, "plain", "Running")

    assert pod["spec"]["nodeName"] == pool.node_names()[0]
    assert pod["status"]["containerStatuses"][0]["ready"] is True


def test_scheduler_allocates_a_device_from_a_resource_slice(
    kube: Kube, namespace: str, node_pool: MakePool, objects: Created
) -> None:
    pool = node_pool(1)
    node = pool.node_names()[0]
    class_name = f"{namespace}-gpu"
    objects.create(b.device_class(class_name, selectors=[f'device.driver == "{DRIVER}"']))
    objects.create(  # cluster-scoped, and no ownerReference to the node: deleted by the test
        b.resource_slice(
            f"{node}-smoke",
            driver=DRIVER,
            node_name=node,
            devices=[
                b.device("gpu-0", {"productName": "NVIDIA H100 80GB HBM3"}),
                b.device("gpu-1", {"productName": "NVIDIA L4"}),
            ],
        )
    )
    kube.create(
        b.claim_template(
            "one-h100",
            namespace,
            [
                b.exact_request(
                    "gpu",
                    class_name,
                    selectors=[
                        'device.attributes["smoke.dra-harness.io"].productName.startsWith("NVIDIA H100")'
                    ],
                )
            ],
        )
    )
    kube.create(b.template_pod("trainer", namespace, "one-h100"))

    pod = wait_phase(kube, namespace, "trainer", "Running")

    [claim] = claims_of(kube, namespace, "trainer")
    assert allocated_devices(claim) == [{"request": "gpu", "driver": DRIVER, "pool": node, "device": "gpu-0"}]
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}
    ]
    assert pod["spec"]["nodeName"] == node
    assert pod["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}
    ]
