"""`scan --target` where the target's control plane is not built (a wheel install): gate removals
come from harness.core.upgrade_facts, a lock cannot be judged and says so, and a refused read
makes its check NOT APPLICABLE, never a PASS or a WARN."""

from __future__ import annotations

from harness.kit.checks.detectors import Finding, Severity
from harness.scan.checks import NOT_CHECKED, Status, check_results
from harness.scan.state import ClusterState
from harness.scan.target import known_gate_removals


def _state() -> ClusterState:
    return ClusterState((1, 37), "v1.37.2", {}, [], [], [], [], [], [], [], [])


def _statuses(findings: list[Finding]) -> dict[str, tuple[Status, str]]:
    results = check_results(_state(), findings, "nvidia.com/gpu", "1.38")
    return {r.check: (r.status, r.why) for r in results}


def test_without_a_gate_table_the_removal_of_dynamic_resource_allocation_is_still_reported() -> None:
    findings = known_gate_removals(
        {"DynamicResourceAllocation": True, "DRAExtendedResource": True}, "1.37", "1.38"
    )

    assert [(f.check, f.severity, f.subject) for f in findings] == [
        ("gate-locked", Severity.INFO, NOT_CHECKED),
        ("gate-removed", Severity.INFO, "gate/DynamicResourceAllocation"),
    ]
    assert findings[1].message.startswith("runs true; 1.38 has no such gate (k8s.io/kubernetes pkg/features")
    statuses = _statuses(findings)
    assert statuses["gate-locked"] == (
        Status.NOT_APPLICABLE,
        "no gate table of 1.38 here: locks not compared",
    )
    assert statuses["gate-removed"][0] is Status.PASS
    assert statuses["gate-removed"][1].endswith("(1 note(s))")


def test_gates_the_server_does_not_show_are_not_applicable_never_a_pass() -> None:
    statuses = _statuses(known_gate_removals({}, "1.37", "1.38"))

    assert statuses["gate-removed"] == (Status.NOT_APPLICABLE, "the API server's /metrics shows no gates")
    assert statuses["gate-locked"][0] is Status.NOT_APPLICABLE


def test_a_refused_read_of_prometheus_rules_is_not_applicable_not_a_warning() -> None:
    refused = Finding(
        "renamed-metrics",
        Severity.INFO,
        NOT_CHECKED,
        "needs list on prometheusrules (monitoring.coreos.com)",
        "bind the scan's user to deploy/scan/clusterrole.yaml",
    )

    assert _statuses([refused])["renamed-metrics"] == (
        Status.NOT_APPLICABLE,
        "needs list on prometheusrules (monitoring.coreos.com)",
    )
