"""The migration guide's three verification checks, as plain functions.

1. ResourceSlices exist for every GPU node (`kubectl get resourceslices`).
2. An allocated claim exists in the pod's namespace (`kubectl get resourceclaims`).
3. The pod's status records the claim (`resourceClaimStatuses` or, for bridged extended
   resources, `extendedResourceClaimStatus`).

Each returns a list of problems (empty = the check passed), so suites assert `== []` and the
readiness scan can report the same findings against a live cluster.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.kit import kinds
from harness.kit.drastate import devices_per_node, recorded_claim_names
from harness.kit.kube import Kube, Obj


def check_slices_per_node(kube: Kube, driver: str, nodes: Iterable[str]) -> list[str]:
    counts = devices_per_node(kube, driver)
    return [f"node {n} has no {driver} devices in any ResourceSlice" for n in nodes if not counts.get(n)]


def check_pod_claims(kube: Kube, pod: Obj) -> list[str]:
    """Checks 2 and 3 for one pod: every claim it records exists, is allocated and reserved for it."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    recorded = recorded_claim_names(pod)
    if not recorded:
        return [f"pod {namespace}/{name} records no ResourceClaim in its status"]
    problems = []
    for claim_name in recorded:
        claims = [
            c for c in kube.list(*kinds.RESOURCE_CLAIM, namespace) if c["metadata"]["name"] == claim_name
        ]
        if not claims:
            problems.append(f"claim {namespace}/{claim_name} recorded by pod {name} does not exist")
            continue
        status = claims[0].get("status", {})
        if not status.get("allocation"):
            problems.append(f"claim {namespace}/{claim_name} is not allocated")
        if not any(r.get("uid") == pod["metadata"]["uid"] for r in status.get("reservedFor") or []):
            problems.append(f"claim {namespace}/{claim_name} is not reserved for pod {name}")
    return problems


def verify(kube: Kube, driver: str, nodes: Iterable[str], pods: Iterable[Obj]) -> list[str]:
    """All three checks."""
    problems = check_slices_per_node(kube, driver, nodes)
    for pod in pods:
        problems += check_pod_claims(kube, pod)
    return problems
