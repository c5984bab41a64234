"""`dra-harness run`: the suites on one cell, with reports in reports/out/<run-id>/."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.versions import REPO_ROOT, load_matrix

REPORTS = REPO_ROOT / "reports" / "out"


def junit_totals(junit: Path) -> dict[str, int]:
    """Counts from a JUnit XML file, as pytest writes it."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    keys = ("tests", "failures", "errors", "skipped")
    totals = {k: sum(int(s.get(k, 0)) for s in suites) for k in keys}
    totals["passed"] = totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"]
    return totals


def run_suites(minor: str | None, profile: str | None, extra: list[str]) -> int:
    matrix = load_matrix()
    cell_minor = matrix.minor(minor or matrix.default_minor)
    cell_profile = cell_minor.profile(profile or matrix.default_profile)
    run_id = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = REPORTS / run_id
    out.mkdir(parents=True, exist_ok=True)
    junit = out / "junit.xml"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "suites",
        f"--k8s-version={cell_minor.name}",
        f"--gates={cell_profile.name}",
        f"--junitxml={junit}",
        f"--alluredir={out / 'allure-results'}",
        *extra,
    ]
    print(
        f"dra-harness run {run_id}: Kubernetes {cell_minor.kubernetes}, gates {cell_profile.name}", flush=True
    )
    code = subprocess.run(cmd, cwd=REPO_ROOT, check=False).returncode
    summary = {
        "run_id": run_id,
        "cell": {
            "provider": "local",
            "minor": cell_minor.name,
            "kubernetes": cell_minor.kubernetes,
            "profile": cell_profile.name,
        },
        "exit_code": code,
        "totals": junit_totals(junit) if junit.exists() else None,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"reports: {out}")
    return code
