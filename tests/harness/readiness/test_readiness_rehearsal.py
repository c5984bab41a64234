"""The readiness report's upgrade view with a rehearsal (`dra-harness upgrade`'s upgrade.json):
it joins the upgrade of its pair, personality and profile, or stands alone without cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.readiness import build_report, render
from harness.readiness.model import ReportError
from harness.upgrade.report import UpgradeReport, write_report
from tests.support.readiness_data import _cells


def _rehearsal(tmp_path: Path, before: str = "1.36", after: str = "1.37") -> Path:
    report = UpgradeReport(before, after, "dra-all", wall_seconds=59.0)
    report.steps = [
        {"before": before, "after": after, "seconds": 18.3},
        {"before": after, "after": before, "seconds": 18.2},
    ]
    report.keeps_working = [f"{before} -> {after}: no device is allocated twice"]
    report.changes = {"api": [], "gates": [], "metrics": []}
    report.blocks = [
        {"what": "2 object(s) stored as scheduling.k8s.io/v1alpha2", "remediation": "delete them"}
    ]
    out = tmp_path / f"upgrade-{before}-{after}"
    write_report(report, out)
    return out


def test_a_rehearsal_joins_the_upgrade_of_its_pair_personality_and_profile(tmp_path: Path) -> None:
    report = build_report([_cells(tmp_path)], rehearsals=[_rehearsal(tmp_path)])
    rehearsed = {u.personality: u.rehearsal for u in report.upgrades}
    assert rehearsed["nvidia-v0.4"] is None
    assert rehearsed["nvidia-v25.12"] is not None
    assert rehearsed["nvidia-v25.12"]["wall_seconds"] == 59.0
    md = render(report)["readiness.md"]
    assert (
        "Rehearsed in place (1.36 -> 1.37 -> 1.36, `dra-harness upgrade`): passed in 59s; "
        "step 1.36 -> 1.37 18.3s; step 1.37 -> 1.36 18.2s." in md
    )
    assert "- blocks: 2 object(s) stored as scheduling.k8s.io/v1alpha2 — **delete them**" in md


def test_a_rehearsed_pair_without_cells_gets_an_upgrade_of_its_own(tmp_path: Path) -> None:
    report = build_report([_cells(tmp_path)], rehearsals=[_rehearsal(tmp_path, "1.35", "1.36")])
    [alone] = [u for u in report.upgrades if u.before == "1.35"]
    assert (alone.personality, alone.after, alone.changes) == ("nvidia-v25.12", "1.36", [])
    assert report.to_json()["upgrades"][-1]["rehearsal"]["before"] == "1.35"


def test_a_file_that_is_not_an_upgrade_report_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "upgrade.json"
    bad.write_text("{}")
    with pytest.raises(ReportError, match=r"upgrade.json: not an upgrade report \('personality'\)$"):
        build_report([_cells(tmp_path)], rehearsals=[bad])
