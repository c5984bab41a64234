"""Binding conditions (KEP-5007, DRADeviceBindingConditions): a device that must be attached
before use (a fabric-attached GPU) lists bindingConditions; the scheduler allocates it, then
holds the pod in PreBind until the driver reports the conditions True in the claim's
status.devices, and reschedules when a bindingFailureCondition turns True.
Source: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go PreBind,
isClaimReadyForBinding @ v1.34.4 and v1.37.2 (the same event text in both). Upstream
counterpart: kubernetes test/e2e/dra binding-conditions cases. Here the test plays the driver's
controller (harness.kit.drastate)."""

from __future__ import annotations

import pytest

from fixtures.nodes import MakePool
from harness.clusters.nodes import POOL_LABEL
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of, condition, set_conditions
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for
from suites.binding_conditions.attachable import ATTACHED, FAILED, attachable_pod

pytestmark = [
    pytest.mark.feature_gate("DRADeviceBindingConditions"),
    pytest.mark.feature_gate("DRAResourceClaimDeviceStatus"),
]


def _pod_waiting_for_attachment(kube: Kube, namespace: str, node_pool: MakePool, objects: Created) -> str:
    """One node with one attachable device, and pod "p" asking for it; returns the node."""
    pool = node_pool(1)
    [node] = pool.node_names()
    for body in attachable_pod(namespace, node, {POOL_LABEL: pool.name}):
        objects.create(body)
    return node


def _allocated_claim(kube: Kube, namespace: str, unless: Obj | None = None) -> Obj:
    """The pod's claim once allocated (and, with `unless`, allocated anew since that one)."""

    def claim() -> Obj | None:
        found = claims_of(kube, namespace, "p")
        return found[0] if found else None

    def fresh(c: Obj | None) -> bool:
        if c is None or not allocated_devices(c):
            return False
        return unless is None or not (c.get("status") or {}).get("devices")

    found = wait_for(claim, fresh, timeout=TIMEOUTS.claim_allocated, describe="claim of pod p allocated")
    assert found is not None
    return found


def _pending_event(kube: Kube, namespace: str) -> Obj:
    return wait_for(
        lambda: [e for e in kube.events(namespace, "p") if e.get("reason") == "BindingConditionsPending"],
        bool,
        timeout=TIMEOUTS.pod_scheduled,
        describe="event BindingConditionsPending on pod p",
    )[0]


def test_a_pod_binds_only_after_the_driver_reports_the_device_attached(
    kube: Kube, namespace: str, node_pool: MakePool, objects: Created
) -> None:
    node = _pod_waiting_for_attachment(kube, namespace, node_pool, objects)
    claim = _allocated_claim(kube, namespace)
    event = _pending_event(kube, namespace)
    unbound = kube.get(*kinds.POD, "p", namespace)

    set_conditions(kube, claim, condition(ATTACHED, True, "Attached", "fabric port up"))

    pod = wait_phase(kube, namespace, "p", "Running")
    assert event["message"] == f"waiting for binding conditions for device on node {node}"
    assert unbound["spec"].get("nodeName") is None
    [result] = allocated_devices(claim)
    assert (result["device"], result["bindingConditions"], result["bindingFailureConditions"]) == (
        "gpu-0",
        [ATTACHED],
        [FAILED],
    )
    assert pod["spec"]["nodeName"] == node


def test_a_binding_failure_condition_deallocates_the_claim_and_reschedules_the_pod(
    kube: Kube, namespace: str, node_pool: MakePool, objects: Created
) -> None:
    node = _pod_waiting_for_attachment(kube, namespace, node_pool, objects)
    failed = _allocated_claim(kube, namespace)
    _pending_event(kube, namespace)

    set_conditions(kube, failed, condition(FAILED, True, "AttachFailed", "fabric port down"))

    # The scheduler's next attempt deallocates (clearing the status the driver wrote) and
    # allocates again: a fresh allocation, nothing bound yet.
    again = _allocated_claim(kube, namespace, unless=failed)
    assert kube.get(*kinds.POD, "p", namespace)["spec"].get("nodeName") is None
    set_conditions(kube, again, condition(ATTACHED, True, "Attached", "fabric port up"))
    pod = wait_phase(kube, namespace, "p", "Running")
    assert pod["spec"]["nodeName"] == node
    assert again["metadata"]["uid"] == failed["metadata"]["uid"]
