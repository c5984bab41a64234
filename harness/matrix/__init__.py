"""`dra-harness matrix`: the suites on many cells (Kubernetes minor x driver personality x gate
profile), each cell its own pytest process with its own cluster, up to --jobs at a time:
selection.py picks the cells, runner.py runs them, display.py shows their progress; the
reports' layout is harness/core/layout.py's."""

from __future__ import annotations

from harness.core.cells import Cell, MatrixError
from harness.core.layout import REPORTS, new_run_id
from harness.matrix.display import Display
from harness.matrix.runner import DEFAULT_JOBS, CellRun, MatrixResult, ensure_builds, run_matrix
from harness.matrix.selection import all_cells, cells_from

__all__ = [
    "DEFAULT_JOBS",
    "REPORTS",
    "Cell",
    "CellRun",
    "Display",
    "MatrixError",
    "MatrixResult",
    "all_cells",
    "cells_from",
    "ensure_builds",
    "new_run_id",
    "run_matrix",
]
