"""Per-device node selection (KEP-4815, DRAPartitionableDevices): a slice with
`perDeviceNodeSelection: true` says per device where it can be used, so one device can span
several nodes (an NVLink domain of a rack). A claim allocated such a device is usable on every
node the device's selector picks and nowhere else, and the allocation carries that selector.
Fields: k8s.io/api resource/v1 types.go ResourceSliceSpec.PerDeviceNodeSelection,
Device.NodeSelector/AllNodes @ v0.34.4 and v0.37.2. Upstream counterpart: kubernetes
test/e2e/dra multi-host / partitionable-devices cases."""

from __future__ import annotations

import pytest

from fixtures.nodes import MakePool
from harness.clusters.nodes import POOL_LABEL as POOL
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created
from harness.kit.pods import wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, wait_for

DRIVER = "fabric.dra-harness.io"
DOMAIN = "dra-harness.io/nvlink-domain"

pytestmark = pytest.mark.feature_gate("DRAPartitionableDevices")


def _fabric_slice(namespace: str, devices: list[Obj]) -> Obj:
    """A slice of devices that each say where they can be used (no nodeName on the slice)."""
    body = b.resource_slice(
        f"{namespace}-fabric", driver=DRIVER, node_name="", devices=devices, pool=f"{namespace}-fabric"
    )
    del body["spec"]["nodeName"]
    body["spec"]["perDeviceNodeSelection"] = True
    return body


def _in_domain(domain: str) -> Obj:
    return {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": DOMAIN, "operator": "In", "values": [domain]}]}]
    }


def _pinned_pod(namespace: str, name: str, node: str) -> Obj:
    return b.pod(
        name,
        namespace,
        containers=[b.container(claims=["fabric"])],
        claims={"fabric": "fabric"},
        node_selector={"kubernetes.io/hostname": node},
    )


def test_a_claim_on_a_multi_host_device_runs_on_every_node_of_its_domain_and_only_there(
    kube: Kube, namespace: str, node_pool: MakePool, objects: Created
) -> None:
    domain = namespace  # unique per test, a valid label value
    rack = node_pool(2, suffix="r", labels={DOMAIN: domain}).node_names()
    [outside] = node_pool(1, suffix="x").node_names()
    device_class = f"{namespace}-fabric"
    objects.create(
        b.device_class(
            device_class,
            selectors=[
                f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].owner == "{namespace}"'
            ],
        )
    )
    domain_device = b.device("nvl-domain-0", {"owner": namespace, "role": "domain"})
    domain_device["nodeSelector"] = _in_domain(domain)
    anywhere = b.device("fabric-manager", {"owner": namespace, "role": "manager"}) | {"allNodes": True}
    objects.create(_fabric_slice(namespace, [domain_device, anywhere]))
    only_domain = f'device.attributes["{DRIVER}"].role == "domain"'
    kube.create(
        b.resource_claim(
            "fabric", namespace, [b.exact_request("fabric", device_class, selectors=[only_domain])]
        )
    )

    for i, node in enumerate(rack):
        kube.create(_pinned_pod(namespace, f"rank-{i}", node))
    kube.create(_pinned_pod(namespace, "outsider", outside))

    for i in range(len(rack)):
        wait_phase(kube, namespace, f"rank-{i}", "Running")
    wait_unschedulable(kube, namespace, "outsider")
    claim = wait_for(
        lambda: kube.get(*kinds.RESOURCE_CLAIM, "fabric", namespace),
        lambda c: len((c.get("status") or {}).get("reservedFor") or []) == 2,
        timeout=TIMEOUTS.claim_allocated,
        describe="claim fabric reserved for both ranks",
    )
    [result] = allocated_devices(claim)
    assert (result["pool"], result["device"]) == (f"{namespace}-fabric", "nvl-domain-0")
    assert claim["status"]["allocation"]["nodeSelector"] == _in_domain(domain)
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["rank-0", "rank-1"]


def test_a_device_named_for_one_node_pulls_the_pod_there_and_an_all_nodes_device_goes_anywhere(
    kube: Kube, namespace: str, node_pool: MakePool, objects: Created
) -> None:
    pool = node_pool(3, suffix="n")
    nodes = pool.node_names()
    device_class = f"{namespace}-fabric"
    objects.create(b.device_class(device_class, selectors=[f'device.driver == "{DRIVER}"']))
    pinned = b.device("nic-2", {"owner": namespace, "role": "pinned"})
    pinned["nodeName"] = nodes[2]
    anywhere = b.device("fabric-manager", {"owner": namespace, "role": "manager"})
    anywhere["allNodes"] = True
    objects.create(_fabric_slice(namespace, [pinned, anywhere]))
    role = f'device.attributes["{DRIVER}"].role'
    for name, want in (("pinned", "pinned"), ("manager", "manager")):
        request = b.exact_request("dev", device_class, selectors=[f'{role} == "{want}"'])
        kube.create(b.claim_template(name, namespace, [request]))
        kube.create(b.template_pod(name, namespace, name, claim="dev", node_selector={POOL: pool.name}))

    on_pinned = wait_phase(kube, namespace, "pinned", "Running")
    wait_phase(kube, namespace, "manager", "Running")

    assert on_pinned["spec"]["nodeName"] == nodes[2]
    allocations = {
        c["metadata"]["name"].split("-")[0]: c["status"]["allocation"]
        for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)
    }
    pinned_to = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [nodes[2]]}]}
        ]
    }
    assert allocations["pinned"]["nodeSelector"] == pinned_to
    assert "nodeSelector" not in allocations["manager"]
