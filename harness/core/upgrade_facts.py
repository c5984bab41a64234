"""Upstream facts an upgrade changes that are not API storage (harness.clusters.local.upgrade has
those): metrics renamed between minors, and API versions a release stops serving, each with
its source, and whether a minor can still serve resource.k8s.io/v1beta1. Read by the upgrade
report, by `dra-harness scan --target` and the API-version suites."""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.versions import minor_number


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


# k8s.io/api resource/<version>/zz_generated.prerelease-lifecycle.go@v0.37.2 gives each kind's
# APILifecycleDeprecated and APILifecycleRemoved; k8s.io/apiserver pkg/server/deleted_kinds.go
# @v0.37.2 (ShouldServeForVersion) stops serving a kind from the GA of its "removed" release.
# What the removal strands is clients, not data: kubernetes/kubernetes
# pkg/kubeapiserver/default_storage_factory_builder.go@v1.34.4..@v1.37.2 overrides no storage
# version of these kinds, so they are stored in the group's first-priority version
# (pkg/apis/resource/install/install.go, SetVersionPriority): v1beta2 in 1.34 (@v1.34.4), v1
# from 1.35 (@v1.35.4..@v1.37.2); never v1beta1 since 1.34. And a version no longer served
# stays in the scheme, so what it stored still decodes: flowcontrol/v1beta1, removed in 1.26,
# is still installed in pkg/apis/flowcontrol/install/install.go@v1.37.2.
DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
LIFECYCLE_SOURCE = "k8s.io/api resource/{version}/zz_generated.prerelease-lifecycle.go@v0.37.2"


@dataclass(frozen=True)
class ApiRemoval:
    group_version: str
    kinds: tuple[str, ...]
    deprecated: str  # APILifecycleDeprecated
    removed: str  # APILifecycleRemoved: the first minor that no longer serves it
    source: str


API_REMOVALS = (
    ApiRemoval(
        "resource.k8s.io/v1beta1",
        DRA_KINDS,
        "1.35",
        "1.38",
        LIFECYCLE_SOURCE.format(version="v1beta1") + " (APILifecycleRemoved: 1, 38)",
    ),
    ApiRemoval(
        "resource.k8s.io/v1beta2",
        DRA_KINDS,
        "1.36",
        "1.39",
        LIFECYCLE_SOURCE.format(version="v1beta2") + " (APILifecycleRemoved: 1, 39)",
    ),
)


def removals_ahead(current: str, target: str) -> list[ApiRemoval]:
    """Removals a cluster on `current` must prepare for when it heads for `target`: the version
    is still served on `current` and deprecated by `target` (removed by then, or later)."""
    now, then = minor_number(current), minor_number(target)
    return [r for r in API_REMOVALS if now < minor_number(r.removed) and minor_number(r.deprecated) <= then]


def resource_v1beta1_served(version: tuple[int, int]) -> bool:
    """Can the API server serve resource.k8s.io/v1beta1 (with runtime-config; off by default
    since 1.34)?

    1.34.4-1.37.2: yes, deprecated in 1.35 (k8s.io/api resource/v1beta1/
    zz_generated.prerelease-lifecycle.go @ v0.37.2: APILifecycleRemoved 1, 38).
    1.38.0-beta.0: no. The same file @ v0.38.0-beta.0 lines 38-40 (DeviceClass; every kind
    alike) says removed in 1.38, and k8s.io/apiserver pkg/server/deleted_kinds.go
    ShouldServeForVersion (line 150 @ v0.38.0-beta.0) stops serving a kind in its removal
    release (a beta build included; only an alpha build, line 164, or the environment variable
    KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE, line 167, keep it), so no runtime-config
    brings it back; the dra-all profile of 1.38 does not ask for it (versions.toml).
    """
    return version < (1, 38)


@dataclass(frozen=True)
class GateRemoval:
    gate: str
    removed: str  # the first minor without it
    source: str


# What `scan --target` says of gates where the target's control plane is not built (no
# `featuregates` table): the removals read in the sources; locks need the built table.
GATE_REMOVALS = (
    GateRemoval(
        "DynamicResourceAllocation",
        "1.38",
        "k8s.io/kubernetes pkg/features/kube_features.go@v1.37.2 (GA, locked to true since 1.35, "
        "'remove completely in 1.38'); absent from it @v1.38.0-beta.0",
    ),
)


def gate_removals_ahead(current: str, target: str) -> list[GateRemoval]:
    return [
        g for g in GATE_REMOVALS if minor_number(current) < minor_number(g.removed) <= minor_number(target)
    ]
