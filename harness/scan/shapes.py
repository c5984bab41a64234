"""`scan --target`: live objects whose shape the target minor rejects, and components whose
--feature-gates flag the target refuses. Pure: reads what harness.scan.cluster listed.

- `rejected-shape`: ResourceSlices, ResourceClaimTemplates and ResourceClaims carrying a shape a
  newer minor's validation rejects (fake_driver.rendering.apirules, each rule with its source line). A
  stored object stays (slices ratchet while their devices do not change; a claim's spec is not
  validated again), but its writer cannot create that shape any more: a template's next claim is
  refused, a driver's slice for a new node too. The slice-publishing helper's own rule is a
  warning: the API server accepts that shape, a driver rebuilt on the new helper stops
  publishing its pool.
- `gate-flag`: pods (static pods' mirror pods included) and controllers' pod templates whose
  containers pass --feature-gates naming a gate the target removed, or setting one the target
  locks to another value. Either makes the component exit at start
  (k8s.io/component-base featuregate/feature_gate.go:421 and :426 @v0.38.0-beta.0).
- `api-client`: deprecated API versions clients requested (the API server's
  apiserver_requested_deprecated_apis gauge), blocking where the target no longer serves them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from fake_driver.rendering.apirules import Violation, claim_violations, slice_violations
from harness.controlplane.build import binary_path
from harness.controlplane.gates import KnownGate, known_gates
from harness.core.upgrade_facts import gate_removals_ahead
from harness.core.versions import Matrix, minor_number
from harness.kit.checks.detectors import Finding, Severity
from harness.kit.checks.migration import Workload
from harness.kit.kube import Obj
from harness.scan.state import ClusterState

FEATURE_GATE_SOURCE = "k8s.io/component-base featuregate/feature_gate.go"


def _new(violations: Iterable[Violation], current: str) -> list[Violation]:
    """Only what the step adds: a rule the current minor already enforces is not news."""
    return [v for v in violations if v.rule.since > minor_number(current)]


def _subject(kind: str, obj: Obj) -> str:
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{kind}/{ns}/{meta['name']}" if ns else f"{kind}/{meta['name']}"


def shape_findings(
    slices: Iterable[Obj], templates: Iterable[Obj], claims: Iterable[Obj], current: str, target: str
) -> list[Finding]:
    t = minor_number(target)
    if t <= minor_number(current):
        return []
    findings = []
    for s in slices:
        for v in _new(slice_violations(s.get("spec") or {}, t), current):
            server = v.rule.enforced_by == "kube-apiserver"
            findings.append(
                Finding(
                    "rejected-shape",
                    Severity.BLOCKING if server else Severity.WARNING,
                    _subject("resourceslice", s),
                    f"{v.field} = {v.value!r}: {target} {'rejects' if server else 'helper refuses'} "
                    f'it, "{v.message}" ({v.rule.source})',
                    f"change driver {s['spec'].get('driver', '?')} to publish another name or shape "
                    + (
                        f"before {target}: the stored slice stays while its devices do not change, "
                        "a new one is refused"
                        if server
                        else "before rebuilding it on k8s.io/dynamic-resource-allocation "
                        f"{target}: that helper stops publishing the whole pool"
                    ),
                )
            )
    for tpl in templates:
        for v in _new(claim_violations((tpl.get("spec") or {}).get("spec") or {}, t, "spec.spec"), current):
            findings.append(
                Finding(
                    "rejected-shape",
                    Severity.BLOCKING,
                    _subject("resourceclaimtemplate", tpl),
                    f'{v.field} = {v.value!r}: {target} rejects it, "{v.message}" ({v.rule.source})',
                    f"recreate the template with a name of one slash at most before {target}: every "
                    "claim made from it is refused, so its pods never start",
                )
            )
    for c in claims:
        for v in _new(claim_violations(c.get("spec") or {}, t), current):
            findings.append(
                Finding(
                    "rejected-shape",
                    Severity.WARNING,
                    _subject("resourceclaim", c),
                    f'{v.field} = {v.value!r}: {target} rejects it, "{v.message}" ({v.rule.source})',
                    "the stored claim stays (its spec is immutable and not validated again); whatever "
                    f"writes claims like it must change before {target}",
                )
            )
    return findings


def feature_gate_flags(container: Obj) -> dict[str, str]:
    """gate -> value of every --feature-gates in a container's command and args."""
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    out: dict[str, str] = {}
    for i, w in enumerate(words):
        if w.startswith("--feature-gates="):
            value = w.split("=", 1)[1]
        elif w == "--feature-gates" and i + 1 < len(words):
            value = words[i + 1]
        else:
            continue
        for pair in value.split(","):
            gate, _, setting = pair.strip().partition("=")
            if gate:
                out[gate] = setting.strip().lower()
    return out


def _independent(pods: Iterable[Obj]) -> list[Obj]:
    """Pods no controller owns (its template is judged instead); a static pod's mirror is owned
    by its Node and kept."""
    return [
        p
        for p in pods
        if not any(
            o.get("controller") and o.get("kind") != "Node"
            for o in p["metadata"].get("ownerReferences") or ()
        )
    ]


def _pod_specs(pods: Iterable[Obj], workloads: Iterable[Workload]) -> list[tuple[str, Obj]]:
    out = [(_subject("pod", p), p.get("spec") or {}) for p in _independent(pods)]
    out += [(w.subject, w.template.get("spec") or {}) for w in workloads]
    return out


def gate_flag_findings(
    pods: Iterable[Obj],
    workloads: Iterable[Workload],
    current: str,
    target: str,
    target_gates: Mapping[str, KnownGate] | None,
) -> list[Finding]:
    """`target_gates`: the target's gate table where its control plane is built; without it the
    removals harness.core.upgrade_facts knows, and no lock."""
    if minor_number(target) <= minor_number(current):
        return []
    removed = {g.gate: g.source for g in gate_removals_ahead(current, target)}
    findings = []
    for subject, spec in _pod_specs(pods, workloads):
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            for gate, value in sorted(feature_gate_flags(c).items()):
                known = target_gates.get(gate) if target_gates is not None else None
                where = f"{subject} container {c.get('name', '?')}: --feature-gates {gate}={value}"
                if gate in removed or (target_gates is not None and known is None):
                    source = removed.get(gate, f"absent from {target}'s gate table")
                    findings.append(
                        Finding(
                            "gate-flag",
                            Severity.BLOCKING,
                            subject,
                            f'{where}: {target} has no such gate, the component exits with "unrecognized '
                            f'feature gate: {gate}" ({FEATURE_GATE_SOURCE}:421 @v0.38.0-beta.0; {source})',
                            f"drop {gate} from the flag before {target}",
                        )
                    )
                elif known is not None and known.locked and value != str(known.default).lower():
                    findings.append(
                        Finding(
                            "gate-flag",
                            Severity.BLOCKING,
                            subject,
                            f'{where}: {target} locks it, the component exits with "cannot set feature gate '
                            f'{gate} to {value}, feature is locked to {str(known.default).lower()}" '
                            f"({FEATURE_GATE_SOURCE}:426 @v0.38.0-beta.0)",
                            f"drop {gate}={value} from the flag before {target}",
                        )
                    )
    return findings


def target_shape_findings(state: ClusterState, matrix: Matrix, target: str) -> list[Finding]:
    """Both, for the cluster `state` read, heading for `target` (its gate table where built)."""
    current = f"{state.version[0]}.{state.version[1]}"
    binary = binary_path(matrix.minor(target))
    table = known_gates(binary) if binary.exists() else None
    return [
        *shape_findings(state.slices, state.templates, state.claims, current, target),
        *gate_flag_findings(state.pods, state.workloads, current, target, table),
        *client_findings(state.deprecated_requests, current, target),
    ]


DEPRECATED_METRIC = "apiserver_requested_deprecated_apis"
DEPRECATED_SOURCE = "k8s.io/apiserver pkg/endpoints/metrics/metrics.go:64-72,589 @v0.37.2"
_METRIC_LINE = re.compile(rf"^{DEPRECATED_METRIC}\{{([^}}]*)\}}\s+1(?:\.0)?\s*$", re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def deprecated_requests(metrics: str) -> list[dict[str, str]]:
    """The labels of every deprecated API version some client requested since the API server
    started (its STABLE gauge; a client that only reads leaves no managedFields behind)."""
    return [dict(_LABEL.findall(m)) for m in _METRIC_LINE.findall(metrics)]


def client_findings(requests: Iterable[Mapping[str, str]], current: str, target: str) -> list[Finding]:
    """`api-client`: requests to a version the way to `target` removes (blocking), or that a
    release after it removes (a warning: the next step)."""
    findings = []
    for r in requests:
        removed = r.get("removed_release", "")
        if not re.fullmatch(r"\d+\.\d+", removed) or minor_number(removed) <= minor_number(current):
            continue
        gv = f"{r.get('group')}/{r.get('version')}" if r.get("group") else str(r.get("version"))
        resource = r.get("resource", "") + (f"/{r['subresource']}" if r.get("subresource") else "")
        blocking = minor_number(removed) <= minor_number(target)
        findings.append(
            Finding(
                "api-client",
                Severity.BLOCKING if blocking else Severity.WARNING,
                f"{gv}/{resource}",
                f"a client requested {gv} {resource} since the API server started; {removed} no longer "
                f"serves it ({DEPRECATED_METRIC}, {DEPRECATED_SOURCE})",
                f"find the client by user agent in the audit log and move it to {r.get('group')}/v1 "
                f"before {removed}",
            )
        )
    return findings
