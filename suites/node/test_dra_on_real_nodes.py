"""DRA through a real kubelet: the kubelet calls the fake driver's kubelet plugin
(NodePrepareResources / NodeUnprepareResources), containerd applies the CDI spec it wrote, and
the container sees exactly the devices the scheduler allocated (test/e2e_node/dra_test.go
checks the same path upstream)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_driver.facts.profiles import gpu_uuid
from fake_driver.kubeletplugin.cdi import cdi_device_id, spec_path
from fixtures.real.realnodes import OLD_POOL, RealNodes, oldest_minor
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.detectors import detect_double_stack
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.nodepods import (
    REAL_KUBELET_GRACE_SECONDS,
    container_env,
    container_output,
    device_env,
    dra_calls,
    env_pod,
    view_container,
)
from harness.kit.objects import Created
from harness.kit.podresources import Held, get_held, list_held
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.real_node]
DRIVER = "gpu.nvidia.com"
PREPARE, UNPREPARE = ("NodePrepareResources", "OK"), ("NodeUnprepareResources", "OK")


@pytest.fixture
def gpu_class(real_nodes: RealNodes, real_namespace: str) -> Iterator[str]:
    name = f"{real_namespace}-gpu"
    real_nodes.kube.create(b.device_class(name, selectors=[f'device.driver == "{DRIVER}"']))
    yield name
    real_nodes.kube.delete(*kinds.DEVICE_CLASS, name)


def expected_env(node: str, devices: list[str], claim: str) -> dict[str, str]:
    uuids = {d: gpu_uuid(node, int(d.removeprefix("gpu-"))) for d in devices}
    env = {f"DRA_DEVICE_{d.upper().replace('-', '_')}": u for d, u in uuids.items()}
    return env | {"NVIDIA_VISIBLE_DEVICES": ",".join(uuids.values()), "DRA_CLAIM": claim}


def test_claim_template_pod_sees_exactly_its_devices_and_is_unprepared_after(
    real_nodes: RealNodes, real_namespace: str, gpu_class: str
) -> None:
    kube, ns, node = real_nodes.kube, real_namespace, real_nodes.node("dra")
    kube.create(b.claim_template("two", ns, [b.exact_request("gpu", gpu_class, count=2)]))
    before = dra_calls(kube, node)
    kube.create(env_pod("p", ns, real_nodes.image, node, claim_templates={"gpu": "two"}))

    wait_phase(kube, ns, "p", "Running")

    [claim] = claims_of(kube, ns, "p")
    devices = sorted(r["device"] for r in allocated_devices(claim))
    assert len(devices) == 2
    name = claim["metadata"]["name"]
    assert device_env(container_env(kube, ns, "p")) == expected_env(node, devices, f"{ns}/{name}")
    spec = spec_path(real_nodes.cdi_dir(node), DRIVER, claim["metadata"]["uid"])
    assert spec.exists()
    after = dra_calls(kube, node)
    assert after.get(PREPARE, 0) - before.get(PREPARE, 0) == 1
    assert after.get(UNPREPARE, 0) == before.get(UNPREPARE, 0)

    kube.delete(*kinds.POD, "p", ns)
    wait_for(
        lambda: dra_calls(kube, node).get(UNPREPARE, 0) - before.get(UNPREPARE, 0),
        lambda n: n == 1,
        timeout=TIMEOUTS.deletion,
        describe=f"one NodeUnprepareResources on {node}",
    )
    assert not spec.exists()


def test_a_sibling_container_of_the_claiming_pod_sees_none_of_its_devices(
    real_nodes: RealNodes, real_namespace: str, gpu_class: str
) -> None:
    """Isolation (the checks NVIDIA's AI-conformance validators make): the container naming the
    claim gets exactly its device, the pod's other container none, through the same kit
    helpers qualify's node side uses for any driver (harness.kit.nodepods.view_container)."""
    kube, ns, node = real_nodes.kube, real_namespace, real_nodes.node("dra")
    kube.create(b.claim_template("one", ns, [b.exact_request("gpu", gpu_class)]))
    pod = b.pod(
        "p",
        ns,
        containers=[
            view_container("claims", real_nodes.image, ["env"], claims=["gpu"]),
            view_container("plain", real_nodes.image, ["env"]),
        ],
        claim_templates={"gpu": "one"},
        node_selector={"kubernetes.io/hostname": node},
        grace_seconds=REAL_KUBELET_GRACE_SECONDS,
    )
    pod["spec"]["automountServiceAccountToken"] = False
    kube.create(pod)

    wait_phase(kube, ns, "p", "Running")

    [claim] = claims_of(kube, ns, "p")
    [device] = [r["device"] for r in allocated_devices(claim)]
    env = {
        c: device_env(
            dict(
                line.split("=", 1) for line in container_output(kube, ns, "p", c).splitlines() if "=" in line
            )
        )
        for c in ("claims", "plain")
    }
    assert env["claims"] == expected_env(node, [device], f"{ns}/{claim['metadata']['name']}")
    assert env["plain"] == {}


@pytest.mark.feature_gate("DRAResourceClaimDeviceStatus")
def test_the_drivers_plugin_reports_each_prepared_device_ready_in_the_claim_status(
    real_nodes: RealNodes, real_namespace: str, gpu_class: str
) -> None:
    """The "dra" pool sets device_status: the plugin writes status.devices itself once it has
    prepared the claim (fake_driver/kubeletplugin/devicestatus.py), as upstream's test driver
    does from the pod's node (test/e2e/dra/dra.go @ v1.37.2)."""
    kube, ns, node = real_nodes.kube, real_namespace, real_nodes.node("dra")
    kube.create(b.claim_template("one", ns, [b.exact_request("gpu", gpu_class)]))
    kube.create(env_pod("p", ns, real_nodes.image, node, claim_templates={"gpu": "one"}))

    wait_phase(kube, ns, "p", "Running")

    [claim] = claims_of(kube, ns, "p")
    [result] = allocated_devices(claim)
    device, uid = result["device"], claim["metadata"]["uid"]
    cdi_id = cdi_device_id(DRIVER, uid, device)
    [entry] = claim["status"]["devices"]
    [ready] = entry.pop("conditions")
    assert ready.pop("lastTransitionTime")
    assert ready == {
        "type": "Ready",
        "status": "True",
        "reason": "Prepared",
        "message": f"CDI devices {cdi_id} written",
    }  # no observedGeneration: claims carry no metadata.generation (resourceclaim/strategy.go)
    assert entry == {
        "driver": DRIVER,
        "pool": node,
        "device": device,
        "data": {"visibleDevice": gpu_uuid(node, int(device.removeprefix("gpu-"))), "cdiDeviceIDs": [cdi_id]},
    }


@pytest.mark.feature_gate("DRAExtendedResource")
def test_bridged_legacy_gpu_pod_sees_the_allocated_gpu(
    real_nodes: RealNodes, real_namespace: str, real_objects: Created
) -> None:
    kube, ns, node = real_nodes.kube, real_namespace, real_nodes.node("dra")
    cls = f"{ns}-bridge"
    selectors = [f'device.driver == "{DRIVER}"']
    real_objects.create(b.device_class(cls, selectors=selectors, extended_resource_name="nvidia.com/gpu"))
    kube.create(env_pod("legacy", ns, real_nodes.image, node, limits={"nvidia.com/gpu": "1"}))
    wait_phase(kube, ns, "legacy", "Running")
    [claim] = claims_of(kube, ns, "legacy")
    [device] = [r["device"] for r in allocated_devices(claim)]
    env = device_env(container_env(kube, ns, "legacy"))
    assert env == expected_env(node, [device], f"{ns}/{claim['metadata']['name']}")


def test_one_container_gets_a_device_plugin_resource_and_a_claim(
    real_nodes: RealNodes, real_namespace: str, gpu_class: str
) -> None:
    """Upstream e2e "supports extended resources together with ResourceClaim": the kubelet
    applies the device plugin's Allocate response and the claim's CDI devices to one container."""
    kube, ns, node = real_nodes.kube, real_namespace, real_nodes.node("ds")
    kube.create(b.claim_template("one", ns, [b.exact_request("gpu", gpu_class)]))
    pod = env_pod(
        "both", ns, real_nodes.image, node, limits={"nvidia.com/gpu": "1"}, claim_templates={"gpu": "one"}
    )
    kube.create(pod)

    wait_phase(kube, ns, "both", "Running")

    [claim] = claims_of(kube, ns, "both")
    env = device_env(container_env(kube, ns, "both"))
    assert env == expected_env(node, ["gpu-0"], f"{ns}/{claim['metadata']['name']}")
    assert dra_calls(kube, node).get(PREPARE) == 1


def test_device_plugin_and_dra_driver_hand_the_same_gpu_to_two_containers(
    real_nodes: RealNodes, real_namespace: str, gpu_class: str
) -> None:
    """The double stack on one node: both stacks own the node's single GPU, neither knows the
    other, so the legacy pod and the claim pod run on the same GPU UUID."""
    kube, ns, node = real_nodes.kube, real_namespace, real_nodes.node("ds")
    kube.create(env_pod("legacy", ns, real_nodes.image, node, limits={"nvidia.com/gpu": "1"}))
    kube.create(b.claim_template("one", ns, [b.exact_request("gpu", gpu_class)]))
    kube.create(env_pod("dra", ns, real_nodes.image, node, claim_templates={"gpu": "one"}))

    for pod in ("legacy", "dra"):
        wait_phase(kube, ns, pod, "Running")

    the_gpu = gpu_uuid(node, 0)
    assert device_env(container_env(kube, ns, "legacy")) == {"NVIDIA_VISIBLE_DEVICES": the_gpu}
    assert container_env(kube, ns, "dra")["NVIDIA_VISIBLE_DEVICES"] == the_gpu
    # The detector names the node from what the kubelet and the plugin published.
    findings = detect_double_stack(
        [kube.get(*kinds.NODE, node)],
        kube.list(*kinds.RESOURCE_SLICE),
        [],
        "nvidia.com/gpu",
        [DRIVER],
    )
    assert [(f.check, f.subject) for f in findings] == [("double-stack", f"node/{node}")]


def test_a_kubelet_of_the_oldest_minor_prepares_the_claim_too(
    real_nodes: RealNodes, real_namespace: str, gpu_class: str
) -> None:
    oldest = oldest_minor()
    if not real_nodes.has_pool(OLD_POOL):
        pytest.skip(
            f"no node of {oldest.name}: the cell is {oldest.name}, or `make nodeparts` has not built it"
        )
    kube, ns, node = real_nodes.kube, real_namespace, real_nodes.node(OLD_POOL)
    assert kube.get(*kinds.NODE, node)["status"]["nodeInfo"]["kubeletVersion"] == oldest.kubernetes
    kube.create(b.claim_template("one", ns, [b.exact_request("gpu", gpu_class)]))
    kube.create(env_pod("p", ns, real_nodes.image, node, claim_templates={"gpu": "one"}))

    wait_phase(kube, ns, "p", "Running")

    [claim] = claims_of(kube, ns, "p")
    [device] = [r["device"] for r in allocated_devices(claim)]
    env = device_env(container_env(kube, ns, "p"))
    assert env == expected_env(node, [device], f"{ns}/{claim['metadata']['name']}")
    assert dra_calls(kube, node).get(PREPARE) == 1


def _held_by(real_nodes: RealNodes, ns: str, pod: str) -> list[Held]:
    """What the kubelet's PodResources API should say `pod`'s container holds: its claim's devices."""
    [claim] = claims_of(real_nodes.kube, ns, pod)
    uid, source = claim["metadata"]["uid"], f"dra {ns}/{claim['metadata']['name']}"
    return [
        Held(
            "main",
            source,
            f"{r['driver']}/{r['pool']}/{r['device']}",
            (cdi_device_id(DRIVER, uid, r["device"]),),
        )
        for r in allocated_devices(claim)
    ]


@pytest.mark.feature_gate("DRAExtendedResource")
def test_pod_resources_reports_the_dra_devices_of_a_claim_pod_and_a_bridged_pod_until_they_end(
    real_nodes: RealNodes, real_namespace: str, gpu_class: str, real_objects: Created
) -> None:
    """Monitoring agents attribute GPUs to pods through the kubelet's PodResources API (KEP-3695,
    GA in 1.36): List and Get name each container's claim, its driver/pool/device and CDI device,
    for a claim pod and for a bridged pod (the scheduler's claim), and List drops them once the
    pods are gone."""
    kube, ns, node = real_nodes.kube, real_namespace, real_nodes.node("dra")
    selectors = [f'device.driver == "{DRIVER}"']
    real_objects.create(
        b.device_class(f"{ns}-bridge", selectors=selectors, extended_resource_name="nvidia.com/gpu")
    )
    kube.create(b.claim_template("one", ns, [b.exact_request("gpu", gpu_class)]))
    kube.create(env_pod("claimed", ns, real_nodes.image, node, claim_templates={"gpu": "one"}))
    kube.create(env_pod("bridged", ns, real_nodes.image, node, limits={"nvidia.com/gpu": "1"}))
    for pod in ("claimed", "bridged"):
        wait_phase(kube, ns, pod, "Running")
    root = real_nodes.kubelet_root(node)

    listed = list_held(root)

    want = {f"{ns}/{pod}": _held_by(real_nodes, ns, pod) for pod in ("claimed", "bridged")}
    assert {k: v for k, v in listed.items() if k.startswith(f"{ns}/")} == want
    assert [len(v) for v in want.values()] == [1, 1]
    assert get_held(root, ns, "bridged") == want[f"{ns}/bridged"]
    for pod in ("claimed", "bridged"):
        kube.delete(*kinds.POD, pod, ns)
    wait_for(
        lambda: sorted(k for k in list_held(root) if k.startswith(f"{ns}/")),
        lambda left: left == [],
        timeout=TIMEOUTS.deletion,
        describe=f"the kubelet's PodResources List without the pods of {ns}",
    )
