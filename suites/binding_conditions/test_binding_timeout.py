"""Binding timeout (KEP-5007): when the driver never reports the device attached, the scheduler
gives up after bindingTimeout, deallocates the claim and schedules the pod again.
Source: dynamicresources.go PreBind (ErrDeviceBindingTimeout "device binding timeout") and
isClaimTimeout @ v1.37.2. The timeout is 600 s unless the scheduler's DynamicResourcesArgs
shorten it, so the test starts a cluster of its own whose scheduler waits BINDING_TIMEOUT."""

from __future__ import annotations

import re
from contextlib import closing

import pytest

from fixtures.namespace import namespace_for
from fixtures.requirements import provider_unmet, skip, version_unmet
from harness.clusters.base import Cell
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.local.components import Tuning
from harness.clusters.nodes import POOL_LABEL, KwokPoolSpec, create_pool
from harness.core.expectations import binding_timeout_configurable
from harness.kit import kinds
from harness.kit.drastate import claims_of
from harness.kit.kube import Kube, Obj
from harness.kit.waits import TIMEOUTS, wait_for
from suites.binding_conditions.attachable import attachable_pod

BINDING_TIMEOUT_S = 10
# PreBind polls every 5 s up to the timeout, then the retry's PreFilter deallocates: a bound
# well above both.
GIVE_UP = BINDING_TIMEOUT_S + TIMEOUTS.claim_allocated

pytestmark = [
    pytest.mark.feature_gate("DRADeviceBindingConditions"),
    pytest.mark.feature_gate("DRAResourceClaimDeviceStatus"),
]


def _allocated_at(kube: Kube, namespace: str) -> str | None:
    found = claims_of(kube, namespace, "p")
    allocation = ((found[0].get("status") or {}).get("allocation") or {}) if found else {}
    stamp = allocation.get("allocationTimestamp")
    return str(stamp) if stamp else None


# Which check sees the timeout first is a race between PreBind's poll deadline and the claim's
# allocationTimestamp + bindingTimeout. 1.35.4 names them apart: "device binding timeout" (poll)
# or "claim <name> binding timeout" (dynamicresources.go isPodReadyForBinding); 1.36.3+ wrap
# both in ErrDeviceBindingTimeout ("device binding timeout: ...").
TIMEOUT_MESSAGE = re.compile(
    r'^running PreBind plugin "DynamicResources": (device|claim p-gpu-\S+) binding timeout'
)


def _timeout_events(kube: Kube, namespace: str) -> list[Obj]:
    return [e for e in kube.events(namespace, "p") if TIMEOUT_MESSAGE.match(e.get("message", ""))]


def test_a_pod_whose_device_is_never_attached_is_rescheduled_after_the_binding_timeout(
    cell: Cell, request: pytest.FixtureRequest
) -> None:
    if cell.provider != "local":
        skip(provider_unmet("needs a cluster of its own with a short bindingTimeout: local provider only"))
    if not binding_timeout_configurable(cell.number):
        skip(version_unmet(cell, "1.35") or provider_unmet("bindingTimeout not configurable here"))
    tuning = Tuning(scheduler_plugin_args={"DynamicResources": {"bindingTimeout": f"{BINDING_TIMEOUT_S}s"}})
    with (
        LocalCluster(cell.minor, cell.profile, tuning=tuning) as cluster,
        closing(Kube.from_kubeconfig(cluster.kubeconfig)) as kube,
        namespace_for(kube, request.node.nodeid) as namespace,
    ):
        pool = KwokPoolSpec(name=f"{namespace[:50]}-p", count=1)
        create_pool(kube, pool)
        for body in attachable_pod(namespace, pool.node_names()[0], {POOL_LABEL: pool.name}):
            kube.create(body)
        first = wait_for(
            lambda: _allocated_at(kube, namespace),
            bool,
            timeout=TIMEOUTS.claim_allocated,
            describe="claim of pod p allocated",
        )

        again = wait_for(
            lambda: _allocated_at(kube, namespace),
            lambda stamp: stamp is not None and stamp != first,
            timeout=GIVE_UP,
            describe=f"claim of pod p deallocated and allocated again after {BINDING_TIMEOUT_S}s",
        )

        events = wait_for(
            lambda: _timeout_events(kube, namespace),
            bool,
            timeout=TIMEOUTS.api_object,
            describe="an event on pod p naming the device binding timeout",
        )
        assert events[0]["reason"] == "FailedScheduling"
        assert kube.get(*kinds.POD, "p", namespace)["spec"].get("nodeName") is None
        assert str(again) > str(first)
