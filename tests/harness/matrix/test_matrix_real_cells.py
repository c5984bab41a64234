"""A real driver (versions.toml [drivers], NAME@VERSION) as a matrix cell's driver: which cells
name one, and the cell's process (harness/cli/realcell.py) refusing a cell it cannot run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.versions import REPO_ROOT, parse_matrix
from harness.matrix import all_cells, cells_from
from tests.harness.matrix.test_matrix import GOOD, PERSONALITIES


def test_a_real_driver_version_is_a_cell_of_its_own_beside_the_personalities() -> None:
    cells = cells_from(
        parse_matrix(GOOD), PERSONALITIES, ["1.37/example@v0.4.0/dra-all,1.37/nvidia-v0.4/dra-all"]
    )
    assert [(c.id, c.slug) for c in cells] == [
        ("1.37/example@v0.4.0/dra-all", "1.37_example@v0.4.0_dra-all"),
        ("1.37/nvidia-v0.4/dra-all", "1.37_nvidia-v0.4_dra-all"),
    ]
    versions = cells_from(parse_matrix(GOOD), PERSONALITIES, ["1.37/example@*/dra-all"])
    assert [c.personality for c in versions] == ["example@v0.2.1", "example@v0.3.0", "example@v0.4.0"]
    everything = all_cells(parse_matrix(GOOD), PERSONALITIES)
    assert not [c for c in everything if "@" in c.personality]  # named, never in "all" or "1.37/*/..."


@pytest.mark.parametrize(
    ("cell", "line"),
    [
        (
            "1.37/nvidia-v25.12/dra-all",
            "cell '1.37/nvidia-v25.12/dra-all' names no real driver (NAME@VERSION)",
        ),
        (
            "1.37/example@v9/dra-all",
            "driver example has no version 'v9' in versions.toml; known: v0.2.1, v0.3.0, v0.4.0",
        ),
        ("1.37", "cell '1.37' is not <minor>/<personality>/<profile>, e.g. 1.37/nvidia-v25.12/dra-all"),
    ],
)
def test_a_real_driver_cell_process_refuses_a_cell_it_cannot_run_in_one_line(
    tmp_path: Path, cell: str, line: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.realcell", f"--cell={cell}", f"--out={tmp_path}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        3,
        "",
        f"dra-harness matrix (real-driver cell): {line}\n",
    )
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written


def test_a_real_driver_cell_runs_qualifys_suites_unless_the_matrix_names_some() -> None:
    from harness.core.cells import Cell
    from harness.matrix.runner import REAL_DRIVER_CELL, CellRun, _cell_command

    run = CellRun(Cell("1.37", "example@v0.4.0", "dra-all"), Path("/x"), Path("/cx"))
    default = _cell_command(run, ["suites"], [])
    assert default[1:3] == ["-m", REAL_DRIVER_CELL]
    assert not [a for a in default if a.startswith("--suite")]  # realcell defaults to qualify's
    chosen = _cell_command(run, ["/repo/suites/gang", "/repo/suites/node"], [])
    assert [a for a in chosen if a.startswith("--suite")] == [
        "--suite=/repo/suites/gang",
        "--suite=/repo/suites/node",
    ]
