"""`dra-harness scan`: a read-only readiness scan of a live cluster.

It needs only get/list on the objects below and reuses the failure-mode detectors, so what
the suites stage on the local cluster is what the scan finds on a real one.

Exit codes: harness.scan.exits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.controlplane.gates import dra_gates
from harness.core.expectations import (
    bridge_reaches_nodes_a_device_plugin_left,
    claim_controller_follows_bridged_pods,
)
from harness.core.redaction import redact, redact_obj
from harness.kit.checks.accelerators import AcceleratorScope
from harness.kit.checks.detectors import (
    Finding,
    Severity,
    account,
    detect_accounting_gaps,
    detect_ambiguous_mappings,
    detect_bridge_unavailable,
    detect_double_stack,
    detect_selectors_matching_nothing,
)
from harness.kit.checks.migration import (
    detect_cloud_device_plugin_on_dra_nodes,
    detect_conflicting_conventions,
    detect_served_both_ways,
    detect_time_slicing,
    detect_unmapped_legacy_requests,
)
from harness.kit.kube import Kube
from harness.scan.checks import (
    CheckResult,
    Pools,
    bridging_statements,
    check_lines,
    check_results,
    conventions_statement,
    detect_pools,
    device_plugin_daemonsets,
    gates_statement,
    kubelet_skew,
    not_checked,
    summary_for,
)
from harness.scan.exits import EXIT_BLOCKING, EXIT_READY, EXIT_WARNINGS
from harness.scan.read import read_state
from harness.scan.shapes import target_shape_findings
from harness.scan.state import ClusterState
from harness.scan.taints import (
    PoolTaints,
    rule_findings,
    slice_taint_findings,
    tainted_pool_findings,
    taints_by_pool,
    view_json,
    view_lines,
)

VERDICTS = {EXIT_READY: "READY", EXIT_WARNINGS: "READY WITH WARNINGS", EXIT_BLOCKING: "NOT READY"}
EXTENDED_RESOURCE_CLAIM = "resource.kubernetes.io/extended-resource-claim"


def leftover_device_plugin_resource(state: ClusterState, resource: str) -> list[Finding]:
    """Nodes publishing DRA devices that still list `resource` at 0 (the kubelet keeps a removed
    device plugin's resource), where the minor's scheduler then never bridges pods to them."""
    if bridge_reaches_nodes_a_device_plugin_left(state.version):
        return []
    if not any((c.get("spec") or {}).get("extendedResourceName") == resource for c in state.classes):
        return []
    dra_nodes = {s["spec"].get("nodeName") for s in state.slices if s["spec"].get("devices")}
    stuck = sorted(
        n["metadata"]["name"]
        for n in state.nodes
        if n["metadata"]["name"] in dra_nodes
        and str(((n.get("status") or {}).get("allocatable") or {}).get(resource, "")) == "0"
    )
    minor = f"{state.version[0]}.{state.version[1]}"
    return [
        Finding(
            "device-plugin-leftover",
            Severity.BLOCKING,
            f"node/{name}",
            f"publishes DRA devices but still lists {resource}: 0, so Kubernetes {minor} never "
            "schedules bridged pods onto it",
            f"remove {resource} from the node's status.capacity and status.allocatable once its "
            "kubelet has dropped the device plugin (5 minutes after it stopped), or upgrade to 1.35",
        )
        for name in stuck
    ]


def stranded_claims(state: ClusterState) -> list[Finding]:
    """Deleted claims still reserved for pods that are gone: their devices stay allocated and
    their namespace stays Terminating. On a minor whose claim controller ignores bridged pods'
    events (harness.core.expectations), a namespace deletion that reaches the claim first does this."""
    pods = {p["metadata"]["uid"] for p in state.pods}
    findings = []
    for claim in state.claims:
        meta = claim["metadata"]
        gone = [
            r["name"]
            for r in (claim.get("status") or {}).get("reservedFor") or []
            if r.get("resource") == "pods" and r.get("uid") not in pods
        ]
        if not meta.get("deletionTimestamp") or not gone:
            continue
        fix = "change the claim (e.g. add a label: any update requeues it) or restart kube-controller-manager"
        if not claim_controller_follows_bridged_pods(state.version):
            fix += "; 1.35 requeues it when the pod goes"
        findings.append(
            Finding(
                "stranded-claim",
                Severity.WARNING,
                f"resourceclaim/{meta['namespace']}/{meta['name']}",
                f"deleted but still reserved for pod(s) {', '.join(gone)}, which no longer exist: "
                "its devices stay allocated",
                fix,
            )
        )
    return findings


def _claim_counts(state: ClusterState) -> list[Finding]:
    bridged = sum(
        1
        for c in state.claims
        if (c["metadata"].get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM) == "true"
    )
    return [
        Finding(
            "claim-objects",
            Severity.INFO,
            "cluster",
            f"{len(state.claims)} ResourceClaims ({bridged} created by the scheduler for extended "
            f"resources), {len(state.templates)} ResourceClaimTemplates, {len(state.slices)} ResourceSlices",
            "watch API object counts and etcd size as pools move to DRA",
        )
    ]


def run_checks(
    state: ClusterState,
    resource: str,
    pools: Pools,
    gpu_drivers: Iterable[str],
    include: Iterable[str] = (),
) -> list[Finding]:
    used = {
        r["exactly"]["deviceClassName"]
        for t in state.templates
        for r in t["spec"]["spec"]["devices"].get("requests") or []
        if "exactly" in r
    }
    used |= {
        r["exactly"]["deviceClassName"]
        for c in state.claims
        for r in c["spec"]["devices"].get("requests") or []
        if "exactly" in r
    }
    scope = AcceleratorScope.of(state.classes, [resource, *include])
    findings = [
        *detect_bridge_unavailable(state.version, state.gates),
        *detect_ambiguous_mappings(state.classes, state.pods, state.version),
        *detect_double_stack(state.nodes, state.slices, state.classes, resource, gpu_drivers),
        *device_plugin_daemonsets(state),
        *detect_unmapped_legacy_requests(
            state.pods, state.classes, state.nodes, pools.of, scope, state.workloads
        ),
        *detect_time_slicing(state.nodes, state.pods, resource),
        *detect_conflicting_conventions(state.nodes),
        *detect_cloud_device_plugin_on_dra_nodes(state.nodes, state.slices, gpu_drivers),
        *detect_served_both_ways(state.nodes, state.slices, state.classes, state.version),
        *detect_selectors_matching_nothing(state.classes, state.slices, used),
        *kubelet_skew(state),
        *leftover_device_plugin_resource(state, resource),
        *stranded_claims(state),
        *detect_accounting_gaps(
            account(state.nodes, state.slices, state.claims, resource, pool_of=pools.of),
            state.quotas,
            resource,
            state.version,
        ),
        *slice_taint_findings(state.slices),
        *rule_findings(state.taint_rules, state.slices),
        *tainted_pool_findings(taints_by_pool(state.slices, state.taint_rules), state.slices, resource),
        *_claim_counts(state),
    ]
    return sorted(findings, key=lambda f: (-f.severity, f.check, f.subject))


def exit_code(findings: Iterable[Finding]) -> int:
    worst = max((f.severity for f in findings), default=Severity.INFO)
    return {Severity.BLOCKING: EXIT_BLOCKING, Severity.WARNING: EXIT_WARNINGS}.get(worst, EXIT_READY)


@dataclass(frozen=True)
class ScanResult:
    state: ClusterState
    findings: list[Finding]
    pools: Pools
    checks: list[CheckResult]
    bridging: list[str]
    taints: list[PoolTaints] = field(default_factory=list)  # tainted devices by pool (harness.scan.taints)


def render_text(result: ScanResult) -> str:
    state, findings = result.state, result.findings
    lines = [
        f"dra-harness scan: Kubernetes {state.git_version}, {len(state.nodes)} nodes, "
        f"{len(state.slices)} ResourceSlices",
        *result.pools.lines(),
        *result.bridging,
        gates_statement(state),
    ]
    lines += view_lines(result.taints)
    for f in findings:
        lines.append(f"{f.severity.name:<8} {f.check:<26} {f.subject}: {f.message}")
        if f.severity > Severity.INFO:
            lines.append(f"{'':<8} {'':<26} fix: {f.remediation}")
    counts = ", ".join(f"{n} {s}" for s, n in summary_for(result.checks).items())
    lines += [f"checks: {counts}", *check_lines(result.checks), *not_checked(state)]
    lines.append(f"verdict: {VERDICTS[exit_code(findings)]}")
    return redact("\n".join(lines))


def render_json(result: ScanResult) -> str:
    pools = result.pools
    data = {
        "kubernetes": result.state.git_version,
        "exit_code": exit_code(result.findings),
        "pools": {
            "pool_label": pools.override,
            "pools": [
                {"name": p, "label": pools.label_of[p], "nodes": pools.members(p)}
                for p in sorted(pools.label_of)
            ],
        },
        "bridging": result.bridging,
        "gates": dra_gates(result.state.gates),
        "tainted_devices": view_json(result.taints),
        "checks": [{"check": c.check, "status": c.status.value, "why": c.why} for c in result.checks],
        "findings": [asdict(f) | {"severity": f.severity.name} for f in result.findings],
        "not_checked": not_checked(result.state),
    }
    return json.dumps(redact_obj(data), indent=2)


def scan(
    kubeconfig: Path,
    resource: str,
    pool_label: str | None,
    gpu_drivers: Iterable[str],
    target: str | None = None,
    context: str | None = None,
    include: Iterable[str] = (),
) -> ScanResult:
    """What the cluster has and what the checks find in it (the CLI prints and exits); with
    `target`, the pre-upgrade findings for that minor too (harness.scan.target). Pools by
    `pool_label`, or detected from well-known labels (harness.scan.checks)."""
    kube = Kube.from_kubeconfig(kubeconfig, context)
    try:
        state = read_state(kube)
        extra = []
        if target:
            from harness.core.versions import load_matrix, minor_number
            from harness.scan.target import target_findings

            matrix = load_matrix()
            extra = target_findings(kube, matrix, state.version, state.gates, state.nodes, target)
            if minor_number(target) > state.version:  # an upgrade: the shapes and flags it refuses
                extra += target_shape_findings(state, matrix, target)
    finally:
        kube.close()
    return evaluate(state, resource, pool_label, gpu_drivers, target, include, extra)


def evaluate(
    state: ClusterState,
    resource: str,
    pool_label: str | None,
    gpu_drivers: Iterable[str],
    target: str | None = None,
    include: Iterable[str] = (),
    target_found: Iterable[Finding] = (),
) -> ScanResult:
    """What the checks find in what the scan read (`target_found`: --target's findings)."""
    pools = detect_pools(state.nodes, pool_label)
    findings = [*run_checks(state, resource, pools, gpu_drivers, include), *target_found]
    findings.sort(key=lambda f: (-f.severity, f.check, f.subject))
    bridge_on = not any(f.check == "bridge-support" and f.severity == Severity.BLOCKING for f in findings)
    return ScanResult(
        state,
        findings,
        pools,
        check_results(state, findings, resource, target),
        [*bridging_statements(state, pools, bridge_on), conventions_statement(state.nodes)],
        taints_by_pool(state.slices, state.taint_rules),
    )
