"""Upstream facts an upgrade changes that are not API storage (harness.clusters.upgrade has
those): metrics renamed between minors, each with its source. Read by the upgrade report and
by `dra-harness scan --target`."""

from __future__ import annotations

from dataclasses import dataclass

from harness.versions import minor_number


@dataclass(frozen=True)
class MetricRename:
    old: str
    new: str
    minor: str  # the first minor with the new name
    note: str
    source: str


METRIC_RENAMES = (
    MetricRename(
        "resourceclaim_controller_creates_total",
        "dynamic_resource_allocation_resourceclaim_creates_total",
        "1.37",
        "labels owner_api_group and owner_api_kind added; kube-scheduler exposes it too",
        "k8s.io/dynamic-resource-allocation resourceclaim/metrics/metrics.go@v0.37.2; before: "
        "kubernetes/kubernetes pkg/controller/resourceclaim/metrics/metrics.go@v1.36.3",
    ),
    MetricRename(
        "resourceclaim_controller_resource_claims",
        "dynamic_resource_allocation_resource_claims",
        "1.37",
        "same labels (allocated, admin_access, source)",
        "kubernetes/kubernetes pkg/controller/resourceclaim/metrics/metrics.go@v1.37.2 and @v1.36.3",
    ),
)


def renamed_metrics(before: str, after: str) -> list[dict[str, str]]:
    """Renames crossed by the step, as {"from", "to", ...} in the step's direction."""
    low, high = sorted((before, after), key=minor_number)
    out = []
    for r in METRIC_RENAMES:
        if minor_number(low) < minor_number(r.minor) <= minor_number(high):
            old, new = (r.old, r.new) if before == low else (r.new, r.old)
            out.append({"from": old, "to": new, "note": r.note, "source": r.source})
    return out
