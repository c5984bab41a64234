"""Bridged extended resources over a pod's life: no overcommit, claims cleaned up, classes
that appear late, and the implicit `deviceclass.resource.kubernetes.io/<class>` name."""

from __future__ import annotations

import pytest

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.namespace import REQUEUE
from harness.clusters.base import Cell
from harness.clusters.kwok import OUTCOME_ANNOTATION
from harness.core.expectations import (
    claim_controller_follows_bridged_pods,
    class_add_requeues_fit_rejected_pod,
    implicit_name_alongside_explicit,
    implicit_names_recognized,
)
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of, wait_pod_claims_gone
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import scheduling_message, unschedulable_reasons, wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, assert_stays
from harness.scan.cluster import stranded_claims
from harness.scan.read import read_state

pytestmark = [pytest.mark.feature_gate("DRAExtendedResource")]


@pytest.mark.bridged
def test_no_overcommit_and_the_waiting_pod_runs_once_devices_are_freed(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool
) -> None:
    pool = gpu_pool(nodes=1, gpus=2)
    all_gpus = pool.gpus_per_node
    kube.create(
        b.legacy_pod("full", namespace, driver.extended_resource, all_gpus, node_selector=pool.node_selector)
    )
    wait_phase(kube, namespace, "full", "Running")
    kube.create(
        b.legacy_pod("next", namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
    )

    pod = wait_unschedulable(kube, namespace, "next")
    assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == 1
    assert_stays(
        lambda: kube.get(*kinds.POD, "next", namespace),
        lambda p: not p["spec"].get("nodeName"),
        duration=TIMEOUTS.stays_pending,
        describe=f"pod next unbound while {all_gpus} of {all_gpus} GPUs are allocated",
    )
    kube.delete(*kinds.POD, "full", namespace)

    wait_phase(kube, namespace, "next", "Running")
    wait_pod_claims_gone(kube, namespace, "full", "a deleted")
    [claim] = claims_of(kube, namespace, "next")
    assert len(allocated_devices(claim)) == 1


@pytest.mark.parametrize("outcome", ["Succeeded", "Failed"])
@pytest.mark.bridged
@pytest.mark.kwok_pods
def test_scheduler_created_claim_is_released_when_the_pod_completes(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, outcome: str, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    kube.create(
        b.legacy_pod(
            "job",
            namespace,
            driver.extended_resource,
            1,
            node_selector=pool.node_selector,
            annotations={OUTCOME_ANNOTATION: outcome},
        )
    )
    wait_phase(kube, namespace, "job", outcome)

    # The device is free again: a second pod needing the only GPU runs.
    kube.create(
        b.legacy_pod("after", namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
    )
    if not claim_controller_follows_bridged_pods(cell.number):
        # 1.34: the finished pod keeps its claim until the pod object goes.
        pod = wait_unschedulable(kube, namespace, "after")
        assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == 1
        [held] = claims_of(kube, namespace, "job")
        assert [r["device"] for r in allocated_devices(held)] == ["gpu-0"]
        assert [r["name"] for r in held["status"]["reservedFor"]] == ["job"]
        kube.delete(*kinds.POD, "job", namespace)
    wait_phase(kube, namespace, "after", "Running")
    wait_pod_claims_gone(kube, namespace, "job", f"{outcome}")


@pytest.mark.bridged
@pytest.mark.kwok_pods
def test_claim_deleted_before_its_running_pod_goes_with_the_pod(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    """What a namespace deletion does when it reaches a bridged pod's claim before the pod."""
    pool = gpu_pool(nodes=1, gpus=1)
    kube.create(
        b.legacy_pod("held", namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
    )
    wait_phase(kube, namespace, "held", "Running")
    [claim] = claims_of(kube, namespace, "held")
    name = claim["metadata"]["name"]
    kube.delete(*kinds.RESOURCE_CLAIM, name, namespace)
    deleting = kube.get(*kinds.RESOURCE_CLAIM, name, namespace)
    assert deleting["metadata"]["deletionTimestamp"]
    assert deleting["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    kube.delete(*kinds.POD, "held", namespace, grace=0)

    if not claim_controller_follows_bridged_pods(cell.number):
        # 1.34: nothing requeues the claim once its pod is gone; it keeps the device.
        assert_stays(
            lambda: kube.get(*kinds.RESOURCE_CLAIM, name, namespace),
            lambda c: (
                [r["name"] for r in c["status"]["reservedFor"]] == ["held"]
                and [r["device"] for r in allocated_devices(c)] == ["gpu-0"]
            ),
            duration=TIMEOUTS.stays_pending,
            describe=f"claim {name} reserved for deleted pod held",
        )
        [finding] = [f for f in stranded_claims(read_state(kube)) if f.subject.endswith(f"/{name}")]
        assert (finding.check, finding.subject) == ("stranded-claim", f"resourceclaim/{namespace}/{name}")
        assert finding.message.startswith("deleted but still reserved for pod(s) held, which no longer exist")
        # Any change to the claim requeues it: the remediation a 1.34 user has.
        kube.patch(*kinds.RESOURCE_CLAIM, name, REQUEUE, namespace)
    wait_pod_claims_gone(kube, namespace, "held", "the stranded")


def test_pod_created_before_its_device_class_runs_once_the_class_appears(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    late = f"late.dra-harness.io/gpu-{namespace.rsplit('-', 1)[1]}"
    kube.create(b.legacy_pod("early", namespace, late, 1, node_selector=pool.node_selector))

    pod = wait_unschedulable(kube, namespace, "early")
    assert unschedulable_reasons(scheduling_message(pod)).get(f"Insufficient {late}") == 1
    class_name = f"{namespace}-late"
    objects.create(
        b.device_class(
            class_name, selectors=[f'device.driver == "{driver.driver}"'], extended_resource_name=late
        )
    )
    # 1.34: the class's event does not requeue the pod; another event, or the unschedulable
    # queue's flush, does.
    requeued = class_add_requeues_fit_rejected_pod(cell.number)
    late_run = TIMEOUTS.pod_running if requeued else TIMEOUTS.unschedulable_flush
    wait_phase(kube, namespace, "early", "Running", timeout=late_run)
    [claim] = claims_of(kube, namespace, "early")
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == class_name


def test_implicit_name_of_a_class_without_extended_resource_name(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=2)
    class_name = f"{namespace}-plain"
    objects.create(b.device_class(class_name, selectors=[f'device.driver == "{driver.driver}"']))
    implicit = f"deviceclass.resource.kubernetes.io/{class_name}"
    kube.create(b.legacy_pod("implicit", namespace, implicit, 2, node_selector=pool.node_selector))

    pod = wait_phase(kube, namespace, "implicit", "Running")

    if not implicit_names_recognized(cell.number):  # bound with nothing allocated
        assert claims_of(kube, namespace, "implicit") == []
        assert "extendedResourceClaimStatus" not in pod["status"]
        return
    [claim] = claims_of(kube, namespace, "implicit")
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-0",
            "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": 2},
        }
    ]


@pytest.mark.bridged
def test_implicit_name_of_a_class_that_also_sets_extended_resource_name(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, cell: Cell
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    implicit = f"deviceclass.resource.kubernetes.io/{driver.device_class}"
    kube.create(b.legacy_pod("implicit", namespace, implicit, 1, node_selector=pool.node_selector))

    pod = wait_phase(kube, namespace, "implicit", "Running")
    if implicit_name_alongside_explicit(cell.number):
        [claim] = claims_of(kube, namespace, "implicit")
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == driver.device_class
    else:  # 1.34: no implicit name is recognized, so the pod is bound with nothing allocated
        assert not implicit_names_recognized(cell.number)
        assert claims_of(kube, namespace, "implicit") == []
        assert "extendedResourceClaimStatus" not in pod["status"]
