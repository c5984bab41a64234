"""Where a run's reports go and how a cell's pytest is started, for `run` and `matrix` alike,
and matrix.json: its declared schema, its one writer and its one reader.

    reports/out/<run-id>/                 run id: the UTC start, 20260101T120000Z
                                          ($DRA_HARNESS_REPORTS/<run-id>/ when it is set)
        matrix.json                       (matrix) cells, exit codes, wall times
        cells/<cell-slug>/                (matrix) one directory per cell
        junit_<cell-slug>.xml allure-results/ summary.json     per cell (matrix)
        junit.xml allure-results/ summary.json     (`run`: in the run directory)
        readiness.html / .md / .json      the readiness report
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

from harness.core.cells import Cell
from harness.core.errors import HarnessError
from harness.core.redaction import redact_obj
from harness.core.versions import REPO_ROOT

# $DRA_HARNESS_REPORTS moves every run's reports (CI: a workspace path; tests: a temporary one).
REPORTS_ENV = "DRA_HARNESS_REPORTS"
REPORTS = Path(os.environ.get(REPORTS_ENV) or REPO_ROOT / "reports" / "out").absolute()


def new_run_id() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")


def latest_matrix_run(root: Path = REPORTS) -> Path:
    """The newest matrix run directory under `root` (run ids sort by time)."""
    runs = sorted(p for p in root.glob("*T*Z") if (p / "cells").is_dir())
    if not runs:
        raise HarnessError(f"no matrix runs in {root}; run `dra-harness matrix` first or name a DIR")
    return runs[-1]


def cell_dir(run_dir: Path, cell: Cell) -> Path:
    return run_dir / "cells" / cell.slug


def junit_name(cell: Cell) -> str:
    """A matrix cell's JUnit file: Prow's lens reads artifacts/junit*.xml, and merged shards
    keep one file per cell."""
    return f"junit_{cell.slug}.xml"


def pytest_command(
    cell: Cell, out: Path, paths: Sequence[str], extra: Sequence[str], *, junit: str = "junit.xml"
) -> list[str]:
    """pytest on `cell` (its personality only when it names one), reports into `out`."""
    return [
        sys.executable,
        "-m",
        "pytest",
        *paths,
        f"--k8s-version={cell.minor}",
        f"--gates={cell.profile}",
        *([f"--personality={cell.personality}"] if cell.personality else []),
        f"--junitxml={out / junit}",
        f"--alluredir={out / 'allure-results'}",
        f"--summary-json={out / 'summary.json'}",
        *extra,
    ]


class MatrixCellJson(TypedDict, total=False):
    id: str
    minor: str
    personality: str
    profile: str
    dir: str  # cells/<slug>, relative to the run directory
    state: str  # queued | running | passed | failed | error | interrupted
    verdict: str  # the cell's word (harness.reports.verdicts.cell_word); "" until it ends
    exit_code: int | None
    wall_seconds: float
    totals: dict[str, int]
    note: str


class MatrixJson(TypedDict, total=False):
    run_id: str
    wall_seconds: float
    build_seconds: float
    exit_code: int
    cells: list[MatrixCellJson]


def write_matrix_json(run_dir: Path, data: MatrixJson) -> None:
    (run_dir / "matrix.json").write_text(json.dumps(redact_obj(data), indent=2))


def read_matrix_json(run_dir: Path) -> MatrixJson | None:
    """The run directory's matrix.json, None when it has none; ValueError (naming the file)
    when it is not one. Fields may be missing: older runs and hand-merged ones."""
    path = run_dir / "matrix.json"
    if not path.is_file():
        return None
    try:
        data: Any = json.loads(path.read_text())
        if not isinstance(data["cells"], list):
            raise TypeError("cells must be a list")
        for c in data["cells"]:
            c["id"]  # every cell names itself
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a matrix.json: {err}") from None
    return cast(MatrixJson, data)
