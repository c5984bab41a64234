"""The upgrade report's pure parts: renamed metrics per direction, gate changes between two
binaries' gate tables, API changes from versions.toml, the Markdown form (redacted)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.controlplane.build import module_dir
from harness.controlplane.gates import KnownGate
from harness.core.errors import HarnessError
from harness.core.upgrade_facts import API_REMOVALS, ApiRemoval, removals_ahead, renamed_metrics
from harness.core.versions import load_matrix
from harness.kit.checks.detectors import Severity
from harness.scan.target import gate_findings, kubelet_findings
from harness.upgrade.report import UpgradeReport, api_changes, gate_changes, render_markdown, write_report

CREATES_OLD = "resourceclaim_controller_creates_total"
CREATES_NEW = "dynamic_resource_allocation_resourceclaim_creates_total"


def test_the_1_37_metric_renames_apply_in_the_step_direction_only_when_crossed() -> None:
    up = renamed_metrics("1.36", "1.37")
    assert [(m["from"], m["to"]) for m in up] == [
        (CREATES_OLD, CREATES_NEW),
        ("resourceclaim_controller_resource_claims", "dynamic_resource_allocation_resource_claims"),
    ]
    assert next((m["from"], m["to"]) for m in renamed_metrics("1.37", "1.36")) == (CREATES_NEW, CREATES_OLD)
    assert renamed_metrics("1.35", "1.36") == []


def test_gate_changes_name_removed_locked_and_default_flips_but_not_new_gates() -> None:
    before = {
        "Gone": KnownGate("Gone", False, "ALPHA", False),
        "Locks": KnownGate("Locks", True, "BETA", False),
        "Flips": KnownGate("Flips", False, "BETA", False),
        "Same": KnownGate("Same", True, "BETA", False),
    }
    after = {
        "Locks": KnownGate("Locks", True, "", True),
        "Flips": KnownGate("Flips", True, "BETA", False),
        "Same": KnownGate("Same", True, "BETA", False),
        "New": KnownGate("New", False, "ALPHA", False),
    }
    assert gate_changes(before, after, "1.37") == [
        "Flips defaults to true in 1.37 (was false)",
        "Gone is gone in 1.37: drop it from --feature-gates (unknown gates stop a component)",
        "Locks is locked to true in 1.37: setting it otherwise fails",
    ]


def test_api_changes_name_the_workload_api_move_and_the_stranded_storage() -> None:
    changes = api_changes(load_matrix(), "1.36", "1.37")
    assert changes[0] == "scheduling.k8s.io: the harness uses v1alpha2 on 1.36, v1beta1 on 1.37"
    assert changes[1].startswith(
        "scheduling.k8s.io/v1alpha2 workloads, podgroups stored by 1.36 cannot be read by 1.37"
    )
    assert len(changes) == 2


def test_the_markdown_report_redacts_what_a_failure_message_carries() -> None:
    report = UpgradeReport("1.36", "1.37", "dra-all", failed="Authorization: Bearer abc.def.ghi")
    text = render_markdown(report)
    assert "abc.def.ghi" not in text
    assert text.splitlines()[0] == "# Upgrade rehearsal 1.36 -> 1.37 -> 1.36 (dra-all)"
    assert "## Blocks\n\n- none\n" in text


def test_kubelets_more_than_three_minors_behind_the_target_block_and_1_34_ones_warn() -> None:
    nodes = [
        {"metadata": {"name": name}, "status": {"nodeInfo": {"kubeletVersion": version}}}
        for name, version in (("a", "v1.33.9"), ("b", "v1.34.4"), ("c", "v1.36.3"), ("d", "fake"))
    ]
    assert [(f.check, f.severity, f.subject) for f in kubelet_findings(nodes, "1.37")] == [
        ("kubelet-too-old", Severity.BLOCKING, "node/a"),
        ("kubelet-bridge", Severity.WARNING, "node/b"),
    ]


def test_gates_set_away_from_their_default_and_gone_warn_and_quiet_ones_are_one_info() -> None:
    now = {"Set": KnownGate("Set", False, "ALPHA", False), "Quiet": KnownGate("Quiet", True, "", True)}
    target = {"Locked": KnownGate("Locked", True, "", True)}
    running = {"Set": True, "Quiet": True, "Locked": False}
    assert [
        (f.check, f.severity, f.subject, f.message) for f in gate_findings(running, "1.37", target, now)
    ] == [
        ("gate-locked", Severity.BLOCKING, "gate/Locked", "runs false; 1.37 locks it to true"),
        ("gate-removed", Severity.WARNING, "gate/Set", "runs true; 1.37 has no such gate"),
        (
            "gate-removed",
            Severity.INFO,
            "cluster",
            "1 gates running at their default are gone in 1.37: Quiet",
        ),
    ]


def test_the_report_files_are_written_through_the_report_writer_and_redacted(tmp_path: Path) -> None:
    report = UpgradeReport("1.36", "1.37", "dra-all", wall_seconds=59.0)
    report.steps = [{"before": "1.36", "after": "1.37", "seconds": 18.3, "note": "token=s3cr3t"}]
    report.blocks = [
        {"what": "2 object(s) stored as scheduling.k8s.io/v1alpha2", "remediation": "delete them"}
    ]
    written = write_report(report, tmp_path / "out")
    assert [p.name for p in written] == ["upgrade.json", "upgrade.md"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["upgrade.json", "upgrade.md"]
    data = json.loads(written[0].read_text())
    assert data["steps"] == [{"before": "1.36", "after": "1.37", "seconds": 18.3, "note": "token=<redacted>"}]
    assert {k: v for k, v in data.items() if k != "steps"} == {
        k: v for k, v in asdict(report).items() if k != "steps"
    }
    assert written[0].read_text().endswith("}\n")
    assert written[1].read_text() == render_markdown(report)
    assert "s3cr3t" not in written[0].read_text() + written[1].read_text()


def _lifecycle(version: str) -> dict[str, tuple[str, str]]:
    """kind -> (deprecated, removed) as k8s.io/api@v0.37.2 generates them for resource/<version>."""
    try:
        source = (
            module_dir("k8s.io/api", "v0.37.2")
            / "resource"
            / version
            / "zz_generated.prerelease-lifecycle.go"
        )
    except HarnessError as err:
        pytest.skip(f"k8s.io/api@v0.37.2 not here: {err}")
    text = source.read_text()
    found: dict[str, dict[str, str]] = {}
    pattern = r"func \(in \*(\w+)\) APILifecycle(Deprecated|Removed)\(\) \(major, minor int\) \{\s*"
    pattern += r"return (\d+), (\d+)"
    for kind, what, major, minor in re.findall(pattern, text):
        found.setdefault(kind, {})[what] = f"{major}.{minor}"
    return {k: (v["Deprecated"], v["Removed"]) for k, v in found.items()}


@pytest.mark.parametrize("removal", API_REMOVALS, ids=[r.group_version for r in API_REMOVALS])
def test_each_recorded_api_removal_is_the_release_the_generated_lifecycle_states(removal: ApiRemoval) -> None:
    lifecycle = _lifecycle(removal.group_version.split("/")[1])
    for kind in removal.kinds:
        assert lifecycle[kind] == (removal.deprecated, removal.removed), kind
        assert lifecycle[f"{kind}List"] == (removal.deprecated, removal.removed), kind
    assert f"(APILifecycleRemoved: 1, {removal.removed.split('.')[1]})" in removal.source


def test_removals_ahead_are_those_still_served_now_and_deprecated_by_the_target() -> None:
    assert [r.group_version for r in removals_ahead("1.36", "1.37")] == [
        "resource.k8s.io/v1beta1",
        "resource.k8s.io/v1beta2",
    ]
    assert [r.group_version for r in removals_ahead("1.35", "1.35")] == ["resource.k8s.io/v1beta1"]
    assert removals_ahead("1.34", "1.34") == []
    assert [r.group_version for r in removals_ahead("1.38", "1.39")] == ["resource.k8s.io/v1beta2"]


def test_a_step_across_the_v1beta1_removal_names_it_and_earlier_steps_do_not() -> None:
    matrix = load_matrix()  # 1.38 is in versions.toml
    [crossed] = [c for c in api_changes(matrix, "1.37", "1.38") if "v1beta1" in c]
    assert crossed == (
        "resource.k8s.io/v1beta1 is not served from 1.38 on: clients writing through it break; objects stay "
        "readable (k8s.io/api resource/v1beta1/zz_generated.prerelease-lifecycle.go@v0.37.2 "
        "(APILifecycleRemoved: 1, 38))"
    )
    assert not [c for c in api_changes(matrix, "1.36", "1.37") if "not served from" in c]
