"""The readiness scan's pools and its list of checks: every check it ran, with PASS, WARN,
BLOCKING or NOT APPLICABLE and why, what bridging the cluster offers, and a JUnit file with one
test case per check (BLOCKING and WARN are failures, NOT APPLICABLE is skipped).

Pools are read per node from the first well-known pool label it carries (POOL_LABELS: GKE,
EKS, AKS, Karpenter, then this project's own), or from the one label `--pool-label` names.
Nodes without one are grouped under NO_POOL and named, never dropped."""

from __future__ import annotations

import enum
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.controlplane.gates import dra_gates
from harness.core.expectations import bridge_reaches_nodes_a_device_plugin_left
from harness.core.redaction import redact
from harness.kit.cel import Outcome, count_matches, published_devices
from harness.kit.checks.conventions import GKE, LOOKED_FOR, cluster_conventions, conventions_of
from harness.kit.checks.detectors import Finding, Severity, mapping_claimants, requested_extended_resources
from harness.kit.checks.migration import NOT_ACCELERATOR, time_sliced_nodes
from harness.kit.kube import Obj
from harness.scan.state import ClusterState

POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
    "dra-harness.io/pool",
)
NO_POOL = "(no pool label)"
DEVICE_PLUGIN_HINTS = ("device-plugin", "k8s-device-plugin")
SHOWN = 5  # names listed before "and N more"


def _some(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


@dataclass(frozen=True)
class Pools:
    override: str | None  # --pool-label, or None: detected per node
    of: dict[str, str]  # node -> pool
    label_of: dict[str, str]  # pool -> the label it was read from ("" for NO_POOL)

    def members(self, pool: str) -> list[str]:
        return sorted(n for n, p in self.of.items() if p == pool)

    def lines(self) -> list[str]:
        source = f"--pool-label {self.override}" if self.override else "detected"
        labels = sorted({v for v in self.label_of.values() if v})
        head = f"pools ({source}): by {', '.join(labels) or 'no pool label'}"
        out = [head]
        for pool in sorted(self.label_of):
            nodes = self.members(pool)
            out.append(f"  {pool}: {len(nodes)} node(s): {_some(nodes)}")
        return out


def detect_pools(nodes: Iterable[Obj], override: str | None = None) -> Pools:
    """Each node's pool from the first of `override` or POOL_LABELS it carries; a value seen
    under two labels is named `value (label)` so two pools never merge."""
    labels = (override,) if override else POOL_LABELS
    found: dict[str, tuple[str, str]] = {}  # node -> (label, value)
    for n in nodes:
        carried = n["metadata"].get("labels") or {}
        key = next((k for k in labels if carried.get(k)), "")
        found[n["metadata"]["name"]] = (key, carried[key] if key else NO_POOL)
    under: dict[str, set[str]] = {}
    for key, value in found.values():
        under.setdefault(value, set()).add(key)
    of, label_of = {}, {}
    for node, (key, value) in found.items():
        pool = value if len(under[value]) == 1 else f"{value} ({key or 'no label'})"
        of[node], label_of[pool] = pool, key
    return Pools(override, of, label_of)


def gates_statement(state: ClusterState) -> str:
    """Which DRA gates the API server reports on and off, or that it reports none."""
    gates = dra_gates(state.gates)
    if not gates:
        return "DRA gates: not visible (the API server's /metrics has no kubernetes_feature_enabled for them)"
    on = ", ".join(g for g, v in gates.items() if v) or "none"
    off = ", ".join(g for g, v in gates.items() if not v) or "none"
    return f"DRA gates (kube-apiserver): on: {on}; off: {off}"


def bridging_statements(state: ClusterState, pools: Pools, bridge_on: bool) -> list[str]:
    """Per explicit extended resource name: which class serves it on which pools."""
    if not bridge_on:
        return ["bridging: off in this cluster (bridge-support): no extended resource name is served by DRA"]
    classes = {c["metadata"]["name"]: c for c in state.classes}
    devices = published_devices(state.slices)
    out = []
    for resource, names in sorted(mapping_claimants(state.classes).items()):
        explicit = [
            n for n in names if (classes[n].get("spec") or {}).get("extendedResourceName") == resource
        ]
        if not explicit:
            continue
        if len(explicit) > 1:
            out.append(
                f"bridging: {resource}: not reliable, {len(explicit)} DeviceClasses map it "
                "(ambiguous-mapping)"
            )
            continue
        spec = classes[explicit[0]].get("spec") or {}
        exprs = [s["cel"]["expression"] for s in spec.get("selectors") or [] if "cel" in s]
        served = sorted(
            {
                pools.of[node]
                for d, node, dev in devices
                if node in pools.of and count_matches(exprs, [(d, node, dev)])[Outcome.MATCH]
            }
        )
        where = (
            f"on pools {_some(served)}" if served else "on no pool (no published device matches its class)"
        )
        out.append(f"bridging: {resource} -> DeviceClass {explicit[0]} {where}")
    return out or ["bridging: no DeviceClass sets extendedResourceName: no legacy name is bridged"]


def device_plugin_daemonsets(state: ClusterState) -> list[Finding]:
    """Device-plugin DaemonSets whose pods run on nodes that also carry DRA slices."""
    dra_nodes = {s["spec"].get("nodeName") for s in state.slices if s["spec"].get("devices")} - {None}
    findings = []
    for ds in state.daemonsets:
        images = [c.get("image", "") for c in ds["spec"]["template"]["spec"].get("containers") or []]
        name = ds["metadata"]["name"]
        if not any(h in name or any(h in i for i in images) for h in DEVICE_PLUGIN_HINTS):
            continue
        uid = ds["metadata"]["uid"]
        on = sorted(
            {
                p["spec"].get("nodeName")
                for p in state.pods
                if any(o.get("uid") == uid for o in p["metadata"].get("ownerReferences") or [])
            }
            & dra_nodes
        )
        if on:
            findings.append(
                Finding(
                    "device-plugin-daemonset",
                    Severity.BLOCKING,
                    f"daemonset/{ds['metadata']['namespace']}/{name}",
                    f"runs on {len(on)} node(s) that also publish DRA devices: {', '.join(on[:5])}",
                    "add node affinity to the DaemonSet that excludes migrated pools",
                )
            )
    return findings


def kubelet_skew(state: ClusterState) -> list[Finding]:
    """Kubelet minors inside each DRA driver's set of nodes."""
    kubelet = {
        n["metadata"]["name"]: (n.get("status") or {}).get("nodeInfo", {}).get("kubeletVersion", "")
        for n in state.nodes
    }
    findings = []
    by_driver: dict[str, set[str]] = {}
    for s in state.slices:
        node = s["spec"].get("nodeName")
        if node in kubelet:
            by_driver.setdefault(s["spec"]["driver"], set()).add(node)
    for driver, nodes in sorted(by_driver.items()):
        minors = {
            ".".join(kubelet[n].lstrip("v").split(".")[:2]) for n in nodes if kubelet[n].startswith("v")
        }
        if len(minors) > 1:
            findings.append(
                Finding(
                    "kubelet-skew",
                    Severity.WARNING,
                    f"driver/{driver}",
                    f"its {len(nodes)} nodes run kubelets of different minors: {', '.join(sorted(minors))}",
                    "older kubelets may not support the DRA features the pool relies on "
                    "(extended-resource admission, partitionable devices): upgrade the pool evenly",
                )
            )
    return findings


class Status(enum.Enum):
    PASS = "PASS"
    WARN = "WARN"
    BLOCKING = "BLOCKING"
    NOT_APPLICABLE = "NOT APPLICABLE"


@dataclass(frozen=True)
class CheckResult:
    check: str
    status: Status
    why: str


# check -> the findings' `check` names it covers (a check covers its own name too).
COVERS: dict[str, tuple[str, ...]] = {
    "device-class-selectors": (
        "selector-runtime-error",
        "selector-not-evaluated",
        "selector-matches-nothing",
    ),
    "accounting": ("accounting", "quota-legacy-name"),
    "unmapped-legacy-resource": (NOT_ACCELERATOR,),
    "device-taints": ("device-taints", "device-taint-rule", "tainted-pool"),
}
TARGET_CHECKS = (
    "stored-api-version",
    "upgrade-path",
    "api-removal",
    "api-client",
    "gate-removed",
    "gate-locked",
    "gate-flag",
    "rejected-shape",
    "renamed-metrics",
    "kubelet-too-old",
    "kubelet-bridge",
)


def _applicability(state: ClusterState, resource: str) -> dict[str, tuple[str, str]]:
    """check -> (why it does not apply, '' when it does; what its PASS means)."""
    minor = f"{state.version[0]}.{state.version[1]}"
    dra_nodes = {s["spec"].get("nodeName") for s in state.slices if s["spec"].get("devices")} - {None}
    explicit = [c for c in state.classes if (c.get("spec") or {}).get("extendedResourceName")]
    no_slices = "" if dra_nodes else "no node publishes DRA devices"
    requested = {r for p in state.pods for r in requested_extended_resources(p)}
    gate = state.gates.get("DRAExtendedResource")
    shared = time_sliced_nodes(state.nodes, resource)
    gke_dra = [n for n in state.nodes if n["metadata"]["name"] in dra_nodes and GKE in conventions_of(n)]
    return {
        "bridge-support": (
            "",
            "DRAExtendedResource is on"
            + (" (the API server's metrics)" if gate else f" by default in {minor} (gates not visible)"),
        ),
        "ambiguous-mapping": (
            "" if explicit else "no DeviceClass sets extendedResourceName",
            f"{len(explicit)} DeviceClass(es) set extendedResourceName, each to a name no other class maps",
        ),
        "double-stack": (
            no_slices,
            f"no node of the {len(dra_nodes)} publishing DRA devices advertises {resource}",
        ),
        "device-plugin-daemonset": (
            no_slices,
            "no device-plugin DaemonSet runs on a node publishing DRA devices",
        ),
        "unmapped-legacy-resource": (
            "" if requested else "no pod requests an extended resource",
            f"each of the {len(requested)} extended resource name(s) pods request is mapped by a DeviceClass",
        ),
        "served-both-ways": (
            no_slices or ("" if explicit else "no DeviceClass sets extendedResourceName"),
            "no node advertises through the device plugin a name a DeviceClass maps to its DRA devices",
        ),
        "time-slicing": (
            "" if any(g.sharing for g in shared) else f"no node shares {resource} by a convention it knows",
            f"no node's device plugin time-slices or MPS-shares {resource}",
        ),
        "mig-plain-name": (
            "" if any(g.partition for g in shared) else f"no node advertises MIG partitions as {resource}",
            f"no node advertises MIG partitions as {resource}",
        ),
        "node-conventions": ("", "no node carries the labels of two clouds"),
        "cloud-device-plugin": (
            "" if gke_dra else "no GKE node publishes DRA devices",
            f"the {len(gke_dra)} GKE node(s) publishing DRA devices keep GKE's device plugin off",
        ),
        "device-class-selectors": (
            "" if state.classes else "no DeviceClass",
            f"the selectors of the {len(state.classes)} DeviceClasses match published devices "
            "or nothing depends on them",
        ),
        "kubelet-skew": (no_slices, "each DRA driver's nodes run kubelets of one minor"),
        "device-plugin-leftover": (
            f"Kubernetes {minor} bridges pods to nodes a device plugin left"
            if bridge_reaches_nodes_a_device_plugin_left(state.version)
            else "",
            f"no node publishing DRA devices still lists {resource}: 0",
        ),
        "stranded-claim": (
            "" if state.claims else "no ResourceClaim",
            "no deleted claim is reserved for a pod that is gone",
        ),
        "accounting": (no_slices, "notes only: where allocatable and quotas undercount DRA pools"),
        "device-taints": (
            # Off, kube-apiserver drops the taints drivers publish (pkg/registry/resource/
            # resourceslice/strategy.go:229-237 @ v1.37.2): a PASS would promise what it cannot see.
            "DRADeviceTaints is off on kube-apiserver: it drops the taints drivers publish"
            if state.gates.get("DRADeviceTaints") is False
            else "",
            "no published device carries a taint that keeps claims off and no DeviceTaintRule is in force",
        ),
        "claim-objects": ("", "counted"),
    }


NOT_CHECKED = "not-checked"  # the subject of a finding saying why its check could not be made


def _result(check: str, covered: list[Finding], not_applicable: str, passed: str) -> CheckResult:
    worst = max((f.severity for f in covered), default=Severity.INFO)
    lacking = [f.message for f in covered if f.subject == NOT_CHECKED]
    if worst == Severity.INFO and lacking:
        return CheckResult(check, Status.NOT_APPLICABLE, "; ".join(lacking))
    if worst > Severity.INFO:
        worst_ones = [f for f in covered if f.severity == worst]
        status = Status.BLOCKING if worst == Severity.BLOCKING else Status.WARN
        first = worst_ones[0]
        return CheckResult(check, status, f"{len(worst_ones)} finding(s); {first.subject}: {first.message}")
    if not_applicable and not covered:
        return CheckResult(check, Status.NOT_APPLICABLE, not_applicable)
    notes = f" ({len(covered)} note(s))" if covered else ""
    return CheckResult(check, Status.PASS, passed + notes)


def check_results(
    state: ClusterState, findings: list[Finding], resource: str, target: str | None
) -> list[CheckResult]:
    """Every check the scan ran (or, with no --target, did not), with its status and why."""
    by_check: dict[str, list[Finding]] = {}
    for f in findings:
        owner = next((c for c, covers in COVERS.items() if f.check in covers), f.check)
        by_check.setdefault(owner, []).append(f)
    results = [
        _result(c, by_check.get(c, []), na, ok) for c, (na, ok) in _applicability(state, resource).items()
    ]
    for check in TARGET_CHECKS:
        na = "" if target else "no --target given"
        results.append(_result(check, by_check.get(check, []), na, f"nothing found for the step to {target}"))
    known = {r.check for r in results}
    results += [_result(c, fs, "", "") for c, fs in sorted(by_check.items()) if c not in known]
    return results


def conventions_statement(nodes: Iterable[Obj]) -> str:
    """Which clouds' and NVIDIA's node conventions the scan found, or which it looked for."""
    seen = cluster_conventions(nodes)
    if not seen:
        return f"node conventions: none found; looked for {LOOKED_FOR}"
    return "node conventions: " + ", ".join(f"{c} ({len(n)} node(s))" for c, n in sorted(seen.items()))


def not_checked(state: ClusterState) -> list[str]:
    """What the scan cannot see from the API, said at the end of every report."""
    lines = [
        "not checked: the nodes' side (driver roots, containerd's CDI set-up, the kubelet's plugin "
        "registration), the drivers' own versions and configuration, and pods not yet created "
        "by anything but the workloads listed",
    ]
    if state.unread:
        lines.append(f"not checked (no permission): {', '.join(state.unread)}")
    return lines


def check_lines(results: Iterable[CheckResult]) -> list[str]:
    return [f"{r.status.value:<14} {r.check:<26} {r.why}" for r in results]


def render_junit(results: Iterable[CheckResult], git_version: str) -> str:
    """One test case per check; BLOCKING and WARN fail (type says which), NOT APPLICABLE skips."""
    results = list(results)
    suite = ET.Element(
        "testsuite",
        name="dra-harness scan",
        tests=str(len(results)),
        failures=str(sum(r.status in (Status.BLOCKING, Status.WARN) for r in results)),
        skipped=str(sum(r.status is Status.NOT_APPLICABLE for r in results)),
    )
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="kubernetes", value=git_version)
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="dra-harness.scan", name=r.check)
        if r.status in (Status.BLOCKING, Status.WARN):
            ET.SubElement(case, "failure", type=r.status.value, message=redact(r.why))
        elif r.status is Status.NOT_APPLICABLE:
            ET.SubElement(case, "skipped", message=redact(r.why))
        else:
            ET.SubElement(case, "system-out").text = redact(r.why)
    ET.indent(suite)
    text: str = ET.tostring(suite, encoding="unicode", xml_declaration=True)
    return text + "\n"


def summary_for(results: Iterable[CheckResult]) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    return counts
