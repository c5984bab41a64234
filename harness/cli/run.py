"""`dra-harness run`: the suites on one cell, with reports in reports/out/<run-id>/
(junit.xml, allure-results/, summary.json — written by the pytest plugin — and the
readiness report of the cell: readiness.html/.md/.json)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fake_driver.api.ownership import RUN_ENV
from harness.clusters.host.processes import run_child
from harness.core.cells import Cell
from harness.core.errors import HarnessError
from harness.core.layout import REPORTS, new_run_id, pytest_command
from harness.core.outputs import check_output
from harness.core.versions import REPO_ROOT, load_matrix


def resolve_test_paths(paths: Sequence[str]) -> list[str]:
    """Test paths (or node ids, path::name) as absolute paths, since pytest runs in the
    repository; one line for a path that does not exist, before anything starts."""
    out = []
    for arg in paths:
        path, sep, name = arg.partition("::")
        if not Path(path).exists():
            raise HarnessError(f"test path {path} does not exist")
        out.append(str(Path(path).resolve()) + sep + name)
    return out


def run_suites(minor: str | None, profile: str | None, paths: Sequence[str], extra: Sequence[str]) -> int:
    """The suites (or `paths`) on one cell; `extra` goes to pytest as it is."""
    matrix = load_matrix()
    cell_minor = matrix.minor(minor or matrix.default_minor)
    cell_profile = cell_minor.profile(profile or matrix.default_profile)
    targets = resolve_test_paths(paths) if paths else ["suites"]
    check_output(REPORTS, "reports directory", directory=True)
    run_id = new_run_id()
    out = REPORTS / run_id
    out.mkdir(parents=True, exist_ok=True)
    # The personality is the plugin's default: `run` is the one cell the suites run on by default.
    cmd = pytest_command(Cell(cell_minor.name, profile=cell_profile.name), out, targets, extra)
    print(f"dra-harness run {run_id}: Kubernetes {cell_minor.release}, gates {cell_profile.name}", flush=True)
    os.environ[RUN_ENV] = run_id  # what the run creates on the cluster carries its id (owner labels)
    code = run_child(cmd, cwd=REPO_ROOT)  # SIGTERM/Ctrl-C: forwarded, pytest tears down, then we exit
    if (out / "summary.json").exists():  # the readiness report of this one cell
        from harness.readiness import write_report

        for path in write_report([out], out):
            print(f"report: {path}")
    print(f"reports: {out}")
    return code
