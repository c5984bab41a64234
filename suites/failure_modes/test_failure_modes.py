"""Four ways a migration from the device plugin to DRA goes wrong, each staged on the real
cluster, seen the way users see it, and named by the detector the readiness scan runs."""

from __future__ import annotations

import pytest

from fake_driver.api.apilimits import parse_minor
from fake_driver.rendering.ledger import Ledger, Usage
from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.requirements import provider_unmet, skip
from harness.clusters.base import Cell
from harness.clusters.kwok import OUTCOME_ANNOTATION
from harness.core.expectations import (
    claim_controller_follows_bridged_pods,
    class_add_requeues_fit_rejected_pod,
)
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.accelerators import AcceleratorScope
from harness.kit.checks.detectors import (
    Severity,
    account,
    detect_accounting_gaps,
    detect_bridge_unavailable,
    detect_double_stack,
    detect_selectors_matching_nothing,
)
from harness.kit.checks.migration import detect_unmapped_legacy_requests
from harness.kit.checks.verification import verify
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created
from harness.kit.pods import scheduling_message, unschedulable_reasons, wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, wait_for


def _pods(kube: Kube, namespace: str, names: list[str]) -> list[Obj]:
    return [kube.get(*kinds.POD, n, namespace) for n in names]


def test_both_stacks_on_the_same_gpus_over_promise_and_are_detected(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=8, device_plugin=True)
    [node] = pool.nodes
    kube.create(b.claim_template("one", namespace, [b.exact_request("gpu", driver.device_class)]))
    legacy = [f"legacy-{i}" for i in range(8)]
    claimed = [f"claim-{i}" for i in range(8)]
    for name in legacy:  # device-plugin path: the node advertises nvidia.com/gpu: 8
        kube.create(
            b.legacy_pod(name, namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
        )
    for name in claimed:  # DRA path: the driver publishes the same 8 GPUs
        kube.create(b.template_pod(name, namespace, "one", node_selector=pool.node_selector))

    for name in legacy + claimed:
        wait_phase(kube, namespace, name, "Running")

    assert pool.fleet is not None
    ledger = Ledger.for_fleet(pool.fleet, parse_minor(cell.minor), legacy={node: 8})
    dra = [
        ledger.dra(r["driver"], r["pool"], r["device"])
        for n in claimed
        for c in claims_of(kube, namespace, n)
        for r in allocated_devices(c)
    ]
    usages = [Usage(f"{namespace}/{n}", ledger.legacy(node, i)) for i, n in enumerate(legacy)]
    usages += [Usage(f"{namespace}/{n}", share) for n, share in zip(claimed, dra, strict=True)]
    assert len(Ledger.conflicts(usages)) == 8  # 16 allocations of 8 physical GPUs
    assert ledger.overcommit(node, legacy_in_use=8, dra_shares=dra) == 8
    findings = detect_double_stack(
        # This test's node only: others may be double-stacked too (kind's legacy worker is, by
        # design; so may another worker's test on a shared cluster).
        [n for n in kube.list(*kinds.NODE) if n["metadata"]["name"] == node],
        kube.list(*kinds.RESOURCE_SLICE),
        kube.list(*kinds.DEVICE_CLASS),
        driver.extended_resource,
        gpu_drivers=[driver.driver],  # named as the scan does: the class may not map the name (bridge off)
    )
    assert [(f.check, f.severity, f.subject) for f in findings] == [
        ("double-stack", Severity.BLOCKING, f"node/{node}")
    ]


@pytest.mark.feature_gate("DRAExtendedResource")
@pytest.mark.bridged
@pytest.mark.kwok_pods  # its Job's pod (the pause image) never ends on a real node
def test_unchanged_deployment_and_job_run_on_a_migrated_pool(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=4)
    pod_spec: Obj = {
        "nodeSelector": pool.node_selector,
        "terminationGracePeriodSeconds": 0,
        "containers": [b.container(limits={driver.extended_resource: "1"})],
    }
    template = {"metadata": {"labels": {"app": "train"}}, "spec": pod_spec}
    kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "serve", "namespace": namespace},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "train"}}, "template": template},
        }
    )
    job_template = {"spec": {**pod_spec, "restartPolicy": "Never"}}
    kube.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "batch", "namespace": namespace},
            "spec": {"template": job_template, "backoffLimit": 0},
        }
    )

    serving = wait_for(
        lambda: [
            p
            for p in kube.list(*kinds.POD, namespace, label_selector="app=train")
            if p["status"].get("phase") == "Running"
        ],
        lambda pods: len(pods) == 2,
        timeout=TIMEOUTS.pod_running,
        describe="2 Deployment pods Running",
    )
    job = wait_for(
        lambda: kube.get("batch/v1", "Job", "batch", namespace),
        lambda j: j.get("status", {}).get("succeeded") == 1,
        timeout=TIMEOUTS.pod_running,
        describe="Job batch succeeded",
    )

    assert job["status"]["succeeded"] == 1
    assert all(
        p["status"]["extendedResourceClaimStatus"]["requestMappings"][0]["resourceName"]
        == driver.extended_resource
        for p in serving
    )
    assert verify(kube, driver.driver, pool.nodes, serving) == []
    wait_for(
        lambda: [
            c
            for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)
            if c["metadata"]["generateName"].startswith("batch-")
        ],
        # 1.34: a finished pod keeps its claim until the pod object goes (expectations).
        lambda claims: len(claims) == (0 if claim_controller_follows_bridged_pods(cell.number) else 1),
        timeout=TIMEOUTS.deletion,
        describe="the Job pod's claim deleted (1.34: kept while the pod exists)",
    )


def _unmapped_legacy_pod(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created
) -> tuple[str, str, Obj]:
    """A class of the driver without extendedResourceName and a pod asking for a legacy name
    nothing maps, Pending: (the class, the legacy name, the pod)."""
    pool = gpu_pool(nodes=1, gpus=2)
    legacy_name = f"legacy.dra-harness.io/gpu-{namespace.rsplit('-', 1)[1]}"
    class_name = f"{namespace}-gpu"
    objects.create(b.device_class(class_name, selectors=[f'device.driver == "{driver.driver}"']))
    kube.create(b.legacy_pod("legacy", namespace, legacy_name, 1, node_selector=pool.node_selector))
    return class_name, legacy_name, wait_unschedulable(kube, namespace, "legacy")


def test_class_without_extended_resource_name_leaves_legacy_pods_pending_and_is_named(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created
) -> None:
    _, legacy_name, pod = _unmapped_legacy_pod(kube, namespace, driver, gpu_pool, objects)

    assert unschedulable_reasons(scheduling_message(pod)).get(f"Insufficient {legacy_name}") == 1
    # The project's own legacy name is no vendor's accelerator: named in the scope (--include-resource).
    scope = AcceleratorScope(included=frozenset({legacy_name}))
    [finding] = detect_unmapped_legacy_requests(
        [pod], kube.list(*kinds.DEVICE_CLASS), kube.list(*kinds.NODE), scope=scope
    )
    assert (finding.check, finding.severity, finding.subject) == (
        "unmapped-legacy-resource",
        Severity.BLOCKING,
        f"extendedresource/{legacy_name}",
    )
    assert finding.message == (
        "no DeviceClass maps it and no node advertises it: they cannot schedule now; "
        f"1 pod(s) request it: {namespace}/legacy (not scheduled)"
    )


@pytest.mark.feature_gate(
    "DRAExtendedResource"
)  # the fix needs the bridge (test_bridge_unavailable: cells without)
def test_class_without_extended_resource_name_once_mapped_runs_the_pending_pod(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created, cell: Cell
) -> None:
    class_name, legacy_name, _ = _unmapped_legacy_pod(kube, namespace, driver, gpu_pool, objects)
    kube.patch(*kinds.DEVICE_CLASS, class_name, {"spec": {"extendedResourceName": legacy_name}})
    # 1.34: the class's Update event does not requeue a pod NodeResourcesFit rejected; the
    # unschedulable queue's flush does (found on 1.34.4, as for an added class).
    requeued = class_add_requeues_fit_rejected_pod(cell.number)
    wait_phase(
        kube,
        namespace,
        "legacy",
        "Running",
        timeout=TIMEOUTS.pod_running if requeued else TIMEOUTS.unschedulable_flush,
    )


def _typo_selector(driver: str, slices: list[Obj]) -> str:
    """A value typo on an attribute the driver's devices publish (productName "NVIDIA H100"
    for "NVIDIA H100 80GB HBM3" on NVIDIA's; the example driver's `model`): half the value.
    Guarded by has(), so devices without it do not match rather than fail the CEL."""
    devices = [d for s in slices if s["spec"]["driver"] == driver for d in s["spec"].get("devices") or []]
    strings = [
        (name, value["string"])
        for d in devices
        for name, value in (d.get("attributes") or {}).items()
        if "/" not in name and value.get("string")
    ]
    if not strings:
        skip(provider_unmet(f"a string attribute on the {driver} devices (none publishes one)"))
    name, value = min(strings, key=lambda nv: (nv[0] not in ("productName", "model"), nv[0]))
    field = f'device.attributes["{driver}"].{name}'
    return f'has({field}) && {field} == "{value[: len(value) // 2]}"'


@pytest.mark.feature_gate("DRAExtendedResource")
def test_selector_matching_nothing_keeps_pods_pending_and_is_named(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created
) -> None:
    pool = gpu_pool(nodes=1, gpus=2)
    legacy_name = f"legacy.dra-harness.io/gpu-{namespace.rsplit('-', 1)[1]}"
    class_name = f"{namespace}-typo"
    mine = [s for s in kube.list(*kinds.RESOURCE_SLICE) if s["spec"].get("nodeName") in pool.nodes]
    typo = _typo_selector(driver.driver, mine)
    objects.create(
        b.device_class(
            class_name,
            extended_resource_name=legacy_name,
            selectors=[f'device.driver == "{driver.driver}"', typo],
        )
    )
    kube.create(b.legacy_pod("legacy", namespace, legacy_name, 1, node_selector=pool.node_selector))

    pod = wait_unschedulable(kube, namespace, "legacy")

    assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == 1
    ours = [c for c in kube.list(*kinds.DEVICE_CLASS) if c["metadata"]["name"] == class_name]
    slices = [s for s in kube.list(*kinds.RESOURCE_SLICE) if s["spec"].get("nodeName") in pool.nodes]
    [finding] = detect_selectors_matching_nothing(ours, slices)
    assert (finding.check, finding.severity, finding.subject) == (
        "selector-matches-nothing",
        Severity.BLOCKING,
        f"deviceclass/{class_name}",
    )
    published = sum(len(s["spec"].get("devices") or []) for s in slices)
    assert published >= pool.gpus
    assert finding.message == f"its selector matches none of the {published} published devices"


@pytest.mark.feature_gate("DRAExtendedResource")
@pytest.mark.bridged
@pytest.mark.kwok_pods
def test_node_allocatable_stops_telling_the_truth_after_migration(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    pool = gpu_pool(nodes=2, gpus=4)
    for i in range(3):
        kube.create(
            b.legacy_pod(
                f"legacy-{i}", namespace, driver.extended_resource, 1, node_selector=pool.node_selector
            )
        )
    kube.create(
        b.pod(
            "done",
            namespace,
            node_selector=pool.node_selector,
            annotations={OUTCOME_ANNOTATION: "Succeeded"},
            containers=[b.container(limits={driver.extended_resource: "1"})],
        )
    )
    for i in range(3):
        wait_phase(kube, namespace, f"legacy-{i}", "Running")
    wait_phase(kube, namespace, "done", "Succeeded")
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gpus", "namespace": namespace},
            "spec": {"hard": {f"requests.{driver.extended_resource}": "8"}},
        }
    )

    nodes = [n for n in kube.list(*kinds.NODE) if n["metadata"]["name"] in pool.nodes]
    held = 3 if claim_controller_follows_bridged_pods(cell.number) else 4  # 1.34: done keeps its own
    claims = wait_for(
        lambda: kube.list(*kinds.RESOURCE_CLAIM, namespace),
        lambda cs: len(cs) == held,
        timeout=TIMEOUTS.deletion,
        describe=f"{held} claims left once pod done finished",
    )
    [(label, value)] = pool.node_selector.items()  # the fake pool's label, or --node-selector
    [acct] = account(nodes, kube.list(*kinds.RESOURCE_SLICE), claims, driver.extended_resource, label)
    assert (acct.pool, acct.nodes, acct.allocatable, acct.dra_devices, acct.dra_allocated) == (
        value,
        len(pool.nodes),
        0,
        pool.gpus,
        held,
    )
    findings = detect_accounting_gaps(
        [acct], kube.list(*kinds.RESOURCE_QUOTA, namespace), driver.extended_resource, cell.number
    )
    assert [(f.check, f.subject) for f in findings] == [
        ("accounting", f"pool/{value}"),
        ("quota-legacy-name", f"resourcequota/{namespace}/gpus"),
    ]


def test_bridge_support_detector_matches_the_cell(cell: Cell) -> None:
    findings = detect_bridge_unavailable(cell.number, cell.gates)
    expected = [] if cell.gate("DRAExtendedResource") else ["bridge-support"]
    assert [f.check for f in findings] == expected
