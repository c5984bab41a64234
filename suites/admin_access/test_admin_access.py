"""Admin access (KEP-5018, DRAAdminAccess): a claim request with `adminAccess: true` gets a device
even while another claim holds it (monitoring, health checks), and only in a namespace an admin
labelled `resource.kubernetes.io/admin-access: "true"`. Upstream counterparts: kubernetes
test/e2e/dra "supports claim with admin access", "DaemonSet with admin access"; the message:
pkg/registry/resource/utils.go AuthorizedForAdmin @ v1.34.4 and v1.37.2 (the same text)."""

from __future__ import annotations

import json

import pytest

from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import ApiException, Kube
from harness.kit.objects import Created
from harness.kit.pods import create_claim_pod, wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, wait_for

NV = "gpu.nvidia.com"
REFUSAL = (
    "Forbidden: admin access to devices requires the "
    f"`{b.ADMIN_ACCESS_LABEL}: true` label on the containing namespace"
)


def _allow_admin_access(kube: Kube, namespace: str) -> None:
    kube.patch(*kinds.NAMESPACE, namespace, {"metadata": {"labels": {b.ADMIN_ACCESS_LABEL: "true"}}})


@pytest.mark.feature_gate("DRAAdminAccess")
@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceClaimTemplate"])
def test_an_admin_access_request_is_refused_in_a_namespace_without_the_label(
    namespace: str, objects: Created, kind: str
) -> None:
    request = b.exact_request("gpu", "any-class", admin_access=True)
    body = (b.resource_claim if kind == "ResourceClaim" else b.claim_template)("watch", namespace, [request])

    with pytest.raises(ApiException) as err:
        objects.create(body)

    status = json.loads(err.value.body or "{}")
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    [cause] = status["details"]["causes"]
    # The template reports the claim's path too: utils.go builds it as spec.devices.requests[i].
    field = "spec.devices.requests[0].adminAccess"
    assert (cause["reason"], cause["field"], cause["message"]) == ("FieldValueForbidden", field, REFUSAL)


@pytest.mark.feature_gate("DRAAdminAccess")
def test_an_admin_access_claim_gets_a_device_another_claim_holds(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=1))
    [node] = fleet.node_names
    gpu = fleet.device_class(NV)
    _allow_admin_access(kube, namespace)
    create_claim_pod(kube, namespace, "user", [b.exact_request("gpu", gpu)], fleet.node_selector)
    wait_phase(kube, namespace, "user", "Running")

    create_claim_pod(
        kube, namespace, "monitor", [b.exact_request("gpu", gpu, admin_access=True)], fleet.node_selector
    )
    create_claim_pod(kube, namespace, "second-user", [b.exact_request("gpu", gpu)], fleet.node_selector)

    wait_phase(kube, namespace, "monitor", "Running")
    wait_unschedulable(kube, namespace, "second-user")
    [user] = allocated_devices(claims_of(kube, namespace, "user")[0])
    [monitor] = allocated_devices(claims_of(kube, namespace, "monitor")[0])
    assert (user["pool"], user["device"], user.get("adminAccess")) == (node, "gpu-0", None)
    assert (monitor["pool"], monitor["device"], monitor["adminAccess"]) == (node, "gpu-0", True)


@pytest.mark.feature_gate("DRAAdminAccess")
def test_an_admin_access_daemon_set_reaches_every_gpu_in_use(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, objects: Created
) -> None:
    # The monitoring agent's shape: one pod per node, each with admin access to the node's GPU
    # while a workload holds it.
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, nodes=2))
    gpu = fleet.device_class(NV)
    _allow_admin_access(kube, namespace)
    for i, node in enumerate(fleet.node_names):
        create_claim_pod(
            kube, namespace, f"user-{i}", [b.exact_request("gpu", gpu)], {"kubernetes.io/hostname": node}
        )
        wait_phase(kube, namespace, f"user-{i}", "Running")
    kube.create(b.claim_template("monitor", namespace, [b.exact_request("gpu", gpu, admin_access=True)]))

    objects.create(
        b.daemon_set(
            "monitor", namespace, b.template_pod("m", namespace, "monitor", node_selector=fleet.node_selector)
        )
    )

    pods = wait_for(
        lambda: kube.list(*kinds.POD, namespace, label_selector="app=monitor"),
        lambda ps: len(ps) == 2 and all(p.get("status", {}).get("phase") == "Running" for p in ps),
        timeout=TIMEOUTS.pod_running,
        describe="two DaemonSet pods Running with admin access",
    )
    held = sorted(
        (r["pool"], r["device"], r.get("adminAccess"))
        for p in pods
        for c in claims_of(kube, namespace, p["metadata"]["name"])
        for r in allocated_devices(c)
    )
    assert held == sorted((node, "gpu-0", True) for node in fleet.node_names)
