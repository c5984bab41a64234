"""`dra-harness matrix` with a real driver as a cell's driver: `1.37/example@v0.4.0/dra-all`
is its own local cluster with 2 real nodes running the upstream dra-example-driver's kubelet
plugin, qualified with the cell's suites; its results sit where any cell's do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.layout import REPORTS_ENV
from harness.core.versions import REPO_ROOT, load_matrix
from tests.support.realdriver import real_driver_missing

DRIVER = load_matrix().test_drivers[0] if load_matrix().test_drivers else "example@v0.4.0"
CELL = f"{load_matrix().default_minor}/{DRIVER}/dra-all"
SLUG = CELL.replace("/", "_")
# Its own real-node cluster: scheduled in a real-node lane, so quiet-host tests wait for it.
pytestmark = [pytest.mark.real_node, pytest.mark.real_plugin_comparison]


def test_a_real_driver_cell_runs_qualify_on_its_own_real_nodes(tmp_path: Path) -> None:
    why = real_driver_missing(DRIVER)
    if why:
        pytest.skip(why)
    argv = ["matrix", f"--cells={CELL}", "--suite=suites/node", "--no-report", "-j", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *argv],
        cwd=REPO_ROOT,
        env={**os.environ, REPORTS_ENV: str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    run_dir = Path(done.stdout.strip().splitlines()[-1].removeprefix("reports: "))
    [cell] = json.loads((run_dir / "matrix.json").read_text())["cells"]
    assert (cell["id"], cell["state"], cell["exit_code"]) == (CELL, "passed", 0)
    assert cell["totals"]["failed"] == 0, cell["totals"]
    assert cell["totals"]["passed"] >= 3, cell["totals"]  # suites/node's tests that run on real nodes
    out = run_dir / "cells" / SLUG
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["cell"]["personality"], summary["cell"]["nodes"]) == (DRIVER, "real")
    assert summary["cell"]["driver"] == "gpu.example.com"
    assert summary["cell"]["driver_release"].endswith(DRIVER.split("@")[1])
    assert (out / f"junit_{SLUG}.xml").is_file()
    qualification = json.loads((out / "qualify.json").read_text())
    node_side = [c for c in qualification["capabilities"] if c["id"] == "node-side"]
    assert [c["verdict"] for c in node_side] == ["PASS"], node_side
