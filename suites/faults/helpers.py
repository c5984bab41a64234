"""What every fault test checks after its fault: nothing lost, nothing promised twice."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.invariants import check_cluster
from harness.kit.kube import Kube
from harness.kit.pods import scheduling_message, unschedulable_reasons, wait_unschedulable
from harness.kit.waits import TIMEOUTS, wait_for


def settled(kube: Kube, namespace: str, running: Iterable[str], after: str) -> None:
    """Wait until every invariant holds: no device allocated twice, reservations match live
    pods, no orphaned scheduler-created claim, the `running` pods Running."""
    names = list(running)
    wait_for(
        lambda: check_cluster(kube, [namespace], running=[(namespace, n) for n in names]),
        lambda problems: problems == [],
        timeout=TIMEOUTS.pod_running,
        describe=f"cluster invariants after {after}",
    )


def assert_full(kube: Kube, namespace: str, resource: str, selector: Mapping[str, str], nodes: int) -> None:
    """One more GPU is refused on the pool's `nodes` nodes: nothing was promised twice."""
    kube.create(b.legacy_pod("one-too-many", namespace, resource, 1, node_selector=selector))
    pod = wait_unschedulable(kube, namespace, "one-too-many")
    assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == nodes
    kube.delete(*kinds.POD, "one-too-many", namespace)
