"""`dra-harness scan --target 1.37`: pre-upgrade findings for a target minor, read-only.

- objects stored in an API version the target cannot read (harness.clusters.local.upgrade.STORAGE_DROPS);
- objects written through an API version deprecated by the target and removed by it or later
  (harness.core.upgrade_facts.API_REMOVALS): blocking once the target no longer serves it, a
  warning before;
- a target more than one minor ahead (the skew policy's one-minor-at-a-time);
- feature gates the cluster runs at a value the target removes or locks (the gates from the
  API server's kubernetes_feature_enabled metric, the target's from its built binary);
- PrometheusRule objects (where the CRD is served) whose expressions name renamed metrics;
- kubelets the target leaves more than three minors behind, or that run bridged pods
  without their devices (harness.core.expectations.kubelet_prepares_bridged_claim).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness.clusters.local.upgrade import (
    KUBELET_MAX_BEHIND,
    SKEW_POLICY,
    STORAGE_DROPS,
    served_kinds,
    stored_in_dropped_versions,
    written_through,
)
from harness.controlplane.build import binary_path
from harness.controlplane.gates import KnownGate, known_gates
from harness.core.expectations import kubelet_prepares_bridged_claim
from harness.core.upgrade_facts import gate_removals_ahead, removals_ahead, renamed_metrics
from harness.core.versions import Matrix, minor_number
from harness.kit.checks.detectors import Finding, Severity
from harness.kit.kube import ForbiddenError, Kube, Obj
from harness.scan.checks import NOT_CHECKED

PROMETHEUS_RULES = "monitoring.coreos.com/v1"
_VERSION = re.compile(r"^v(\d+)\.(\d+)")


def _name(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def path_to(current: str, target: str) -> list[tuple[str, str]]:
    """The one-minor steps from `current` up to `target`."""
    (major, low), (_, high) = minor_number(current), minor_number(target)
    return [(f"{major}.{m}", f"{major}.{m + 1}") for m in range(low, high)]


def stored_findings(kube: Kube, current: str, target: str) -> list[Finding]:
    findings = []
    for before, after in path_to(current, target)[:1]:  # later steps: what the first leaves
        try:
            stranded = stored_in_dropped_versions(kube, before, after)
        except ForbiddenError:
            groups = sorted({d.group_version.split("/")[0] for d in STORAGE_DROPS})
            why = f"needs list on the objects {after} cannot read ({', '.join(groups)})"
            return [Finding("stored-api-version", Severity.INFO, NOT_CHECKED, why, "")]
        for obj in stranded:
            gv, resource, name = obj.split(" ")
            findings.append(
                Finding(
                    "stored-api-version",
                    Severity.BLOCKING,
                    f"{resource}/{name}",
                    f"stored as {gv}, which {after} cannot read",
                    f"delete it (or recreate it in a version {after} serves) before upgrading to {after}",
                )
            )
    if len(path_to(current, target)) > 1:
        findings.append(
            Finding(
                "upgrade-path",
                Severity.WARNING,
                "cluster",
                f"{current} -> {target} is {len(path_to(current, target))} steps: kube-apiserver moves one "
                f"minor at a time ({SKEW_POLICY})",
                "upgrade through each minor, scanning with --target before each step",
            )
        )
    return findings


def removal_findings(kube: Kube, current: str, target: str) -> list[Finding]:
    """Objects written through a version the way to `target` deprecates or removes: their
    writers (drivers, controllers, manifests) must move to the version that replaces it."""
    findings = []
    for removal in removals_ahead(current, target):
        removed = minor_number(target) >= minor_number(removal.removed)
        for w in written_through(kube, removal):
            findings.append(
                Finding(
                    "api-removal",
                    Severity.BLOCKING if removed else Severity.WARNING,
                    f"{w.resource}/{w.name}",
                    f"written through {removal.group_version} by {', '.join(w.managers)}; "
                    f"{removal.removed} no longer serves it ({removal.source})",
                    f"move {', '.join(w.managers)} to {removal.group_version.split('/')[0]}/v1 before "
                    f"{removal.removed}; the object itself stays readable",
                )
            )
    return findings


def gate_findings(
    running: Mapping[str, bool],
    target: str,
    target_gates: Mapping[str, KnownGate],
    current_gates: Mapping[str, KnownGate],
) -> list[Finding]:
    """Gates the cluster runs away from their default that the target removes, and gates the
    target locks to another value. Gates it removes that run at their default are listed in one
    INFO finding: only a --feature-gates flag naming them breaks, which the metric cannot show."""
    findings, quiet = [], []
    for gate, value in sorted(running.items()):
        known, now = target_gates.get(gate), current_gates.get(gate)
        if known is None and now is not None and value == now.default:
            quiet.append(gate)
        elif known is None:
            findings.append(
                Finding(
                    "gate-removed",
                    Severity.WARNING,
                    f"gate/{gate}",
                    f"runs {str(value).lower()}; {target} has no such gate",
                    "drop it from every component's --feature-gates: a component refuses unknown gates",
                )
            )
        elif known.locked and value != known.default:
            findings.append(
                Finding(
                    "gate-locked",
                    Severity.BLOCKING,
                    f"gate/{gate}",
                    f"runs {str(value).lower()}; {target} locks it to {str(known.default).lower()}",
                    f"stop relying on {gate}={str(value).lower()} and drop it from --feature-gates",
                )
            )
    if quiet:
        findings.append(
            Finding(
                "gate-removed",
                Severity.INFO,
                "cluster",
                f"{len(quiet)} gates running at their default are gone in {target}: {', '.join(quiet)}",
                "remove any of them from --feature-gates before the upgrade",
            )
        )
    return findings


def _expressions(rule_object: Obj) -> list[tuple[str, str]]:
    """(rule name, expression) of every rule of a PrometheusRule."""
    return [
        (str(r.get("alert") or r.get("record") or "?"), str(r.get("expr", "")))
        for g in (rule_object.get("spec") or {}).get("groups") or []
        for r in g.get("rules") or []
    ]


def metric_findings(kube: Kube, current: str, target: str) -> list[Finding]:
    renames = [r for before, after in path_to(current, target) for r in renamed_metrics(before, after)]
    if not renames or "prometheusrules" not in served_kinds(kube, PROMETHEUS_RULES):
        return []
    try:
        rules = kube.list(PROMETHEUS_RULES, "PrometheusRule")
    except ForbiddenError:
        return [
            Finding(
                "renamed-metrics",
                Severity.INFO,
                NOT_CHECKED,
                "needs list on prometheusrules (monitoring.coreos.com)",
                "bind the scan's user to deploy/scan/clusterrole.yaml",
            )
        ]
    findings = []
    for obj in rules:
        meta = obj["metadata"]
        for rule, expr in _expressions(obj):
            for r in renames:
                if re.search(rf"\b{re.escape(r['from'])}\b", expr):
                    findings.append(
                        Finding(
                            "renamed-metrics",
                            Severity.WARNING,
                            f"prometheusrule/{meta.get('namespace', '')}/{meta['name']}",
                            f"rule {rule} uses {r['from']}, renamed in {target} to {r['to']}",
                            f"use {r['to']} ({r['note']}; {r['source']})",
                        )
                    )
    return findings


def kubelet_findings(nodes: list[Obj], target: str) -> list[Finding]:
    t = minor_number(target)
    findings = []
    for n in nodes:
        version = ((n.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
        m = _VERSION.match(version)
        if not m:
            continue
        k = (int(m[1]), int(m[2]))
        node = f"node/{n['metadata']['name']}"
        if t[1] - k[1] > KUBELET_MAX_BEHIND:
            findings.append(
                Finding(
                    "kubelet-too-old",
                    Severity.BLOCKING,
                    node,
                    f"kubelet {version} would be more than {KUBELET_MAX_BEHIND} minors older than {target}",
                    f"upgrade the node to {_name((t[0], t[1] - KUBELET_MAX_BEHIND))} or later first "
                    f"({SKEW_POLICY})",
                )
            )
        elif not kubelet_prepares_bridged_claim(k):
            findings.append(
                Finding(
                    "kubelet-bridge",
                    Severity.WARNING,
                    node,
                    f"kubelet {version} runs bridged pods without their devices "
                    "(DRAExtendedResource off by default)",
                    "upgrade the node to 1.36 or later, or enable DRAExtendedResource on its kubelet",
                )
            )
    return findings


def target_findings(
    kube: Kube,
    matrix: Matrix,
    version: tuple[int, int],
    gates: Mapping[str, bool],
    nodes: list[Obj],
    target: str,
) -> list[Finding]:
    """Everything `--target` adds: the upgrade's findings, or for the cluster's own minor one
    line saying so, or for an older minor the downgrade's (downgrade_findings)."""
    current = _name(version)
    matrix.minor(target)  # unknown minor: one line
    if minor_number(target) == version:
        return [
            Finding(
                "target",
                Severity.INFO,
                "cluster",
                f"the cluster runs {current} already: nothing to check",
                "",
            )
        ]
    if minor_number(target) < version:
        return downgrade_findings(kube, nodes, current, target)
    findings = [
        *stored_findings(kube, current, target),
        *removal_findings(kube, current, target),
        *metric_findings(kube, current, target),
    ]
    binary = binary_path(matrix.minor(target))
    now = binary_path(matrix.minor(current)) if current in matrix.minors else None
    if binary.exists():
        current_gates = known_gates(now) if now is not None and now.exists() else {}
        findings += gate_findings(gates, target, known_gates(binary), current_gates)
    else:
        findings += known_gate_removals(gates, current, target)
    return findings + kubelet_findings(nodes, target)


def known_gate_removals(running: Mapping[str, bool], current: str, target: str) -> list[Finding]:
    """Without the target's built gate table: the removals harness.core.upgrade_facts knows, and
    gate-locked not made (it needs the table)."""
    build = f"dra-harness controlplane build -k {target}"
    lacking = Finding(
        "gate-locked",
        Severity.INFO,
        NOT_CHECKED,
        f"no gate table of {target} here: locks not compared",
        build,
    )
    if not running:
        why = "the API server's /metrics shows no gates"
        return [lacking, Finding("gate-removed", Severity.INFO, NOT_CHECKED, why, build)]
    removed = [g for g in gate_removals_ahead(current, target) if g.gate in running]
    findings = [
        Finding(
            "gate-removed",
            Severity.INFO,
            f"gate/{g.gate}",
            f"runs {str(running[g.gate]).lower()}; {target} has no such gate ({g.source})",
            "drop it from every component's --feature-gates before the upgrade: a component refuses "
            "unknown gates",
        )
        for g in removed
    ]
    return [lacking, *findings]


def downgrade_findings(kube: Kube, nodes: list[Obj], current: str, target: str) -> list[Finding]:
    """Going back to an older minor: objects the first step back strands (STORAGE_DROPS holds
    downgrade steps too), kubelets newer than the target control plane (the skew policy: a
    kubelet is never newer than kube-apiserver), and a path of more than one minor."""
    (major, low), (_, high) = minor_number(target), minor_number(current)
    first = f"{major}.{high - 1}"
    findings = [
        Finding(
            "stored-api-version",
            Severity.BLOCKING,
            f"{obj.split(' ')[1]}/{obj.split(' ')[2]}",
            f"stored as {obj.split(' ')[0]}, which {first} cannot read",
            f"delete it (or recreate it in a version {first} serves) before going back to {first}",
        )
        for obj in stored_in_dropped_versions(kube, current, first)
    ]
    if high - low > 1:
        findings.append(
            Finding(
                "upgrade-path",
                Severity.WARNING,
                "cluster",
                f"{current} -> {target} is {high - low} steps back: kube-apiserver moves one minor at a time "
                f"({SKEW_POLICY})",
                "go back through each minor, scanning with --target before each step",
            )
        )
    findings += newer_kubelets(nodes, target)
    findings.append(
        Finding(
            "target",
            Severity.INFO,
            "cluster",
            f"{target} is older than the cluster's {current}: a downgrade; gates, API removals and "
            "renamed metrics are compared for upgrades only",
            "",
        )
    )
    return findings


def newer_kubelets(nodes: list[Obj], target: str) -> list[Finding]:
    """Kubelets a control plane of `target` would have ahead of it (the skew policy forbids it)."""
    t = minor_number(target)
    findings = []
    for n in nodes:
        version = ((n.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
        m = _VERSION.match(version)
        if m and (int(m[1]), int(m[2])) > t:
            findings.append(
                Finding(
                    "kubelet-newer",
                    Severity.BLOCKING,
                    f"node/{n['metadata']['name']}",
                    f"kubelet {version} would be newer than kube-apiserver {target}",
                    f"move the node's kubelet to {target} or older first ({SKEW_POLICY})",
                )
            )
    return findings
