"""In-place control-plane upgrade and downgrade of a LocalCluster: the components of minor N
stop and those of the target start on the same etcd data, PKI and ports, one at a time in
upstream's order (kube-apiserver, then kube-controller-manager and kube-scheduler), then the
kubelets of real nodes that ran the old minor, one node at a time (harness.clusters.
kubeletupgrade: drained first as upstream documents, in place, or kept at their minor).

    with LocalCluster("1.36", "dra-all") as cluster:
        upgrade(cluster, "1.37")   # cluster.upgrade("1.37") does the same
        upgrade(cluster, "1.36")   # and back (refused while a kubelet runs 1.37)

Refused with one line, before anything stops: a step of more than one minor, a kubelet newer
than the target or more than three minors older, objects stored in an API version the target
cannot decode (they would be unreadable after the step), a gate profile the target does not
know, a target kubelet that is not built.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from harness.clusters.local.components import Tuning
from harness.clusters.local.kubelets import (
    DEFAULT_KUBELET_MODE,
    KubeletCluster,
    kubelet_parts,
    nodes_to_swap,
    swap_kubelets,
)
from harness.controlplane.build import ensure_controlplane
from harness.controlplane.gates import KnownGate, known_gates, validate_profile
from harness.core.errors import HarnessError, WaitTimeout
from harness.core.upgrade_facts import API_REMOVALS, ApiRemoval
from harness.core.versions import GateProfile, Minor, minor_number
from harness.kit.kube import API_ERRORS, Kube


class UpgradableCluster(KubeletCluster, Protocol):
    """What the step reads and changes of its cluster (LocalCluster is one; named here, not
    imported, since LocalCluster.upgrade calls this module)."""

    tuning: Tuning

    @property
    def minor(self) -> Minor: ...
    @property
    def binary(self) -> Path: ...
    @property
    def known_gates(self) -> dict[str, KnownGate]: ...
    def use_control_plane(
        self, minor: Minor, profile: GateProfile, binary: Path, gates: dict[str, KnownGate]
    ) -> None: ...
    def restart(self, component: str) -> None: ...
    def write_state(self) -> None: ...


# kubernetes/website content/en/releases/version-skew-policy.md ("Supported version skew",
# "Supported component upgrade order"): kube-apiserver moves one minor at a time; kubelet must
# not be newer than kube-apiserver and may be up to three minors older; the controller-manager
# and scheduler must not be newer than the kube-apiserver they talk to, so they go after it.
SKEW_POLICY = "https://kubernetes.io/releases/version-skew-policy/"
CONTROL_PLANE_ORDER = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
KUBELET_MAX_BEHIND = 3


class UpgradeRefused(HarnessError):
    """The step is refused before anything stops; the cluster runs on unchanged."""


@dataclass(frozen=True)
class StorageDrop:
    """Objects the `before` minor stores as `group_version` and the `after` minor cannot
    decode: they must be deleted (or migrated) before the step."""

    before: str
    after: str
    group_version: str
    resources: tuple[str, ...]  # plural resource names, listed through the `before` API server
    source: str  # upstream source for both halves of the fact


STORAGE_DROPS = (
    StorageDrop(
        "1.36",
        "1.37",
        "scheduling.k8s.io/v1alpha2",
        ("workloads", "podgroups"),
        "kubernetes/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go@v1.36.3 stores "
        "workloads and podgroups as v1alpha2; pkg/apis/scheduling/install/install.go@v1.37.2 "
        "registers v1, v1beta1 and v1alpha3 only",
    ),
    StorageDrop(
        "1.37",
        "1.36",
        "scheduling.k8s.io/v1beta1",
        ("workloads", "podgroups"),
        "kubernetes/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go@v1.37.2 stores "
        "workloads and podgroups as v1beta1; staging/src/k8s.io/api/scheduling/v1beta1/register.go"
        "@v1.36.3 registers PriorityClass only",
    ),
    StorageDrop(
        "1.35",
        "1.36",
        "scheduling.k8s.io/v1alpha1",
        ("workloads",),
        "kubernetes/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go@v1.35.4 stores "
        "workloads as v1alpha1; pkg/apis/scheduling/install/install.go@v1.36.3 registers v1, "
        "v1beta1 and v1alpha2 only",
    ),
    StorageDrop(
        "1.38",
        "1.37",
        "scheduling.k8s.io/v1beta1",
        ("compositepodgroups",),
        "kubernetes/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go@v1.38.0-beta.0 "
        "line 91 stores compositepodgroups as v1beta1 (v1alpha3 @v1.37.2); "
        "staging/src/k8s.io/api/scheduling/v1beta1/register.go@v1.37.2 registers PriorityClass, "
        "Workload and PodGroup only (CompositePodGroup from @v1.38.0-beta.0 line 53)",
    ),
    StorageDrop(
        "1.36",
        "1.35",
        "scheduling.k8s.io/v1alpha2",
        ("workloads", "podgroups"),
        "kubernetes/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go@v1.36.3 stores "
        "workloads and podgroups as v1alpha2; pkg/apis/scheduling/install/install.go@v1.35.4 "
        "registers v1, v1beta1 and v1alpha1 only",
    ),
)


def _name(minor: tuple[int, int]) -> str:
    return f"{minor[0]}.{minor[1]}"


def skew_refusal(current: str, target: str, kubelets: Iterable[str] = ()) -> str | None:
    """Why upstream's version-skew policy forbids the step, or None."""
    cur, tgt = minor_number(current), minor_number(target)
    if cur == tgt:
        return f"the control plane already runs {current}"
    if cur[0] != tgt[0] or abs(cur[1] - tgt[1]) != 1:
        return (
            f"{current} -> {target} skips a minor: kube-apiserver moves one minor at a time "
            f"({SKEW_POLICY}); step through each minor"
        )
    for kubelet in sorted(set(kubelets), key=minor_number):
        k = minor_number(kubelet)
        if k > tgt:
            return (
                f"a kubelet of {kubelet} would be newer than kube-apiserver {target}, which the "
                f"version-skew policy forbids ({SKEW_POLICY}); replace those nodes first"
            )
        if tgt[1] - k[1] > KUBELET_MAX_BEHIND:
            return (
                f"a kubelet of {kubelet} would be more than {KUBELET_MAX_BEHIND} minors older than "
                f"kube-apiserver {target} ({SKEW_POLICY}); upgrade those nodes first"
            )
    return None


def kubelet_refusal(control_plane: str, kubelet: str) -> str | None:
    """Why a kubelet of `kubelet` may not run under `control_plane`'s kube-apiserver, or None."""
    k, cp = minor_number(kubelet), minor_number(control_plane)
    if k > cp or cp[1] - k[1] > KUBELET_MAX_BEHIND:
        return (
            f"the version-skew policy lets a {control_plane} control plane run kubelets of {control_plane} "
            f"and up to {KUBELET_MAX_BEHIND} minors older ({SKEW_POLICY})"
        )
    return None


def storage_drops(before: str, after: str) -> list[StorageDrop]:
    return [d for d in STORAGE_DROPS if (d.before, d.after) == (before, after)]


def served_kinds(kube: Kube, group_version: str) -> dict[str, str]:
    """resource -> kind of what the API server serves in `group_version` ({} if not served)."""
    status, body = kube.raw_get(f"/apis/{group_version}")
    if status == 404:
        return {}
    if status != 200:
        raise HarnessError(f"discovery of {group_version}: HTTP {status}: {body[:200]}")
    return {r["name"]: r["kind"] for r in json.loads(body)["resources"] if "/" not in r["name"]}


def stored_in_dropped_versions(kube: Kube, before: str, after: str) -> list[str]:
    """`<group/version> <resource> <namespace>/<name>` of every object the step would strand,
    listed through the running (`before`) API server. A version it does not serve holds
    nothing: the API server writes only the versions it serves."""
    found = []
    for drop in storage_drops(before, after):
        served = served_kinds(kube, drop.group_version)
        for resource in drop.resources:
            if resource not in served:
                continue
            for obj in kube.list(drop.group_version, served[resource]):
                meta = obj["metadata"]
                found.append(f"{drop.group_version} {resource} {meta.get('namespace', '')}/{meta['name']}")
    return found


@dataclass(frozen=True)
class RemovedApiWriter:
    """An object some client wrote through an API version a later release stops serving."""

    removal: ApiRemoval
    resource: str  # "deviceclasses"
    name: str  # "<namespace>/<name>", or "<name>" for a cluster-scoped object
    managers: tuple[str, ...]  # the managedFields managers that wrote through it


def stored_refusal(kubeconfig: Path, before: str, after: str) -> str | None:
    """Why objects stored in a version `after` cannot read forbid the step, or None."""
    kube = Kube.from_kubeconfig(kubeconfig)
    try:
        stranded = stored_in_dropped_versions(kube, before, after)
    except API_ERRORS as err:  # not serving (a step or a restart under way): one line
        raise kube.failure(err, "the list of objects stored in versions the target drops") from None
    finally:
        kube.close()
    if not stranded:
        return None
    drop = storage_drops(before, after)[0]
    return (
        f"{len(stranded)} object(s) stored as {drop.group_version}, which {after} cannot read "
        f"({drop.source}); delete them before the step: {', '.join(stranded[:5])}"
    )


def written_through(kube: Kube, removal: ApiRemoval) -> list[RemovedApiWriter]:
    """Objects whose managedFields record a write through `removal`'s version (each entry
    keeps the apiVersion its manager used), listed through the version that replaces it.
    The objects stay readable (harness.core.upgrade_facts); their writers break at the removal."""
    served = served_kinds(kube, removal.group_version)
    if not served:  # not served here: no client can write through it
        return []
    current = preferred_version(kube, removal.group_version.split("/")[0])
    found = []
    for resource, kind in sorted(served.items()):
        if kind not in removal.kinds:
            continue
        for obj in kube.list(current, kind):
            meta = obj["metadata"]
            managers = sorted(
                {
                    m.get("manager", "?")
                    for m in meta.get("managedFields") or []
                    if m.get("apiVersion") == removal.group_version
                }
            )
            if managers:
                name = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
                found.append(RemovedApiWriter(removal, resource, name, tuple(managers)))
    return found


def crossed_removal_writers(kube: Kube, before: str, after: str) -> list[RemovedApiWriter]:
    """Writers through a version served on `before` and no longer on `after` (an upgrade
    across its APILifecycleRemoved release): not a refusal, the objects stay readable."""
    low, high = minor_number(before), minor_number(after)
    crossed = [r for r in API_REMOVALS if low < minor_number(r.removed) <= high]
    return [w for r in crossed for w in written_through(kube, r)]


def preferred_version(kube: Kube, group: str) -> str:
    """The group/version the API server prefers for `group` (discovery's preferredVersion)."""
    status, body = kube.raw_get(f"/apis/{group}")
    if status != 200:
        raise HarnessError(f"discovery of {group}: HTTP {status}: {body[:200]}")
    return str(json.loads(body)["preferredVersion"]["groupVersion"])


def upgrade(
    cluster: UpgradableCluster,
    to_minor: str,
    kubelets: str = DEFAULT_KUBELET_MODE,
    timings: dict[str, float] | None = None,
) -> float:
    """Replace the control plane with `to_minor` (one minor up or down), then, on an upgrade,
    the kubelets that ran the old minor (`kubelets`: "drain", "in-place" or "keep"); returns
    the seconds the step took (`timings` gets each control-plane component's). Refused
    (UpgradeRefused, nothing stopped) when the policy or the stored objects forbid it."""
    before = cluster.minor.name
    swapped = nodes_to_swap(dict(_kubelets(cluster)), before, to_minor, kubelets)
    # The policy is checked on the kubelets as they will be once the step is done.
    refusal = skew_refusal(before, to_minor, [to_minor if n in swapped else m for n, m in _kubelets(cluster)])
    if refusal:
        raise UpgradeRefused(refusal)
    target = cluster.matrix.minor(to_minor)
    profile = target.profile(cluster.profile.name)
    stranded = stored_refusal(cluster.kubeconfig, before, to_minor)
    if stranded:  # before anything is built: a step that cannot happen never asks for a build
        raise UpgradeRefused(stranded)
    try:
        parts = kubelet_parts(cluster, to_minor) if swapped else None
    except HarnessError as err:
        raise UpgradeRefused(str(err)) from None
    binary = ensure_controlplane(target)
    gates = known_gates(binary)
    validate_profile(target, profile, gates)
    started = time.monotonic()
    old = (cluster.minor, cluster.profile, cluster.binary, cluster.known_gates)
    cluster.use_control_plane(target, profile, binary, gates)
    for i, name in enumerate(CONTROL_PLANE_ORDER):
        began = time.monotonic()
        try:
            cluster.restart(name)
            if timings is not None:
                timings[name] = time.monotonic() - began
        except (HarnessError, WaitTimeout):
            if i == 0:  # the new API server never served: the old one takes over again
                cluster.use_control_plane(*old)
                cluster.restart(name)
            raise
    if parts is not None:
        swap_kubelets(cluster, swapped, to_minor, parts, drain=kubelets == "drain")
    cluster.write_state()
    return time.monotonic() - started


def _kubelets(cluster: UpgradableCluster) -> list[tuple[str, str]]:
    """(node, minor of its kubelet) of the cluster's real nodes (kwok nodes have none)."""
    return sorted(cluster.real.minors.items()) if cluster.real is not None else []


def emulated_version(cluster: UpgradableCluster) -> str:
    """The --emulated-version the cluster's API server runs with ("" for the binary's own)."""
    flags = cluster.tuning.component_flags.get("kube-apiserver", ())
    return next((f.split("=", 1)[1] for f in flags if f.startswith("--emulated-version=")), "")


def gate_refusal(cluster: UpgradableCluster, gates: Mapping[str, bool]) -> str | None:
    """Why the control plane cannot run with `gates`: a gate locked to its default in the
    binary can be changed only while it emulates an earlier minor where it was not locked
    (upstream's gate-cycle test does the same: test/e2e_dra/featuregatecycle_test.go)."""
    for gate, value in sorted(gates.items()):
        known = cluster.known_gates.get(gate)
        if known is None:
            return f"Kubernetes {cluster.minor.name} has no feature gate {gate}"
        if known.locked and value != known.default and not emulated_version(cluster):
            return (
                f"{gate} is locked to {str(known.default).lower()} in {cluster.minor.name} "
                f"({known.pre_release or 'GA'}); start the cluster with --emulated-version "
                "of an earlier minor"
            )
    return None


def set_gates(cluster: UpgradableCluster, gates: Mapping[str, bool]) -> float:
    """Restart kube-apiserver, then kube-controller-manager and kube-scheduler, with `gates`
    over the profile's (`{}`: the profile's own again); returns the seconds it took."""
    refusal = gate_refusal(cluster, gates)
    if refusal:
        raise UpgradeRefused(refusal)
    overrides = [f"--feature-gates={','.join(f'{g}={str(v).lower()}' for g, v in sorted(gates.items()))}"]
    flags = dict(cluster.tuning.component_flags)
    for name in CONTROL_PLANE_ORDER:
        kept = [f for f in flags.get(name, ()) if not f.startswith("--feature-gates=")]
        flags[name] = [*kept, *(overrides if gates else [])]
    cluster.tuning = replace(cluster.tuning, component_flags=flags)
    started = time.monotonic()
    for name in CONTROL_PLANE_ORDER:
        cluster.restart(name)
    cluster.write_state()
    return time.monotonic() - started


def emulating(minor: str) -> Tuning:
    """The tuning that makes the control plane emulate `minor` (KEP-4330 compatibility
    versions): every component of the control plane gets the same --emulated-version."""
    return Tuning(component_flags={name: [f"--emulated-version={minor}"] for name in CONTROL_PLANE_ORDER})
