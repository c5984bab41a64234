"""`dra-harness run`: the suites on one cell, with reports in reports/out/<run-id>/
(junit.xml, allure-results/, summary.json — written by the pytest plugin — and the
readiness report of the cell: readiness.html/.md/.json)."""

from __future__ import annotations

import datetime
import sys

from harness.clusters.processes import run_child
from harness.versions import REPO_ROOT, load_matrix

REPORTS = REPO_ROOT / "reports" / "out"


def run_suites(minor: str | None, profile: str | None, extra: list[str]) -> int:
    matrix = load_matrix()
    cell_minor = matrix.minor(minor or matrix.default_minor)
    cell_profile = cell_minor.profile(profile or matrix.default_profile)
    run_id = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = REPORTS / run_id
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "suites",
        f"--k8s-version={cell_minor.name}",
        f"--gates={cell_profile.name}",
        f"--junitxml={out / 'junit.xml'}",
        f"--alluredir={out / 'allure-results'}",
        f"--summary-json={out / 'summary.json'}",
        *extra,
    ]
    print(
        f"dra-harness run {run_id}: Kubernetes {cell_minor.kubernetes}, gates {cell_profile.name}", flush=True
    )
    code = run_child(cmd, cwd=REPO_ROOT)  # SIGTERM/Ctrl-C: forwarded, pytest tears down, then we exit
    if (out / "summary.json").exists():  # the readiness report of this one cell
        from harness.readiness import write_report

        for path in write_report([out], out):
            print(f"report: {path}")
    print(f"reports: {out}")
    return code
