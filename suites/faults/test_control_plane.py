"""Control-plane faults mid-run: kube-scheduler restarted while pods are being scheduled,
kube-apiserver restarted under running workloads, etcd stopped briefly. After each: no
device allocated twice, every claim's reservedFor names a live pod, the pods that should
run are Running, no scheduler-created claim is orphaned, and nothing more fits."""

from __future__ import annotations

import pytest

from fixtures.cluster import component_down
from fixtures.driver import DriverUnderTest, MakeGpuPool
from harness.clusters.host import health
from harness.clusters.local.cluster import LocalCluster
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.invariants import EXTENDED_RESOURCE_CLAIM, check_cluster
from harness.kit.drastate import allocated, allocations, claims_of
from harness.kit.kinds import RESOURCE_V1
from harness.kit.kube import Kube, Obj
from harness.kit.pods import scheduling_message, unschedulable_reasons, wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, assert_stays, wait_for
from suites.faults.helpers import assert_full, settled

pytestmark = [pytest.mark.serial, pytest.mark.feature_gate("DRAExtendedResource"), pytest.mark.bridged]


def _client_recovers(kube: Kube, namespace: str, after: str) -> None:
    wait_for(
        lambda: kube.get(*kinds.NAMESPACE, namespace)["metadata"]["name"],
        lambda name: name == namespace,
        timeout=TIMEOUTS.component_ready,
        describe=f"the test's Kube client reading again after {after}",
    )


def test_scheduler_restarted_with_work_queued(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    local_cluster: LocalCluster,
) -> None:
    """Pods running, the scheduler goes down, pods arrive (legacy and claim-template
    style), it comes back: every pod runs, each with exactly one claim, 8 distinct GPUs."""
    gpu = driver.extended_resource
    pool = gpu_pool(nodes=2, gpus=4)
    kube.create(b.claim_template("one-gpu", namespace, [b.exact_request("gpu", driver.device_class)]))
    legacy = [f"legacy-{i}" for i in range(6)]
    templated = ["claim-0", "claim-1"]

    def claim_pod(name: str) -> None:
        kube.create(b.template_pod(name, namespace, "one-gpu", node_selector=pool.node_selector))

    for name in legacy[:3]:
        kube.create(b.legacy_pod(name, namespace, gpu, 1, node_selector=pool.node_selector))
    claim_pod(templated[0])
    running = {
        n: wait_phase(kube, namespace, n, "Running")["metadata"]["uid"] for n in [*legacy[:3], templated[0]]
    }
    claims_before = allocations(kube, namespace)

    with component_down(local_cluster, "kube-scheduler"):
        for name in legacy[3:]:
            kube.create(b.legacy_pod(name, namespace, gpu, 1, node_selector=pool.node_selector))
        claim_pod(templated[1])
        assert [kube.get(*kinds.POD, n, namespace)["spec"].get("nodeName") for n in legacy[3:]] == [None] * 3

    pods = [wait_phase(kube, namespace, name, "Running") for name in legacy + templated]
    settled(kube, namespace, legacy + templated, "a kube-scheduler restart")
    assert {n: kube.get(*kinds.POD, n, namespace)["metadata"]["uid"] for n in running} == running
    claims_after = allocations(kube, namespace)
    assert {k: v for k, v in claims_after.items() if k in claims_before} == claims_before
    for pod in pods:
        [claim] = claims_of(kube, namespace, pod["metadata"]["name"])
        scheduler_made = claim["metadata"].get("annotations", {}).get(EXTENDED_RESOURCE_CLAIM) == "true"
        assert scheduler_made == pod["metadata"]["name"].startswith("legacy")
    devices = allocated(kube, namespace)
    assert len(devices) == 8
    assert len(set(devices)) == 8
    assert {pool_name for _, pool_name, _ in devices} == set(pool.nodes)
    assert len(claims_after) == 8  # no duplicate claim left behind
    assert_full(kube, namespace, gpu, pool.node_selector, 2)


def _wait_no_other_claims_moving(kube: Kube, namespace: str) -> None:
    """Any claim deallocated elsewhere queues every DRA pod again (and would hide a stranded
    pod): wait for a cluster where no other test's claims or namespaces are going away."""
    wait_for(
        lambda: (
            sorted({c["metadata"]["namespace"] for c in kube.list(*kinds.RESOURCE_CLAIM)} - {namespace}),
            sorted(
                n["metadata"]["name"]
                for n in kube.list(*kinds.NAMESPACE)
                if n.get("status", {}).get("phase") == "Terminating"
            ),
        ),
        lambda seen: seen == ([], []),
        timeout=TIMEOUTS.deletion,
        describe="no other namespace with claims or terminating",
    )


def _claim_as_the_scheduler_writes_it(pod: Obj, device_class: str) -> Obj:
    """The extended-resource claim kube-scheduler creates for `pod` in PreBind, unallocated."""
    owner = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod["metadata"]["name"],
        "uid": pod["metadata"]["uid"],
    }
    request = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1}
    return {
        "apiVersion": RESOURCE_V1,
        "kind": "ResourceClaim",
        "metadata": {
            "generateName": f"{pod['metadata']['name']}-extended-resources-",
            "namespace": pod["metadata"]["namespace"],
            "annotations": {EXTENDED_RESOURCE_CLAIM: "true"},
            "ownerReferences": [{**owner, "controller": True}],
        },
        "spec": b.claim_spec([{"name": "container-0-request-0", "exactly": request}]),
    }


def test_claim_left_by_a_killed_scheduler_strands_its_pod(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    local_cluster: LocalCluster,
) -> None:
    """Upstream behaviour, found by restarting the scheduler mid-cycle: a scheduler killed
    between creating a pod's extended-resource claim (PreBind) and allocating it leaves the
    claim behind. The next scheduler rejects the pod on every node ("cannot schedule
    extended resource claim"), deletes the claim in PostFilter ("deletion of ResourceClaim
    completed") and then does not retry: the deleted claim had no allocation, so its
    queueing hint skips the pod, which waits for the unschedulable-pod flush (5 minutes by
    default) although every GPU is free. Staged here deterministically: the leftover claim
    is written exactly as the scheduler writes it, while the scheduler is down."""
    pool = gpu_pool(nodes=1, gpus=2)
    _wait_no_other_claims_moving(kube, namespace)
    with component_down(local_cluster, "kube-scheduler"):
        pod = kube.create(
            b.legacy_pod("stranded", namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
        )
        leftover = kube.create(_claim_as_the_scheduler_writes_it(pod, driver.device_class))

    stuck = wait_unschedulable(kube, namespace, "stranded")

    assert unschedulable_reasons(scheduling_message(stuck)) == {"cannot schedule extended resource claim": 1}
    assert scheduling_message(stuck).split(". ")[1].startswith("deletion of ResourceClaim completed")
    wait_for(
        lambda: [c["metadata"]["name"] for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)],
        lambda names: leftover["metadata"]["name"] not in names,
        timeout=TIMEOUTS.deletion,
        describe=f"leftover claim {leftover['metadata']['name']} deleted by the scheduler",
    )
    assert_stays(
        lambda: kube.get(*kinds.POD, "stranded", namespace),
        lambda p: not p["spec"].get("nodeName"),
        duration=TIMEOUTS.stays_pending,
        describe="pod stranded unbound with both GPUs free (no requeue after its claim's deletion)",
    )
    assert check_cluster(kube, [namespace]) == []  # nothing inconsistent: only not retried


def test_apiserver_restarted_under_running_workloads(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    local_cluster: LocalCluster,
) -> None:
    gpu = driver.extended_resource
    pool = gpu_pool(nodes=1, gpus=4)
    for name in ("before-0", "before-1"):
        kube.create(b.legacy_pod(name, namespace, gpu, 1, node_selector=pool.node_selector))
    before = {
        n: wait_phase(kube, namespace, n, "Running")["metadata"]["uid"] for n in ("before-0", "before-1")
    }
    claims_before = allocations(kube, namespace)
    server = local_cluster.server

    local_cluster.restart("kube-apiserver")

    assert local_cluster.server == server  # same port: clients' kubeconfigs stay valid
    _client_recovers(kube, namespace, "a kube-apiserver restart")
    for name in ("after-0", "after-1"):
        kube.create(b.legacy_pod(name, namespace, gpu, 1, node_selector=pool.node_selector))
    for name in ("after-0", "after-1"):
        wait_phase(kube, namespace, name, "Running")
    settled(kube, namespace, [*before, "after-0", "after-1"], "a kube-apiserver restart")
    assert {n: kube.get(*kinds.POD, n, namespace)["metadata"]["uid"] for n in before} == before
    claims_after = allocations(kube, namespace)
    assert {k: v for k, v in claims_after.items() if k in claims_before} == claims_before
    assert len(claims_after) == 4
    devices = allocated(kube, namespace)
    assert len(set(devices)) == len(devices) == 4
    assert_full(kube, namespace, gpu, pool.node_selector, 1)


def test_etcd_stopped_briefly(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    local_cluster: LocalCluster,
) -> None:
    gpu = driver.extended_resource
    pool = gpu_pool(nodes=1, gpus=2)
    kube.create(b.legacy_pod("before", namespace, gpu, 1, node_selector=pool.node_selector))
    uid = wait_phase(kube, namespace, "before", "Running")["metadata"]["uid"]
    claims_before = allocations(kube, namespace)
    ctx = health.tls_context(local_cluster.pki.ca.cert, local_cluster.pki.admin)

    def etcd_check() -> int:
        return health.get(f"{local_cluster.server}/readyz/etcd", ctx, timeout=5.0)[0]

    with component_down(local_cluster, "etcd", pause=True):
        wait_for(
            etcd_check,
            lambda status: status != 200,
            timeout=TIMEOUTS.api_object,
            describe="kube-apiserver reporting etcd unready while etcd is stopped",
        )
    wait_for(
        etcd_check,
        lambda status: status == 200,
        timeout=TIMEOUTS.component_ready,
        describe="kube-apiserver reporting etcd ready again",
    )
    _client_recovers(kube, namespace, "etcd came back")

    kube.create(b.legacy_pod("after", namespace, gpu, 1, node_selector=pool.node_selector))
    wait_phase(kube, namespace, "after", "Running")
    settled(kube, namespace, ["before", "after"], "etcd stopped and resumed")
    assert kube.get(*kinds.POD, "before", namespace)["metadata"]["uid"] == uid
    claims_after = allocations(kube, namespace)
    assert {k: v for k, v in claims_after.items() if k in claims_before} == claims_before
    devices = allocated(kube, namespace)
    assert len(set(devices)) == len(devices) == 2
    assert_full(kube, namespace, gpu, pool.node_selector, 1)
