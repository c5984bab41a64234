"""`dra-harness run` and `matrix`: test paths replace the suites, and what follows -- goes to
pytest as it is."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import matrix
from harness.cli import main as cli
from harness.cli import run
from harness.core.versions import REPO_ROOT


@pytest.fixture
def pytest_cmd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The pytest command lines `run` would start (none is started)."""
    started: list[list[str]] = []

    def fake_run(cmd: list[str], **_: Any) -> int:
        started.append(cmd)
        return 0

    monkeypatch.setattr(run, "run_child", fake_run)  # harness.cli.run starts pytest through run_child
    monkeypatch.setattr(run, "REPORTS", tmp_path / "reports")
    monkeypatch.chdir(REPO_ROOT)
    return started


def _paths_and_extra(cmd: Sequence[str]) -> tuple[list[str], list[str]]:
    """The arguments before the first --option, and those after --summary-json."""
    first = next(i for i, a in enumerate(cmd) if a.startswith("--"))
    last = next(i for i, a in enumerate(cmd) if a.startswith("--summary-json"))
    return list(cmd[3:first]), list(cmd[last + 1 :])


def test_run_without_paths_runs_the_suites_on_xdist_workers(pytest_cmd: list[list[str]]) -> None:
    assert cli.main(["run"]) == 0
    assert _paths_and_extra(pytest_cmd[0]) == (["suites"], ["-n", str(cli.RUN_WORKERS)])
    assert cli.main(["run", "-n", "0"]) == 0
    assert _paths_and_extra(pytest_cmd[1]) == (["suites"], [])


def test_run_with_paths_runs_only_those_and_passes_what_follows_the_dashes(
    pytest_cmd: list[list[str]],
) -> None:
    argv = ["run", "suites/smoke", "-k", "1.36", "-n", "2", "--", "-x", "-k", "not slow", "--", "z"]
    assert cli.main(argv) == 0
    assert _paths_and_extra(pytest_cmd[0]) == (
        [str(REPO_ROOT / "suites" / "smoke")],
        ["-n", "2", "-x", "-k", "not slow", "--", "z"],
    )
    assert "--k8s-version=1.36" in pytest_cmd[0]


def test_run_keeps_a_node_id_after_the_path(pytest_cmd: list[list[str]]) -> None:
    assert cli.main(["run", "suites/smoke/test_local_cluster.py::test_x"]) == 0
    assert _paths_and_extra(pytest_cmd[0])[0] == [f"{REPO_ROOT}/suites/smoke/test_local_cluster.py::test_x"]


def test_matrix_passes_what_follows_the_dashes_to_every_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def fake_matrix(m: object, cells: object, **kw: Any) -> matrix.MatrixResult:
        seen.update(kw)
        return matrix.MatrixResult("id", tmp_path, [], 0.0, 0.0)

    monkeypatch.setattr(matrix, "run_matrix", fake_matrix)
    monkeypatch.setattr(matrix, "REPORTS", tmp_path)
    assert cli.main(["matrix", "-n", "2", "--no-report", "--", "-x", "--lf"]) == 0
    # a failed test runs once more by default (flakes counted: issue 38)
    assert (seen["paths"], seen["extra"]) == (["suites"], ["-n", "2", "--reruns", "1", "-x", "--lf"])
    assert cli.main(["matrix", "--reruns", "0", "--no-report", "--", "-x"]) == 0
    assert seen["extra"] == ["-x"]
