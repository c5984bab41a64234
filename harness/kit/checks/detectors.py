"""Detectors for the migration failure modes: plain functions over API objects (dicts).

The failure-mode suites stage each mode on a live cluster and assert what these report;
the readiness scan runs the same functions against any cluster it can read. Each returns
Findings that name the subject, what is wrong, and what to change.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.core.expectations import ambiguous_mapping_outcome
from harness.kit.cel import COST_LIMIT, Outcome, count_matches, over_limit, published_devices
from harness.kit.kube import Obj

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
NATIVE_RESOURCES = {"cpu", "memory", "pods", "ephemeral-storage"}


class Severity(enum.IntEnum):
    INFO = 0
    WARNING = 1
    BLOCKING = 2


@dataclass(frozen=True)
class Finding:
    check: str
    severity: Severity
    subject: str
    message: str
    remediation: str


def quantity_int(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def class_mappings(classes: Iterable[Obj]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name, explicit names and implicit ones."""
    mapping: dict[str, str] = {}
    for c in classes:
        name = c["metadata"]["name"]
        mapping[IMPLICIT_PREFIX + name] = name
        explicit = (c.get("spec") or {}).get("extendedResourceName")
        if explicit:
            mapping[explicit] = name
    return mapping


def mapping_claimants(classes: Iterable[Obj]) -> dict[str, list[str]]:
    """Extended resource name -> every DeviceClass mapping it (explicit and implicit names),
    oldest first, the one kube-scheduler prefers last (the newest; among classes created in
    the same second the lower name, harness.core.expectations.ambiguous_mapping_outcome)."""
    claimants: dict[str, list[tuple[str, str]]] = {}
    for c in classes:
        meta = c["metadata"]
        key = (str(meta.get("creationTimestamp") or ""), meta["name"])
        claimants.setdefault(IMPLICIT_PREFIX + meta["name"], []).append(key)
        explicit = (c.get("spec") or {}).get("extendedResourceName")
        if explicit:
            claimants.setdefault(explicit, []).append(key)

    def order(keys: list[tuple[str, str]]) -> list[str]:
        by_name = sorted(set(keys), key=lambda k: k[1], reverse=True)
        return [n for _, n in sorted(by_name, key=lambda k: k[0])]

    return {name: order(keys) for name, keys in claimants.items()}


def pending_requesters(pods: Iterable[Obj], resource: str) -> list[str]:
    """namespace/name of the Pending, not deleted pods that request `resource`."""
    return sorted(
        f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}"
        for p in pods
        if (p.get("status") or {}).get("phase", "Pending") == "Pending"
        and not p["metadata"].get("deletionTimestamp")
        and resource in requested_extended_resources(p)
    )


def detect_ambiguous_mappings(
    classes: Iterable[Obj], pods: Iterable[Obj], version: tuple[int, int]
) -> list[Finding]:
    """Extended resource names two or more DeviceClasses map: the scheduler picks one class
    (per minor: harness.core.expectations.ambiguous_mapping_outcome), so pods asking for the name
    get that class's devices or none, and on 1.35+ lose the name when one class goes."""
    pods = list(pods)
    findings = []
    for resource, names in sorted(mapping_claimants(classes).items()):
        if len(names) < 2:
            continue
        stranded = pending_requesters(pods, resource)
        shown = ", ".join(stranded[:5]) + (f" and {len(stranded) - 5} more" if len(stranded) > 5 else "")
        findings.append(
            Finding(
                "ambiguous-mapping",
                Severity.BLOCKING,
                f"extendedresource/{resource}",
                f"mapped by {len(names)} DeviceClasses ({', '.join(names)}): "
                f"{ambiguous_mapping_outcome(version, names)}; "
                + (
                    f"{len(stranded)} Pending pod(s) request it: {shown}"
                    if stranded
                    else "no Pending pod requests it"
                ),
                f"keep extendedResourceName: {resource} on one DeviceClass (remove it from the others), "
                "then restart kube-scheduler (an update of the class that keeps it gives the name back "
                "to new pods only)",
            )
        )
    return findings


def _class_drivers(classes: Iterable[Obj], slices: Iterable[Obj], resource: str) -> set[str]:
    """Drivers whose devices a class mapping `resource` can select (by its selectors)."""
    mapped = [c for c in classes if (c.get("spec") or {}).get("extendedResourceName") == resource]
    devices = published_devices(slices)
    drivers = set()
    for c in mapped:
        exprs = [s["cel"]["expression"] for s in (c["spec"].get("selectors") or []) if "cel" in s]
        for driver in {d for d, _, _ in devices}:
            if count_matches(exprs, [x for x in devices if x[0] == driver])[Outcome.MATCH]:
                drivers.add(driver)
    return drivers


def detect_double_stack(
    nodes: Iterable[Obj],
    slices: Iterable[Obj],
    classes: Iterable[Obj],
    resource: str,
    gpu_drivers: Iterable[str] = (),
) -> list[Finding]:
    """Nodes that advertise `resource` through the device plugin while a DRA driver publishes
    devices there that a class mapping `resource` (or a known GPU driver) offers."""
    slices = list(slices)
    suspect = _class_drivers(classes, slices, resource) | set(gpu_drivers)
    on_node: dict[str, set[str]] = {}
    for s in slices:
        node = s["spec"].get("nodeName")
        if node and s["spec"]["driver"] in suspect and s["spec"].get("devices"):
            on_node.setdefault(node, set()).add(s["spec"]["driver"])
    findings = []
    for n in nodes:
        name = n["metadata"]["name"]
        advertised = quantity_int(((n.get("status") or {}).get("allocatable") or {}).get(resource, 0))
        if advertised > 0 and name in on_node:
            drivers = ", ".join(sorted(on_node[name]))
            findings.append(
                Finding(
                    "double-stack",
                    Severity.BLOCKING,
                    f"node/{name}",
                    f"advertises {resource}: {advertised} through the device plugin and DRA driver {drivers} "
                    f"publishes the same node's GPUs: both can promise the same physical device",
                    f"exclude node {name} from the device-plugin DaemonSet (node affinity) before installing "
                    f"the DRA driver there; a device is managed by one mechanism at a time",
                )
            )
    return findings


def requested_extended_resources(pod: Obj) -> dict[str, int]:
    """Extended resources a pod requests (max over init containers, sum over containers)."""
    spec = pod.get("spec") or {}

    def of(container: Obj) -> dict[str, int]:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return {
            k: quantity_int(v)
            for k, v in merged.items()
            if k not in NATIVE_RESOURCES and not k.startswith("hugepages-") and "/" in k
        }

    total: dict[str, int] = {}
    for c in spec.get("containers") or []:
        for k, v in of(c).items():
            total[k] = total.get(k, 0) + v
    for c in spec.get("initContainers") or []:
        for k, v in of(c).items():
            total[k] = max(total.get(k, 0), v)
    return {k: v for k, v in total.items() if v > 0}


def detect_bridge_unavailable(version: tuple[int, int], gates: Mapping[str, bool]) -> list[Finding]:
    """Is extended-resource bridging on in this cluster? Gates may be unknown (empty)."""
    if version < (1, 34):
        return [
            Finding(
                "bridge-support",
                Severity.BLOCKING,
                "cluster",
                f"Kubernetes {version[0]}.{version[1]} has no DRA extended resources (KEP-5004)",
                "upgrade to 1.36+ (beta, on by default) or 1.37 (GA)",
            )
        ]
    state = gates.get("DRAExtendedResource")
    if state is False or (state is None and version < (1, 36)):
        return [
            Finding(
                "bridge-support",
                Severity.BLOCKING,
                "cluster",
                f"DRAExtendedResource is off in {version[0]}.{version[1]}: pods requesting "
                "nvidia.com/gpu stay Pending on DRA-only nodes (Insufficient nvidia.com/gpu)",
                "enable DRAExtendedResource on kube-apiserver, kube-scheduler, kube-controller-manager "
                "and kubelet, or upgrade to 1.36+",
            )
        ]
    return []


def detect_selectors_matching_nothing(
    classes: Iterable[Obj], slices: Iterable[Obj], used_classes: Iterable[str] | None = None
) -> list[Finding]:
    """DeviceClass selectors evaluated against every published device.

    A class that matches nothing is blocking when something depends on it (it maps an
    extended resource, or a claim/template in `used_classes` names it); otherwise it is
    only noted (e.g. a MIG class on a fleet without MIG). `used_classes=None` treats every
    class as used.
    """
    devices = published_devices(slices)
    used = None if used_classes is None else set(used_classes)
    findings = []
    for c in classes:
        name = c["metadata"]["name"]
        spec = c.get("spec") or {}
        exprs = [s["cel"]["expression"] for s in spec.get("selectors") or [] if "cel" in s]
        counts = count_matches(exprs, devices)
        subject = f"deviceclass/{name}"
        depended_on = bool(spec.get("extendedResourceName")) or used is None or name in used
        if counts[Outcome.RUNTIME_ERROR]:
            findings.append(
                Finding(
                    "selector-runtime-error",
                    Severity.BLOCKING if depended_on else Severity.WARNING,
                    subject,
                    f"its selector fails with a CEL runtime error on {counts[Outcome.RUNTIME_ERROR]} "
                    'published device(s): claims using it stay Pending with "CEL runtime error"',
                    "guard attribute reads with has(...) or select on attributes every driver version "
                    "publishes",
                )
            )
        elif counts[Outcome.OVER_LIMIT]:
            findings.append(
                Finding(
                    "selector-not-evaluated",
                    Severity.WARNING,
                    subject,
                    f"its selector was not evaluated: {over_limit(exprs)}; not judged "
                    f'(kube-scheduler stops a selector at {COST_LIMIT:,} cost units: "actual cost limit '
                    'exceeded")',
                    "simplify the selector (no nested macros over long lists)",
                )
            )
        elif counts[Outcome.UNKNOWN] and not counts[Outcome.MATCH]:
            findings.append(
                Finding(
                    "selector-not-evaluated",
                    Severity.INFO,
                    subject,
                    "its selector uses CEL this scanner cannot evaluate; not judged",
                    "check it by hand",
                )
            )
        elif devices and not counts[Outcome.MATCH]:
            findings.append(
                Finding(
                    "selector-matches-nothing",
                    Severity.BLOCKING if depended_on else Severity.INFO,
                    subject,
                    f"its selector matches none of the {len(devices)} published devices",
                    "inspect `kubectl get resourceslices -o yaml` and fix the selector",
                )
            )
    return findings


@dataclass(frozen=True)
class PoolAccount:
    pool: str
    nodes: int
    allocatable: int  # what node status says (device plugin)
    dra_devices: int  # devices published in ResourceSlices
    dra_allocated: int  # devices allocated to claims


def account(
    nodes: Iterable[Obj],
    slices: Iterable[Obj],
    claims: Iterable[Obj],
    resource: str,
    pool_label: str = "",
    pool_of: Mapping[str, str] | None = None,
) -> list[PoolAccount]:
    """Per pool (`pool_of` node -> pool, else the node's `pool_label`): allocatable `resource`
    vs DRA devices vs allocated DRA devices."""
    nodes = list(nodes)
    if pool_of is None:
        pool_of = {
            n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(pool_label, "<unlabelled>")
            for n in nodes
        }
    allocatable: dict[str, int] = {}
    members: dict[str, int] = {}
    for n in nodes:
        pool = pool_of[n["metadata"]["name"]]
        members[pool] = members.get(pool, 0) + 1
        value = ((n.get("status") or {}).get("allocatable") or {}).get(resource, 0)
        allocatable[pool] = allocatable.get(pool, 0) + quantity_int(value)
    devices: dict[str, int] = {}
    for s in slices:
        on = pool_of.get(s["spec"].get("nodeName") or "")
        if on is not None:
            devices[on] = devices.get(on, 0) + len(s["spec"].get("devices") or [])
    allocated: dict[str, int] = {}
    for c in claims:
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
            of = pool_of.get(r["pool"])
            if of is not None:
                allocated[of] = allocated.get(of, 0) + 1
    return [
        PoolAccount(p, members[p], allocatable.get(p, 0), devices.get(p, 0), allocated.get(p, 0))
        for p in sorted(members)
    ]


def detect_accounting_gaps(
    accounts: Iterable[PoolAccount], quotas: Iterable[Obj], resource: str, version: tuple[int, int]
) -> list[Finding]:
    """Where node allocatable and quotas on the legacy name stop telling the truth."""
    findings = []
    for a in accounts:
        if a.dra_devices and a.allocatable == 0:
            findings.append(
                Finding(
                    "accounting",
                    Severity.INFO,  # a reminder: it blocks nothing by itself
                    f"pool/{a.pool}",
                    f"node allocatable {resource} is 0 on {a.nodes} node(s) while ResourceSlices hold "
                    f"{a.dra_devices} devices ({a.dra_allocated} allocated): dashboards and alerts reading "
                    f"allocatable {resource} undercount this pool",
                    "read DRA capacity from ResourceSlices and usage from ResourceClaims (or the scheduler's "
                    "DRA metrics) for migrated pools",
                )
            )
    legacy_key = f"requests.{resource}"
    for q in quotas:
        if legacy_key in ((q.get("spec") or {}).get("hard") or {}):
            meta = q["metadata"]
            counts_dra = version >= (1, 35)
            findings.append(
                Finding(
                    "quota-legacy-name",
                    Severity.INFO if counts_dra else Severity.WARNING,
                    f"resourcequota/{meta.get('namespace', '')}/{meta['name']}",
                    f"limits {legacy_key}; "
                    + (
                        "this version counts DRA-backed requests and claim devices under it too"
                        if counts_dra
                        else "this version may not count DRA claim devices under it (unverified before 1.35)"
                    ),
                    "add <class>.deviceclass.resource.k8s.io/devices limits for the DRA classes behind "
                    f"{resource}",
                )
            )
    return findings
