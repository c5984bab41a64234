"""`dra-harness upgrade --from 1.36 --to 1.37`: the rehearsal of suites/upgrade (the same
harness.upgrade.rehearsal steps, N -> N+1 and back, on a LocalCluster of its own) and the upgrade
report it writes: what keeps working, what changes (API versions, feature gates, renamed
metrics), what blocks and how to clear it.

    reports/out/upgrade-<from>-<to>-<run id>/upgrade.json, upgrade.md   (harness.reports.summary writes them)
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.clusters.local.cluster import LocalCluster
from harness.clusters.local.upgrade import UpgradeRefused, skew_refusal, storage_drops
from harness.controlplane.build import ensure_controlplane
from harness.controlplane.gates import KnownGate, known_gates
from harness.core.errors import HarnessError, WaitTimeout
from harness.core.redaction import redact
from harness.core.upgrade_facts import API_REMOVALS, renamed_metrics
from harness.core.versions import Matrix, load_matrix, minor_number
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.reports.summary import write_report_files
from harness.upgrade.rehearsal import (
    PERSONALITY,
    StepResult,
    Workloads,
    create_workloads,
    has_gang,
    install_fleet,
    step,
)

NAMESPACE = "rehearsal"


def gate_changes(before: dict[str, KnownGate], after: dict[str, KnownGate], minor: str) -> list[str]:
    """Gates the target removes, locks or turns on/off by default (`k8slocal featuregates`)."""
    out = []
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        if a is None:
            out.append(
                f"{name} is gone in {minor}: drop it from --feature-gates (unknown gates stop a component)"
            )
        elif b is None:
            continue  # a new gate changes nothing a running cluster relies on
        elif a.locked and not b.locked:
            out.append(f"{name} is locked to {str(a.default).lower()} in {minor}: setting it otherwise fails")
        elif a.default != b.default:
            out.append(
                f"{name} defaults to {str(a.default).lower()} in {minor} (was {str(b.default).lower()})"
            )
    return out


def api_changes(matrix: Matrix, before: str, after: str) -> list[str]:
    out = []
    for group, attr in (("resource.k8s.io", "resource_api"), ("scheduling.k8s.io", "scheduling_api")):
        b, a = getattr(matrix.minor(before), attr), getattr(matrix.minor(after), attr)
        if a != b:
            out.append(f"{group}: the harness uses {b or 'none'} on {before}, {a or 'none'} on {after}")
    out += [
        f"{d.group_version} {', '.join(d.resources)} stored by {before} cannot be read by {after} "
        f"({d.source})"
        for d in storage_drops(before, after)
    ]
    low, high = sorted((minor_number(before), minor_number(after)))
    out += [  # crossed by the step: served on one side only
        f"{r.group_version} is not served from {r.removed} on: clients writing through it break; objects "
        f"stay readable ({r.source})"
        for r in API_REMOVALS
        if low < minor_number(r.removed) <= high
    ]
    return out


@dataclass
class UpgradeReport:
    before: str
    after: str
    profile: str
    personality: str = PERSONALITY  # of the rehearsal's fleet (harness.upgrade.rehearsal)
    wall_seconds: float = 0.0
    steps: list[dict[str, Any]] = field(default_factory=list)
    keeps_working: list[str] = field(default_factory=list)
    changes: dict[str, list[Any]] = field(default_factory=dict)
    blocks: list[dict[str, str]] = field(default_factory=list)  # {"what", "remediation"}
    failed: str = ""  # the check that did not hold, if any

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # redacted where it is written (harness.reports.summary)


def _keeps_working(s: StepResult) -> list[str]:
    where = f"{s.before} -> {s.after}"
    checks = [
        (
            set(s.survivors.values()) == {"Running"},
            f"{len(s.survivors)} pods made before the step keep running",
        ),
        (s.allocations_kept, "their claims keep their uid and devices"),
        (not s.claims_left, "claims of a pod deleted during the step are garbage-collected"),
        (bool(s.new_kinds), f"new pods allocate: {', '.join(s.new_kinds)}"),
        (not s.doubly_allocated, "no device is allocated twice"),
    ]
    failed = [text for ok, text in checks if not ok]
    if failed:
        raise AssertionError(f"{where}: not so: {'; '.join(failed)}")
    return [f"{where}: {text}" for _, text in checks]


def _record(report: UpgradeReport, s: StepResult) -> None:
    row = asdict(s)
    row["new"] = asdict(s.new)
    row["doubly_allocated"] = {"/".join(k): v for k, v in s.doubly_allocated.items()}
    report.steps.append(row)
    if s.refused_first:
        report.blocks.append(
            {"what": s.refused_first, "remediation": "delete or recreate those objects first"}
        )
    report.blocks += [
        {
            "what": f"written through {w} ({s.after} no longer serves it)",
            "remediation": "move the writer to v1",
        }
        for w in s.removed_api_writers
    ]
    report.keeps_working += _keeps_working(s)


def rehearse(
    before: str, after: str, profile: str = "dra-all", matrix: Matrix | None = None
) -> UpgradeReport:
    """The rehearsal: workloads on `before`, the step to `after` and back, each step checked."""
    matrix = matrix or load_matrix()
    for m in (before, after):
        matrix.minor(m).profile(profile)  # unknown minor or profile: one line, nothing started
    refusal = skew_refusal(before, after)
    if refusal:
        raise HarnessError(refusal)
    binaries = {m: ensure_controlplane(matrix.minor(m)) for m in (before, after)}
    report = UpgradeReport(before, after, profile)
    report.changes = {
        "api": api_changes(matrix, before, after),
        "gates": gate_changes(known_gates(binaries[before]), known_gates(binaries[after]), after),
        "metrics": renamed_metrics(before, after),
    }
    started = time.monotonic()
    with LocalCluster(before, profile, matrix=matrix) as cluster:
        kube = Kube.from_kubeconfig(cluster.kubeconfig)
        try:
            objects = Created(kube)
            objects.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            fleet = install_fleet(kube, objects, NAMESPACE, before)
            gang = before if has_gang(kube, before) else ""
            made: list[Workloads] = [create_workloads(kube, objects, fleet, f"on-{before}", gang_minor=gang)]
            for to in (after, before):
                result = step(cluster, kube, objects, fleet, made, to)
                _record(report, result)
                made.append(result.new)
        except (AssertionError, WaitTimeout, UpgradeRefused) as err:
            report.failed = redact(str(err).splitlines()[0])
        finally:
            kube.close()
    report.wall_seconds = time.monotonic() - started
    return report


def render_markdown(r: UpgradeReport) -> str:
    lines = [f"# Upgrade rehearsal {r.before} -> {r.after} -> {r.before} ({r.profile})", ""]
    lines += [f"Outcome: {'FAILED: ' + r.failed if r.failed else 'passed'}; {r.wall_seconds:.0f} s", ""]
    for s in r.steps:
        lines.append(f"- step {s['before']} -> {s['after']}: {s['seconds']:.1f} s")
    lines += ["", "## Keeps working", "", *[f"- {k}" for k in r.keeps_working], "", "## Changes", ""]
    lines += [f"- API: {c}" for c in r.changes.get("api", [])]
    lines += [f"- gate: {c}" for c in r.changes.get("gates", [])]
    lines += [
        f"- metric: `{m['from']}` -> `{m['to']}` ({m['note']}; {m['source']})"
        for m in r.changes.get("metrics", [])
    ]
    lines += ["", "## Blocks", ""]
    lines += [f"- {b['what']}\n  - remediation: {b['remediation']}" for b in r.blocks] or ["- none"]
    return redact("\n".join(lines) + "\n")


def write_report(r: UpgradeReport, out: Path) -> list[Path]:
    """upgrade.json and upgrade.md in `out`, through the report writer (and its redaction)."""
    return write_report_files(out, {"upgrade.json": r.to_json(), "upgrade.md": render_markdown(r)})
