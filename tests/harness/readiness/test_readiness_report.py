"""The readiness report from crafted summaries: heat-map, upgrade view, cost section,
rendering, and bad input as one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.readiness import CHECKS, build_report, evaluate, evaluate_cell, render, write_report
from harness.readiness.catalog import CHECK_IDS
from harness.readiness.inputs import load_cost
from harness.readiness.model import CellReport, ReportError, upgrades
from harness.reports.summary import what_was_tested, write_summary
from tests.support.cli import run_cli
from tests.support.readiness_data import (
    BENCH,
    GANG,
    SCALE,
    SMOKE,
    _cells,
    rec,
    summary,
)

# ---- report --------------------------------------------------------------------------------


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


def test_cost_section_reads_the_plain_bench_json(tmp_path: Path) -> None:
    path = tmp_path / "scale.json"
    path.write_text(json.dumps(BENCH))
    cost = load_cost([path])
    assert cost is not None
    assert cost["metrics"] == ["schedule all (s)", "apiserver CPU (s)", "objects written"]
    assert [r["scenario"] for r in cost["rows"]] == ["device plugin", "DRA extended resource"]
    assert load_cost([]) is None


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


def test_a_failed_test_outside_every_check_is_not_reported_as_nothing_to_attend(tmp_path: Path) -> None:
    d = tmp_path / "c"
    own = "::test_of_my_own"  # a test path outside suites/ (matrix --suite /elsewhere/test_x.py)
    write_summary(d / "summary.json", summary("1.37", "p", rec(SMOKE), rec(own, "failed", "boom")))
    out = tmp_path / "out"
    write_report([d], out, bench=None)
    md = (out / "readiness.md").read_text()
    assert "No check failed, but 1 test(s) did that count toward no check" in md
    assert "Nothing: every check that ran passed" not in md
    assert "No check failed, but 1 test(s)" in (out / "readiness.html").read_text()


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
    fake = (
        "the harness's fake driver imitating nvidia-v25.12 (driver name gpu.nvidia.com; from source "
        "reading at v25.12.0, not compared with a running plugin), not a vendor's driver"
    )
    assert f"**Tested:** {fake}, on simulated nodes (kwok) of a local control plane;" in md
    assert f"<strong>Tested:</strong> {fake.replace(chr(39), '&#39;')}, on simulated nodes" in html
    assert data["cells"][0]["tested"].startswith("the harness's fake driver imitating ")
    assert "matrix run x: 4 cell(s) in 123s wall" in html
    assert data["heatmap"]["1.36/nvidia-v25.12/dra-all"]["gang"] == "FAIL"
    # the shared words' legend (harness.reports.verdicts), FLAKY among them
    flaky = "passed only on a rerun: the first attempt failed (its failure is the evidence)"
    assert f"FLAKY: {flaky}; " in md
    assert f'<span class="badge FLAKY">FLAKY</span> {flaky}</span>' in html
    assert re.search(r"Checks over all cells: PASS \d+, FLAKY 0, FAIL \d+, WARN \d+, SKIP \d+\.", md)
    assert data["cost"]["rows"][1]["metrics"] == {"schedule all (s)": 63.25, "objects written": 2000.0}


@pytest.mark.parametrize(
    ("cell", "line"),
    [
        (
            {"driver": "gpu.nvidia.com", "personality": "nvidia-v0.4", "nodes": "real"},
            "the harness's fake driver imitating nvidia-v0.4 (driver name gpu.nvidia.com; compared with "
            "the real plugin v0.4.1), not a vendor's driver, on real kubelets of a local control plane",
        ),
        (
            {
                "driver": "gpu.example.com",
                "personality": "external",
                "nodes": "existing",
                "driver_release": "sigs.k8s.io/dra-example-driver v0.4.0",
            },
            "the driver gpu.example.com (sigs.k8s.io/dra-example-driver v0.4.0), on the nodes of the "
            "cluster the kubeconfig names",
        ),
        (  # a matrix cell of a real driver (harness/cli/realcell.py)
            {
                "driver": "gpu.example.com",
                "personality": "example@v0.3.0",
                "nodes": "real",
                "driver_release": "sigs.k8s.io/dra-example-driver v0.3.0",
            },
            "the driver gpu.example.com (sigs.k8s.io/dra-example-driver v0.3.0), on real kubelets of a "
            "local control plane",
        ),
        (
            {
                "driver": "gpu.vendor.com",
                "personality": "external",
                "nodes": "existing",
                "driver_release": "",
            },
            "the driver gpu.vendor.com (release not given), on the nodes of the cluster the kubeconfig names",
        ),
        # a summary.json written before the keys existed: no nodes part, no guess
        (
            {"driver": "gpu.nvidia.com", "personality": "external"},
            "the driver gpu.nvidia.com (release not given)",
        ),
    ],
)
def test_the_header_says_which_driver_on_which_nodes_was_tested(cell: dict[str, str], line: str) -> None:
    assert what_was_tested(cell) == line


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
    assert sorted(p.name for p in out.iterdir()) == [
        "night.json",
        "readiness.html",
        "readiness.json",
        "readiness.md",
    ]


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


def test_the_header_names_each_kubernetes_build_and_a_pre_release_as_such(tmp_path: Path) -> None:
    run = _cells(tmp_path)
    for path in sorted((run / "cells").glob("*/summary.json")):
        data = json.loads(path.read_text())
        data["versions"] = {"kubernetes": "v1.38.0-beta.0" if "1.37_" in path.parent.name else "v1.36.3"}
        path.write_text(json.dumps(data))
    report = build_report([run], bench=None)
    assert report.kubernetes == ["v1.38.0-beta.0, pre-release", "v1.36.3"]
    out = tmp_path / "out"
    write_report([run], out)
    md = (out / "readiness.md").read_text()
    assert "\n**Kubernetes:** v1.38.0-beta.0, pre-release; v1.36.3\n" in md
    html = (out / "readiness.html").read_text()
    assert "<strong>Kubernetes:</strong> v1.38.0-beta.0, pre-release; v1.36.3</p>" in html
    assert json.loads((out / "readiness.json").read_text())["kubernetes"] == report.kubernetes
