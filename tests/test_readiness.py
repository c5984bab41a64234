"""Readiness checks from crafted summaries: status rules, remediation text, heat-map, upgrade
view, cost section, rendering, and bad input as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.requirements import unmapped_class
from harness.readiness import CHECKS, Status, build_report, evaluate, evaluate_cell, render, write_report
from harness.readiness.catalog import CHECK_IDS
from harness.readiness.checks import skip_meaning, uncovered
from harness.readiness.gates import gate_remediation
from harness.readiness.inputs import load_cost
from harness.readiness.model import CellReport, ReportError, upgrades
from harness.reporting import CellSummary, TestRecord, area_of, read_summary, write_summary
from harness.requirements import Capability, Kind, Reason
from harness.versions import REPO_ROOT
from tests.cli import run_cli

EXT = "suites/bridging/test_extended_resource.py::test_legacy_gpu_request_gets_a_scheduler_created_claim"
LIFE = (
    "suites/bridging/test_bridging_lifecycle.py::test_implicit_name_of_a_class_without_extended_resource_name"
)
GANG = "suites/gang/test_gang.py::test_gang_of_4_pods_by_2_gpus_binds_on_8_gpus[claim]"
SMOKE = "suites/smoke/test_local_cluster.py::test_pod_is_bound_to_a_simulated_node_and_runs"
DYN = "suites/mig/test_dynamic_mig.py::test_seven_1g_devices_fill_an_h100_and_give_the_counters_back"

GATE_OFF = Reason(
    Kind.FEATURE_GATE, minor="1.35", profile="defaults", gate="DRAExtendedResource", state=False
)
NO_MAP = unmapped_class("nvidia-v0.4", "gpu.nvidia.com", "nvidia.com/gpu")


def gate_off(gate: str, minor: str) -> Reason:
    return Reason(Kind.FEATURE_GATE, minor=minor, profile="defaults", gate=gate, state=False)


def rec(nodeid: str, outcome: str = "passed", message: str | Reason = "") -> TestRecord:
    """A skipped test's record carries its reason as the reporting plugin writes it."""
    if isinstance(message, Reason):
        return TestRecord(nodeid, area_of(nodeid), outcome, 1.0, message.message(), [message])
    return TestRecord(nodeid, area_of(nodeid), outcome, 1.0, message)


def summary(minor: str, personality: str, *records: TestRecord, profile: str = "dra-all") -> CellSummary:
    cell = {
        "provider": "local",
        "minor": minor,
        "profile": profile,
        "driver": "gpu.nvidia.com",
        "personality": personality,
    }
    return CellSummary(cell, list(records), wall_seconds=60.0)


# ---- status rules --------------------------------------------------------------------------


def test_all_passed_is_pass() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT), rec(LIFE), rec(SMOKE)])
    assert (r.status, r.detail, r.remediation) == (Status.PASS, "2 of 2 passed", "")
    assert r.counts == {"passed": 2, "failed": 0, "skipped": 0, "errors": 0}


def test_no_test_of_the_check_is_skip() -> None:
    r = evaluate(CHECK_IDS["gang"], [rec(SMOKE)])
    assert (r.status, r.detail) == (Status.SKIP, "no test of this check ran in this cell")


def test_a_failure_is_fail_with_the_failure_line_and_the_checks_remediation() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT, "failed", "AssertionError: claim not created"), rec(LIFE)])
    assert r.status == Status.FAIL
    assert r.detail == (
        "1 of 2 failed; test_legacy_gpu_request_gets_a_scheduler_created_claim: "
        "AssertionError: claim not created"
    )
    assert r.remediation == CHECK_IDS["bridging"].on_fail


def test_setup_error_counts_as_fail() -> None:
    assert (
        evaluate(CHECK_IDS["cluster"], [rec(SMOKE, "errors", "cluster: exited early")]).status == Status.FAIL
    )


def test_bridging_skipped_because_the_gate_is_off_is_fail_naming_gate_components_and_version() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT, "skipped", GATE_OFF), rec(LIFE, "skipped", GATE_OFF)])
    assert r.status == Status.FAIL
    assert r.detail == f"skipped: {GATE_OFF.message()}"
    assert r.remediation == (
        "pods requesting nvidia.com/gpu stay Pending on DRA-only nodes in 1.35/defaults: enable feature gate "
        "DRAExtendedResource on kube-apiserver, kube-scheduler, kube-controller-manager and kubelet, "
        "or upgrade to 1.36 where it is beta and on by default (GA in 1.37)"
    )


def test_class_without_extended_resource_name_is_warn_when_other_bridging_tests_pass() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT, "skipped", NO_MAP), rec(LIFE)])
    assert r.status == Status.WARN
    assert r.detail == f"1 of 2 passed, 1 skipped: {NO_MAP.message()}"
    assert "set extendedResourceName: nvidia.com/gpu on it" in r.remediation
    assert "DeviceClass gpu.nvidia.com" in r.remediation


def test_class_without_extended_resource_name_is_fail_when_nothing_bridged_runs() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT, "skipped", NO_MAP)])
    assert r.status == Status.FAIL


def test_gang_skipped_for_an_off_gate_is_warn_with_the_gate_remediation() -> None:
    msg = gate_off("GenericWorkload", "1.36")
    r = evaluate(CHECK_IDS["gang"], [rec(GANG, "skipped", msg)])
    assert r.status == Status.WARN
    assert r.remediation == gate_remediation("GenericWorkload")
    assert r.remediation.startswith(
        "enable feature gate GenericWorkload on kube-apiserver and kube-scheduler"
    )


def test_min_version_skip_is_warn_naming_the_version() -> None:
    msg = Reason(Kind.VERSION, minor="1.34", need="1.35")
    r = evaluate(CHECK_IDS["gang"], [rec(GANG, "skipped", msg)])
    assert (r.status, r.remediation) == (
        Status.WARN,
        "needs Kubernetes 1.35; this cell runs 1.34: upgrade the control plane",
    )


def test_dynamic_mig_gate_off_names_the_gate_and_the_release_where_it_is_on() -> None:
    msg = gate_off("DRAPartitionableDevices", "1.35")
    r = evaluate(CHECK_IDS["mig-dynamic"], [rec(DYN, "skipped", msg)])
    assert r.status == Status.WARN
    assert r.remediation == (
        "enable feature gate DRAPartitionableDevices on kube-apiserver, kube-scheduler and kubelet, "
        "or upgrade to 1.36 where it is beta and on by default"
    )


def test_a_skip_that_does_not_matter_is_skip_or_leaves_pass() -> None:
    inverse = Reason(
        Kind.FEATURE_GATE, False, minor="1.37", profile="dra-all", gate="DRAExtendedResource", state=True
    )
    check = CHECK_IDS["bridging"]
    assert evaluate(check, [rec(EXT, "skipped", inverse)]).status == Status.SKIP
    both = evaluate(check, [rec(EXT), rec(LIFE, "skipped", inverse)])
    assert (both.status, both.detail) == (Status.PASS, "1 of 2 passed (1 not applicable here)")


def test_a_skip_without_reasons_is_skip_whatever_its_wording() -> None:
    worded = rec(GANG, "skipped", "needs feature gate GenericWorkload, off in 1.36/defaults")
    assert skip_meaning(CHECK_IDS["gang"], worded) == (Status.SKIP, "")


# Every reason kind with what it means for a bridged check and for any other check. A new
# Kind without a row here fails the test below; one without a rule fails mypy (assert_never).
_REQUIRED_OFF = "needs feature gate DRAExtendedResource, off in 1.35/defaults"
KIND_OUTCOMES: dict[Kind, list[tuple[Reason, str, Status, Status]]] = {
    Kind.FEATURE_GATE: [
        (GATE_OFF, _REQUIRED_OFF, Status.FAIL, Status.WARN),
        (
            gate_off("DRAPartitionableDevices", "1.35"),
            "needs feature gate DRAPartitionableDevices, off in 1.35/defaults",
            Status.WARN,
            Status.WARN,
        ),
        (
            Reason(Kind.FEATURE_GATE, minor="1.34", gate="GenericWorkload"),
            "needs feature gate GenericWorkload, unknown to Kubernetes 1.34",
            Status.WARN,
            Status.WARN,
        ),
        (
            Reason(Kind.FEATURE_GATE, False, "1.37", "dra-all", gate="DRAExtendedResource", state=True),
            "covers cells where feature gate DRAExtendedResource is off; it is on in 1.37/dra-all",
            Status.SKIP,
            Status.SKIP,
        ),
        (
            Reason(Kind.FEATURE_GATE, False, "1.37", "dra-all", gate="DRAPartitionableDevices"),
            "covers cells where feature gate DRAPartitionableDevices is off; "
            "it is unknown to Kubernetes 1.37",
            Status.SKIP,
            Status.SKIP,
        ),
    ],
    Kind.VERSION: [
        (
            Reason(Kind.VERSION, minor="1.34", need="1.35"),
            "needs Kubernetes >= 1.35 (cell is 1.34)",
            Status.WARN,
            Status.WARN,
        )
    ],
    Kind.API: [
        (
            Reason(Kind.API, minor="1.36", profile="defaults", need="scheduling.k8s.io/v1alpha2"),
            "needs scheduling.k8s.io/v1alpha2 served (runtime-config), not served in 1.36/defaults",
            Status.WARN,
            Status.WARN,
        )
    ],
    Kind.DRIVER_CAPABILITY: [
        (
            NO_MAP,
            "nvidia-v0.4 installs gpu.nvidia.com without extendedResourceName nvidia.com/gpu",
            Status.FAIL,
            Status.WARN,
        ),
        (
            Reason(
                Kind.DRIVER_CAPABILITY,
                False,
                "1.37",
                "dra-all",
                capability=Capability.BRIDGE,
                driver="nvidia-v25.12",
            ),
            "the bridge is available in 1.37/dra-all with nvidia-v25.12",
            Status.SKIP,
            Status.SKIP,
        ),
    ],
    Kind.PROVIDER: [
        (
            Reason(
                Kind.PROVIDER,
                text="the rollout suite installs and removes the driver itself: fake driver only",
            ),
            "the rollout suite installs and removes the driver itself: fake driver only",
            Status.SKIP,
            Status.SKIP,
        )
    ],
}


def test_every_driver_capability_has_a_row() -> None:
    rows = {r.capability for r, *_ in KIND_OUTCOMES[Kind.DRIVER_CAPABILITY]}
    assert rows == set(Capability), "give each new Capability a row in KIND_OUTCOMES"


def test_every_reason_kind_has_a_readiness_outcome() -> None:
    assert set(KIND_OUTCOMES) == set(Kind), (
        "give the new Kind a row in KIND_OUTCOMES and a rule in reason_meaning"
    )


@pytest.mark.parametrize(
    ("reason", "wording", "bridged", "other"),
    [row for rows in KIND_OUTCOMES.values() for row in rows],
    ids=lambda v: v.kind.value if isinstance(v, Reason) else "",
)
def test_a_reason_decides_the_status_by_its_fields_and_keeps_its_wording(
    reason: Reason, wording: str, bridged: Status, other: Status
) -> None:
    assert reason.message() == wording
    assert skip_meaning(CHECK_IDS["bridging"], rec(EXT, "skipped", reason))[0] == bridged
    assert skip_meaning(CHECK_IDS["gang"], rec(GANG, "skipped", reason))[0] == other
    assert Reason.from_json(reason.to_json()) == reason


def test_summary_json_keeps_reasons_and_reads_files_written_before_them(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_summary(path, summary("1.35", "nvidia-v0.4", rec(EXT, "skipped", GATE_OFF)))
    assert read_summary(path).tests[0].reasons == [GATE_OFF]
    data = json.loads(path.read_text())
    assert data["tests"][0]["reasons"] == [
        {
            "kind": "feature_gate",
            "minor": "1.35",
            "profile": "defaults",
            "gate": "DRAExtendedResource",
            "state": False,
        }
    ]
    del data["tests"][0]["reasons"]
    path.write_text(json.dumps(data))
    assert read_summary(path).tests[0].reasons == []


def test_every_suite_test_collected_today_belongs_to_a_check() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    nodeids = [line for line in done.stdout.splitlines() if line.startswith("suites/")]
    assert nodeids, done.stdout + done.stderr
    missing = uncovered(rec(n) for n in nodeids)
    assert missing == [], "give these tests a check in CHECKS (harness/readiness/catalog.py)"


def test_check_ids_are_unique_and_every_check_names_tests_and_a_remediation() -> None:
    assert len({c.id for c in CHECKS}) == len(CHECKS)
    assert all(c.tests and c.on_fail and c.title for c in CHECKS)


# ---- report --------------------------------------------------------------------------------


def _cells(tmp_path: Path) -> Path:
    """A crafted matrix run: 1.36 and 1.37 for two personalities, with changes between them."""
    run = tmp_path / "run"
    cells = {
        "1.36_nvidia-v25.12_dra-all": summary(
            "1.36",
            "nvidia-v25.12",
            rec(SMOKE),
            rec(EXT),
            rec(LIFE),
            rec(GANG, "failed", "timed out after 60s"),
        ),
        "1.37_nvidia-v25.12_dra-all": summary(
            "1.37", "nvidia-v25.12", rec(SMOKE), rec(EXT), rec(LIFE), rec(GANG)
        ),
        "1.36_nvidia-v0.4_dra-all": summary(
            "1.36", "nvidia-v0.4", rec(SMOKE), rec(EXT, "skipped", NO_MAP), rec(LIFE), rec(GANG)
        ),
        "1.37_nvidia-v0.4_dra-all": summary(
            "1.37", "nvidia-v0.4", rec(SMOKE), rec(EXT, "skipped", NO_MAP), rec(LIFE), rec(GANG)
        ),
    }
    for slug, s in cells.items():
        write_summary(run / "cells" / slug / "summary.json", s)
    matrix = {
        "run_id": "x",
        "wall_seconds": 123.4,
        "cells": [
            {
                "id": s.cell["minor"] + "/" + s.cell["personality"] + "/dra-all",
                "exit_code": 0,
                "state": "passed",
            }
            for s in cells.values()
        ],
    }
    (run / "matrix.json").write_text(json.dumps(matrix))
    return run


def test_report_orders_cells_newest_minor_first_and_builds_the_heatmap(tmp_path: Path) -> None:
    report = build_report([_cells(tmp_path)], bench=None)
    assert [c.id for c in report.cells] == [
        "1.37/nvidia-v0.4/dra-all",
        "1.37/nvidia-v25.12/dra-all",
        "1.36/nvidia-v0.4/dra-all",
        "1.36/nvidia-v25.12/dra-all",
    ]
    heat = report.to_json()["heatmap"]
    assert heat["1.36/nvidia-v25.12/dra-all"]["gang"] == "FAIL"
    assert heat["1.37/nvidia-v0.4/dra-all"]["bridging"] == "WARN"
    assert heat["1.37/nvidia-v25.12/dra-all"]["bridging"] == "PASS"
    assert report.cells[0].exit_code == 0
    assert report.totals == {"passed": 13, "failed": 1, "skipped": 2, "errors": 0}


def test_upgrade_view_lists_what_changes_between_consecutive_minors(tmp_path: Path) -> None:
    report = build_report([_cells(tmp_path)], bench=None)
    assert [u.title for u in report.upgrades] == [
        "from 1.36 to 1.37 with nvidia-v0.4 (dra-all)",
        "from 1.36 to 1.37 with nvidia-v25.12 (dra-all)",
    ]
    same, better = report.upgrades
    assert same.changes == []
    assert [(c.check, str(c.before), str(c.after), c.direction) for c in better.changes] == [
        ("gang", "FAIL", "PASS", "improves")
    ]


def test_upgrades_compare_the_minors_present_in_order() -> None:
    cells = [
        CellReport(
            f"{m}/p/dra-all", m, "p", "dra-all", summary(m, "p", rec(SMOKE)), "", evaluate_cell([rec(SMOKE)])
        )
        for m in ("1.37", "1.34", "1.36")
    ]
    assert [(u.before, u.after) for u in upgrades(cells)] == [("1.34", "1.36"), ("1.36", "1.37")]


def test_merge_of_cell_directories_from_several_runners(tmp_path: Path) -> None:
    run = _cells(tmp_path)
    a, b = tmp_path / "runner-a", tmp_path / "runner-b"
    a.mkdir()
    b.mkdir()
    (run / "cells" / "1.36_nvidia-v25.12_dra-all").rename(a / "cell")
    (run / "cells" / "1.37_nvidia-v25.12_dra-all").rename(b / "cell")
    report = build_report([a, b], bench=None)
    assert [c.id for c in report.cells] == ["1.37/nvidia-v25.12/dra-all", "1.36/nvidia-v25.12/dra-all"]
    assert [u.title for u in report.upgrades] == ["from 1.36 to 1.37 with nvidia-v25.12 (dra-all)"]


def test_the_same_cell_twice_is_noted_and_the_later_one_wins(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write_summary(one / "summary.json", summary("1.37", "p", rec(SMOKE, "failed", "boom")))
    write_summary(two / "summary.json", summary("1.37", "p", rec(SMOKE)))
    report = build_report([one, two], bench=None)
    assert [str(c.status("cluster").status) for c in report.cells] == ["PASS"]
    assert report.notes == [f"cell 1.37/p/dra-all appears twice: {two} replaces {one}"]


def test_cell_that_wrote_no_summary_is_noted_from_matrix_json(tmp_path: Path) -> None:
    run = _cells(tmp_path)
    data = json.loads((run / "matrix.json").read_text())
    data["cells"].append({"id": "1.35/p/dra-all", "exit_code": 3, "state": "error", "note": "cluster: boom"})
    (run / "matrix.json").write_text(json.dumps(data))
    notes = build_report([run], bench=None).notes
    assert "cell 1.35/p/dra-all wrote no summary.json (error, exit 3): cluster: boom" in notes


BENCH = {
    "title": "1000 GPU pods on 125 nodes",
    "rows": [
        {"cell": "1.37/nvidia-v25.12/dra-all", "scenario": "device plugin", "nodes": 125, "pods": 1000,
         "metrics": {"schedule all (s)": 41.5, "apiserver CPU (s)": 20}},
        {"cell": "1.37/nvidia-v25.12/dra-all", "scenario": "DRA extended resource", "nodes": 125,
         "pods": 1000, "metrics": {"schedule all (s)": 63.25, "objects written": 2000}},
    ],
}  # fmt: skip


def test_cost_section_reads_the_plain_bench_json(tmp_path: Path) -> None:
    path = tmp_path / "scale.json"
    path.write_text(json.dumps(BENCH))
    cost = load_cost([path])
    assert cost is not None
    assert cost["metrics"] == ["schedule all (s)", "apiserver CPU (s)", "objects written"]
    assert [r["scenario"] for r in cost["rows"]] == ["device plugin", "DRA extended resource"]
    assert load_cost([]) is None


SCALE = {
    "kubernetes": "1.37",
    "nodes": 50,
    "pods": 200,
    "modes": {
        "legacy": {
            "median": {
                "avg_pods_per_s": 83.35,
                "p50": 46.0,
                "etcd_growth_bytes": 1435648.0,
                "claims_created": 0.0,
            },
            "cv_percent": {"avg_pods_per_s": 28.3},
            "ratio_to_legacy": {"avg_pods_per_s": 1.0},
        },
        "bridged": {
            "median": {
                "avg_pods_per_s": 40.0,
                "p50": 38.0,
                "etcd_growth_bytes": 3000000.0,
                "claims_created": 200.0,
                "api_writes_per_pod": 8.0,
            },
            "pooled_windows": {"seconds": 150, "p50": 41.0, "p90": 45.0, "p99": 48.0},
            "cv_percent": {"avg_pods_per_s": 5.0},
            "ratio_to_legacy": {"avg_pods_per_s": 0.48, "etcd_growth_bytes": 2.09},
            "ratio_cv_percent_to_legacy": {"avg_pods_per_s": 3.5},
            "best_pods_per_s": 44.0,
            "best_ratio_to_legacy": 0.5,
        },
    },
}


def test_cost_section_reads_bench_scale_py_output(tmp_path: Path) -> None:
    path = tmp_path / "scale-1.37.json"
    path.write_text(json.dumps(SCALE))
    cost = load_cost([path])
    assert cost is not None
    bridged = cost["rows"][1]
    assert (bridged["cell"], bridged["nodes"], bridged["pods"]) == ("1.37", 50, 200)
    assert bridged["scenario"] == "bridged: DRA, unchanged pods: nvidia.com/gpu mapped by a DeviceClass"
    assert bridged["metrics"] == {
        "pods/s": 40.0,
        "pods/s p50 (1s windows)": 41.0,  # pooled over the repetitions, not the median's 38
        "API writes/pod": 8.0,
        "etcd growth (MB)": 3.0,
        "claims created": 200.0,
        "pods/s p99 (1s windows)": 48.0,
        "pods/s vs legacy (x)": 0.48,
        "etcd growth vs legacy (x)": 2.09,
        "pods/s best of reps": 44.0,
        "best pods/s vs legacy (x)": 0.5,
        "pods/s CV (%)": 5.0,
        "pods/s vs legacy CV (%)": 3.5,
    }


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "{}",
        "[]",
        '{"rows": 3}',
        '{"rows": [{"nodes": 1}]}',
        '{"rows": [{"scenario": "x", "metrics": {"a": "b"}}]}',
        '{"modes": {"legacy": {}}, "kubernetes": "1.37"}',
        '{"modes": {"legacy": {"median": {"p50": 1}}}}',
    ],
)
def test_a_broken_bench_json_is_one_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "scale.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=r"is not a scale benchmark JSON"):
        load_cost([path])


def test_tests_no_check_names_get_an_other_check_per_area(tmp_path: Path) -> None:
    new = "suites/newarea/test_x.py::test_y"
    d = tmp_path / "c"
    write_summary(d / "summary.json", summary("1.37", "p", rec(SMOKE), rec(new, "failed", "boom")))
    report = build_report([d], bench=None)
    assert [c.id for c in report.checks][-1] == "other-newarea"
    result = report.cells[0].status("other-newarea")
    assert (str(result.status), result.detail) == ("FAIL", "1 of 1 failed; test_y: boom")
    assert report.notes == [
        "1.37/p/dra-all: 1 test(s) belong to no check, e.g. suites/newarea/test_x.py::test_y"
    ]


def test_render_writes_html_markdown_and_json_with_the_same_statuses(tmp_path: Path) -> None:
    bench = tmp_path / "scale.json"
    bench.write_text(json.dumps(BENCH))
    out = tmp_path / "out"
    paths = write_report([_cells(tmp_path)], out, bench=bench)
    assert [p.name for p in paths] == ["readiness.html", "readiness.md", "readiness.json"]
    html = (out / "readiness.html").read_text()
    md = (out / "readiness.md").read_text()
    data = json.loads((out / "readiness.json").read_text())
    assert "<style>" in html
    for external in ("<script", "http://", "https://", '<link rel="stylesheet"'):
        assert external not in html
    for text in (html, md):
        assert "From 1.36 to 1.37 with nvidia-v25.12 (dra-all): 1 check(s) change" in text
        assert "set extendedResourceName: nvidia.com/gpu" in text
        assert "DRA extended resource" in text
    assert "| gang | PASS | PASS | PASS | FAIL |" in md
    assert "| accounting | \u2013 | \u2013 | \u2013 | \u2013 |" in md  # no test of it ran
    assert "matrix run x: 4 cell(s) in 123s wall" in md
    assert "matrix run x: 4 cell(s) in 123s wall" in html
    assert data["heatmap"]["1.36/nvidia-v25.12/dra-all"]["gang"] == "FAIL"
    assert data["cost"]["rows"][1]["metrics"] == {"schedule all (s)": 63.25, "objects written": 2000.0}


def test_render_escapes_html_in_test_messages(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write_summary(d / "summary.json", summary("1.37", "p", rec(SMOKE, "failed", "<b>boom</b> | pipe")))
    pages = render(build_report([d], bench=None))
    assert "&lt;b&gt;boom&lt;/b&gt;" in pages["readiness.html"]
    assert "<b>boom</b> \\| pipe" in pages["readiness.md"]


def test_render_redacts_a_secret_in_a_summary_written_without_redaction(tmp_path: Path) -> None:
    cell = summary("1.37", "p", rec(SMOKE, "failed", "apiserver said Bearer abc123; token=def456"))
    (tmp_path / "summary.json").write_text(json.dumps(cell.to_json()))  # not write_summary: raw
    (tmp_path / "matrix.json").write_text(
        json.dumps(
            {"cells": [{"id": "1.36/p/dra-all", "state": "error", "exit_code": 3, "note": "password=x1"}]}
        )
    )

    pages = render(build_report([tmp_path], bench=None))

    for name, text in pages.items():
        assert ("abc123" in text, "def456" in text, "x1" in text) == (False, False, False), name
    assert "apiserver said Bearer &lt;redacted&gt;; token=&lt;redacted&gt;" in pages["readiness.html"]
    assert "apiserver said Bearer <redacted>; token=<redacted>" in pages["readiness.md"]
    assert "wrote no summary.json (error, exit 3): password=<redacted>" in pages["readiness.json"]


# ---- bad input through the CLI -----------------------------------------------------------


def test_report_on_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    done = run_cli("report", str(tmp_path / "nope"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"dra-harness: {tmp_path / 'nope'} does not exist\n"


def test_report_on_a_directory_without_summaries_is_one_line(tmp_path: Path) -> None:
    done = run_cli("report", "--merge", str(tmp_path))
    assert (done.returncode, done.stderr) == (
        1,
        f"dra-harness: no summary.json under {tmp_path}: not a cell or matrix run directory\n",
    )


@pytest.mark.parametrize(
    "text", ["{", "[]", '{"cell": {"minor": "1.37"}, "tests": []}', '{"cell": {}, "tests": [{}]}']
)
def test_report_on_a_malformed_summary_is_one_line(tmp_path: Path, text: str) -> None:
    (tmp_path / "summary.json").write_text(text)
    done = run_cli("report", str(tmp_path), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr.startswith(f"dra-harness: {tmp_path / 'summary.json'} is not a summary.json: ")
    assert done.stderr.count("\n") == 1


def test_report_merge_writes_the_three_files(tmp_path: Path) -> None:
    run = _cells(tmp_path)
    out = tmp_path / "merged"
    done = run_cli(
        "report", "--merge", str(run / "cells"), "--out", str(out), "--bench", str(tmp_path / "no.json")
    )
    assert (done.returncode, done.stderr) == (
        1,
        f"dra-harness: benchmark file {tmp_path / 'no.json'} does not exist\n",
    )
    done = run_cli("report", "--merge", str(run / "cells"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["readiness.html", "readiness.json", "readiness.md"]


def test_attention_groups_fail_and_warn_by_check_and_remediation_worst_first(tmp_path: Path) -> None:
    report = build_report([_cells(tmp_path)], bench=None)
    assert [(a.check, str(a.status), a.cells) for a in report.attention] == [
        ("gang", "FAIL", ["1.36/nvidia-v25.12/dra-all"]),
        ("bridging", "WARN", ["1.37/nvidia-v0.4/dra-all", "1.36/nvidia-v0.4/dra-all"]),
    ]
    assert report.attention[0].remediation == CHECK_IDS["gang"].on_fail


def test_a_long_failure_message_is_one_clipped_line() -> None:
    message = "WaitTimeout: timed out\n" + "{'apiVersion': 'v1',   'kind': 'Pod'}\n" * 50
    r = evaluate(CHECK_IDS["cluster"], [rec(SMOKE, "failed", message)])
    assert "\n" not in r.detail
    assert "  " not in r.detail
    assert r.detail.endswith("…")
    assert len(r.detail) < 400


def test_an_improvement_carries_no_remediation(tmp_path: Path) -> None:
    better = build_report([_cells(tmp_path)], bench=None).upgrades[1].changes[0]
    assert (str(better.after), better.remediation) == ("PASS", "")


def test_a_test_owned_by_another_check_is_excluded() -> None:
    restart = "suites/faults/test_control_plane.py::test_etcd_stopped_briefly"
    assert [c.id for c in CHECKS if c.covers(restart)] == ["control-plane-restarts"]
    assert CHECK_IDS["faults"].covers(
        "suites/faults/test_driver_and_nodes.py::test_node_deleted_under_running_pods"
    )


def test_a_check_run_on_one_side_only_is_not_compared() -> None:
    cells = [
        CellReport(f"{m}/p/dra-all", m, "p", "dra-all", summary(m, "p", *r), "", evaluate_cell(r))
        for m, r in (("1.36", [rec(SMOKE), rec(GANG, "failed", "x")]), ("1.37", [rec(SMOKE)]))
    ]
    (change,) = upgrades(cells)[0].changes
    assert (change.check, change.before_ran, change.after_ran, change.direction) == (
        "gang",
        True,
        False,
        "not compared",
    )
