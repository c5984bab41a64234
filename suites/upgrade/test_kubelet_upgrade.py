"""The kubelets' turn in an upgrade (upstream's order: the control plane first, kubelets last,
harness.clusters.local.kubelets): a 1.36 cluster with one real node running a claim pod goes
to 1.37 with its kubelet. Upstream documents a drain before a minor kubelet upgrade and does
not support it in place (kubernetes/website content/en/releases/version-skew-policy.md); both
are rehearsed: in place, the pod, its container and its prepared claim carry over to the new
kubelet; drained, the pod and its claim are gone before the swap. Either way a new claim pod
is prepared by the new kubelet, and stepping back to 1.36 is refused while a kubelet runs 1.37."""

from __future__ import annotations

import pytest

from fake_driver.facts.profiles import gpu_uuid
from fixtures.requirements import not_built, skip
from fixtures.upgrade import Rehearsal, StartRehearsal
from harness.clusters.local.upgrade import SKEW_POLICY, UpgradeRefused
from harness.clusters.realnodes.pools import RealNodes, RealPoolSpec
from harness.controlplane.nodeparts import kubelet_built
from harness.core.versions import load_matrix
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of, wait_claims_gone
from harness.kit.kube import Obj
from harness.kit.nodepods import container_env, device_env, env_pod
from harness.upgrade.rehearsal import wait_running

BEFORE, AFTER = "1.36", "1.37"
POOL = RealPoolSpec("up", count=1, gpus=4)
PREPARE = "NodePrepareResources"


def _start(rehearsal: StartRehearsal) -> tuple[Rehearsal, str, Obj]:
    """The 1.36 cluster, its node, and the claim of pod `before` running there (template `gpu`)."""
    matrix = load_matrix()
    missing = [m for m in (BEFORE, AFTER) if kubelet_built(matrix.minor(m)) is None]
    if missing:
        skip(not_built(f"the kubelet of {', '.join(missing)} is not built: make upgradeparts"))
    r = rehearsal(BEFORE, "defaults", needs=[AFTER], real_pools=[POOL])
    [node] = POOL.node_names()
    r.objects.create(b.claim_template("gpu", r.fleet.namespace, [b.exact_request("gpu", r.fleet.gpu_class)]))
    return r, node, _claim_pod(r, "before")


def _claim_pod(r: Rehearsal, name: str) -> Obj:
    """Pod `name` on the node with a claim from template `gpu`, Running, its device in its env."""
    ns, [node] = r.fleet.namespace, POOL.node_names()
    image = _real(r).parts[BEFORE].busybox_ref
    r.objects.create(env_pod(name, ns, image, node, claim_templates={"gpu": "gpu"}))
    wait_running(r.kube, ns, [name])
    [claim] = claims_of(r.kube, ns, name)
    [device] = [d["device"] for d in allocated_devices(claim)]
    uuid = gpu_uuid(node, int(device.removeprefix("gpu-")))
    assert device_env(container_env(r.kube, ns, name)) == {
        f"DRA_DEVICE_{device.upper().replace('-', '_')}": uuid,
        "NVIDIA_VISIBLE_DEVICES": uuid,
        "DRA_CLAIM": f"{ns}/{claim['metadata']['name']}",
    }
    return claim


def _real(r: Rehearsal) -> RealNodes:
    assert r.cluster.real is not None
    return r.cluster.real


def _container(r: Rehearsal, pod: str) -> tuple[str, int]:
    [status] = r.kube.get(*kinds.POD, pod, r.fleet.namespace)["status"]["containerStatuses"]
    return status["containerID"], status["restartCount"]


def _assert_node_runs_the_new_kubelet_and_no_step_back(r: Rehearsal, node: str) -> None:
    got = r.kube.get(*kinds.NODE, node)
    assert got["status"]["nodeInfo"]["kubeletVersion"] == r.cluster.matrix.minor(AFTER).kubernetes
    assert "unschedulable" not in got["spec"]
    assert _real(r).minors == {node: AFTER}
    with pytest.raises(UpgradeRefused) as refused:
        r.cluster.upgrade(BEFORE)
    assert str(refused.value) == (
        f"a kubelet of {AFTER} would be newer than kube-apiserver {BEFORE}, which the version-skew "
        f"policy forbids ({SKEW_POLICY}); replace those nodes first"
    )


@pytest.mark.real_node
def test_in_place_the_running_claim_pod_keeps_its_container_and_claim_and_a_new_one_is_prepared(
    rehearsal: StartRehearsal,
) -> None:
    r, node, held = _start(rehearsal)
    ns, container = r.fleet.namespace, _container(r, "before")

    r.cluster.upgrade(AFTER, kubelets="in-place")

    _assert_node_runs_the_new_kubelet_and_no_step_back(r, node)
    assert _container(r, "before") == container
    assert container[1] == 0
    [kept] = claims_of(r.kube, ns, "before")
    pod_uid = r.kube.get(*kinds.POD, "before", ns)["metadata"]["uid"]
    assert kept["metadata"]["uid"] == held["metadata"]["uid"]
    assert kept["status"]["allocation"] == held["status"]["allocation"]
    assert [c["uid"] for c in kept["status"]["reservedFor"]] == [pod_uid]
    fresh = _claim_pod(r, "after")
    assert allocated_devices(fresh) != allocated_devices(kept)
    # Each claim was prepared once: the new kubelet took the old one's prepared claim over.
    calls = _real(r).node(node).plugin_calls("kubelet-plugin", PREPARE)
    uids = [ref.rsplit("/", 1)[1] for ref in calls]
    assert sorted(uids) == sorted([held["metadata"]["uid"], fresh["metadata"]["uid"]])


@pytest.mark.real_node
def test_drained_the_claim_pod_and_its_claim_are_gone_and_a_new_one_is_prepared(
    rehearsal: StartRehearsal,
) -> None:
    r, node, held = _start(rehearsal)
    ns = r.fleet.namespace

    r.cluster.upgrade(AFTER)  # kubelets="drain": upstream's documented way

    _assert_node_runs_the_new_kubelet_and_no_step_back(r, node)
    assert r.kube.list(*kinds.POD, ns, field_selector="metadata.name=before") == []
    wait_claims_gone(r.kube, ns, [held["metadata"]["name"]])
    assert _real(r).node(node).plugin_calls("kubelet-plugin", "NodeUnprepareResources") == [
        f"{ns}/{held['metadata']['name']}/{held['metadata']['uid']}"
    ]
    fresh = _claim_pod(r, "after")
    assert _real(r).node(node).prepared_claims() == {fresh["metadata"]["uid"]}
