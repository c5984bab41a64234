"""The matrix runner: cell ids and filters, bad input as one line, and a real (tiny) run of
two cells as separate pytest processes with their own run directories."""

from __future__ import annotations

import io
import json
import os
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core.versions import load_matrix, parse_matrix
from harness.matrix import (
    Cell,
    CellRun,
    Display,
    MatrixError,
    all_cells,
    cells_from,
    run_matrix,
)
from tests.support.cli import run_cli

GOOD = """
default_minor = "1.37"
default_profile = "dra-all"
default_personality = "nvidia-v25.12"
[kind]
version = "v0.33.0"
[kwok]
module = "sigs.k8s.io/kwok"
version = "v0.8.0"
[minors."1.36"]
kubernetes = "v1.36.3"
staging = "v0.36.3"
kind_image = "kindest/node:v1.36.1"
resource_api = "v1"
unavailable = "no Go toolchain for it here"
[minors."1.36".profiles.dra-all]
gates = {}
[minors."1.37"]
kubernetes = "v1.37.2"
staging = "v0.37.2"
kind_image = "kindest/node:v1.37.0"
resource_api = "v1"
[minors."1.37".profiles.dra-all]
gates = { GenericWorkload = true }
[minors."1.37".profiles.defaults]
gates = {}
"""
PERSONALITIES = ("nvidia-v25.12", "nvidia-v0.4")
VALID = (
    "valid: <minor>/<personality>/<profile> with minor 1.36|1.37, personality nvidia-v25.12|nvidia-v0.4 "
    "or a real driver NAME@VERSION of versions.toml [drivers], profile defaults|dra-all (wildcards * allowed)"
)


def test_cell_id_and_slug() -> None:
    cell = Cell.parse("1.37/nvidia-v25.12/dra-all")
    assert (cell.id, cell.slug, cell.number) == (
        "1.37/nvidia-v25.12/dra-all",
        "1.37_nvidia-v25.12_dra-all",
        (1, 37),
    )


def test_default_cells_are_1_38_1_37_and_1_36_dra_all_for_two_personalities() -> None:
    cells = cells_from(load_matrix())
    assert [c.id for c in cells] == list(load_matrix().default_cells)
    assert {c.minor for c in cells} == {"1.38", "1.37", "1.36"}
    assert {c.personality for c in cells} == {"nvidia-v0.5", "nvidia-v0.4"}
    assert {c.profile for c in cells} == {"dra-all"}


def test_every_runnable_cell_skips_unavailable_minors() -> None:
    cells = all_cells(parse_matrix(GOOD), PERSONALITIES)
    assert [c.id for c in cells] == [
        "1.37/nvidia-v0.4/defaults",
        "1.37/nvidia-v0.4/dra-all",
        "1.37/nvidia-v25.12/defaults",
        "1.37/nvidia-v25.12/dra-all",
    ]


@pytest.mark.parametrize(
    ("filters", "ids"),
    [
        (["1.37/nvidia-v0.4/dra-all"], ["1.37/nvidia-v0.4/dra-all"]),
        (["1.37/*/dra-all"], ["1.37/nvidia-v0.4/dra-all", "1.37/nvidia-v25.12/dra-all"]),
        (
            ["1.37/nvidia-v0.4/dra-all, 1.37/nvidia-v0.4/*"],
            ["1.37/nvidia-v0.4/dra-all", "1.37/nvidia-v0.4/defaults"],
        ),
        (["all"], [c.id for c in all_cells(parse_matrix(GOOD), PERSONALITIES)]),
    ],
)
def test_filters_select_cells_in_order_without_duplicates(filters: list[str], ids: list[str]) -> None:
    assert [c.id for c in cells_from(parse_matrix(GOOD), PERSONALITIES, filters)] == ids


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (
            ["1.99/nvidia-v0.4/dra-all"],
            f"unknown cell '1.99/nvidia-v0.4/dra-all': no Kubernetes minor '1.99'; {VALID}",
        ),
        (
            ["1.37/nvidia-v9/dra-all"],
            f"unknown cell '1.37/nvidia-v9/dra-all': no driver personality 'nvidia-v9'; {VALID}",
        ),
        (
            ["1.37/nvidia-v0.4/all"],
            f"unknown cell '1.37/nvidia-v0.4/all': no gate profile 'all' for 1.37; {VALID}",
        ),
        (
            ["1.36/nvidia-v0.4/dra-all"],
            "unknown cell '1.36/nvidia-v0.4/dra-all': Kubernetes 1.36 is unavailable here "
            f"(no Go toolchain for it here); {VALID}",
        ),
        (
            ["1.37/example@v9.9.9/dra-all"],
            "unknown cell '1.37/example@v9.9.9/dra-all': driver example has no version 'v9.9.9' in "
            f"versions.toml; known: v0.2.1, v0.3.0, v0.4.0; {VALID}",
        ),
        (
            ["1.37/acme@v1.0.0/dra-all"],
            "unknown cell '1.37/acme@v1.0.0/dra-all': unknown driver 'acme'; known: example@v0.4.0, "
            f"nvidia@v0.4.1; {VALID}",
        ),
        (["1.37"], "cell '1.37' is not <minor>/<personality>/<profile>, e.g. 1.37/nvidia-v25.12/dra-all"),
        (["1.2*/*/*"], f"cell pattern '1.2*/*/*' matches no cell; {VALID}"),
        ([" , "], f"no cells given; {VALID}"),
    ],
)
def test_unknown_cells_are_one_line_listing_the_valid_ones(filters: list[str], message: str) -> None:
    with pytest.raises(MatrixError) as err:
        cells_from(parse_matrix(GOOD), PERSONALITIES, filters)
    assert str(err.value) == message


# ---- the CLI: bad input is one line and exit 1 ---------------------------------------------


BROKEN = [
    ("not toml", "[minors", "versions.toml is not valid TOML: "),
    ("no minors", GOOD.split("[minors")[0], "versions.toml: [minors] must be a table"),
    ("bad minor name", GOOD.replace('minors."1.37"', 'minors."137"'), "minors.'137': a minor is named like"),
    ("gate not a bool", GOOD.replace("GenericWorkload = true", 'GenericWorkload = "yes"'), "gates must map"),
    (
        "release mismatch",
        GOOD.replace('kubernetes = "v1.37.2"', 'kubernetes = "v1.38.0"'),
        "do not match 1.37",
    ),
    (
        "unknown default",
        GOOD.replace('default_minor = "1.37"', 'default_minor = "1.40"'),
        "unknown Kubernetes",
    ),
    (
        "profile not a table",
        GOOD.replace(
            '[minors."1.37".profiles.defaults]\ngates = {}\n', '[minors."1.37".profiles]\ndefaults = 3\n'
        ),
        "profile 'defaults' must be a table",
    ),
    ("empty file", "", "versions.toml: [minors] must be a table"),
]


@pytest.mark.parametrize(("text", "fragment"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_malformed_versions_toml_is_one_line_and_exit_1(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "versions.toml"
    path.write_text(text)
    done = run_cli("matrix", "--versions", str(path), "--list", "--cells", "all")
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr.startswith("dra-harness: ")
    assert fragment in done.stderr
    assert done.stderr.count("\n") == 1


def test_unknown_cell_through_therun_cli() -> None:
    done = run_cli("matrix", "--cells", "1.37/nvidia-v25.12/everything")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(
        "dra-harness: unknown cell '1.37/nvidia-v25.12/everything': "
        "no gate profile 'everything' for 1.37; valid: "
    )
    assert done.stderr.count("\n") == 1


def test_list_prints_the_default_cells() -> None:
    done = run_cli("matrix", "--list")
    assert (done.returncode, done.stdout.split()) == (0, list(load_matrix().default_cells))


def test_list_json_is_a_ci_job_matrix() -> None:
    done = run_cli("matrix", "--list", "--json", "--cells", "1.37/nvidia-v0.4/dra-all")
    assert json.loads(done.stdout) == {
        "include": [{"cell": "1.37/nvidia-v0.4/dra-all", "slug": "1.37_nvidia-v0.4_dra-all"}]
    }


def test_a_foreign_versions_file_is_for_list_only(tmp_path: Path) -> None:
    path = tmp_path / "versions.toml"
    path.write_text(GOOD)
    done = run_cli("matrix", "--versions", str(path), "--cells", "1.37/nvidia-v0.4/dra-all")
    assert done.returncode == 1
    assert done.stderr.startswith(f"dra-harness: --versions {path} is for --list only")


# ---- running -------------------------------------------------------------------------------


def test_cell_target() -> None:
    """Each cell's whole suite in test_run_matrix: fails on purpose in nvidia-v0.4 cells."""
    run_dir = os.environ.get("DRA_HARNESS_RUN_DIR", "")
    assert "nvidia-v0.4" not in run_dir, "failing on purpose in the nvidia-v0.4 cell"


def test_run_matrix_runs_each_cell_as_its_own_pytest_with_its_own_run_dir(tmp_path: Path) -> None:
    matrix = load_matrix()
    cells = cells_from(matrix, filters=["1.37/nvidia-v25.12/dra-all,1.37/nvidia-v0.4/dra-all"])
    stream = io.StringIO()
    result = run_matrix(
        matrix,
        cells,
        jobs=2,
        paths=["tests/harness/matrix/test_matrix.py::test_cell_target"],
        out_root=tmp_path,
        run_id="run",
        stream=stream,
        build=False,
    )
    assert [(r.cell.id, r.state, r.verdict, r.exit_code) for r in result.runs] == [
        ("1.37/nvidia-v25.12/dra-all", "passed", "PASS", 0),
        ("1.37/nvidia-v0.4/dra-all", "failed", "FAIL", 1),
    ]
    assert result.exit_code == 1
    data = json.loads((tmp_path / "run" / "matrix.json").read_text())
    assert [
        (c["id"], c["dir"], c["verdict"], c["totals"]["passed"], c["totals"]["failed"]) for c in data["cells"]
    ] == [
        ("1.37/nvidia-v25.12/dra-all", "cells/1.37_nvidia-v25.12_dra-all", "PASS", 1, 0),
        ("1.37/nvidia-v0.4/dra-all", "cells/1.37_nvidia-v0.4_dra-all", "FAIL", 0, 1),
    ]
    assert all(c["wall_seconds"] > 0 for c in data["cells"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    history: set[str] = set()
    for cell in cells:
        d = tmp_path / "run" / "cells" / cell.slug
        assert not (d / "junit.xml").exists()
        case = ET.parse(d / f"junit_{cell.slug}.xml").getroot().find(".//testcase[@name='test_cell_target']")
        assert case is not None
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props == {
            "minor": "1.37",
            "personality": cell.personality,
            "driver": "gpu.nvidia.com",
            "profile": "dra-all",
            "provider": "local",
            "cell": cell.id,
            # each phase's outcome (fixtures/artifacts/reporting.py), the call failing on purpose in v0.4
            "phase.setup": "passed",
            "phase.call": "failed" if "v0.4" in cell.personality else "passed",
            "phase.teardown": "passed",
        }
        assert (d / "allure-results" / "environment.properties").is_file()
        (result,) = [json.loads(p.read_text()) for p in (d / "allure-results").glob("*-result.json")]
        assert {"name": "cell", "value": repr(cell.id)} in result["parameters"]
        history.add(result["historyId"])
        summary = json.loads((d / "summary.json").read_text())
        assert (summary["cell"]["minor"], summary["cell"]["personality"]) == ("1.37", cell.personality)
        assert summary["commit"].removesuffix("-dirty") == head.stdout.strip()
        built = {"kubernetes": matrix.minor("1.37").kubernetes, "kwok": matrix.kwok_version}
        assert summary["versions"] == built
        assert isinstance(summary["load_before_1m"], float)
    assert len(history) == 2  # one history per cell: merged shards do not fold cells into retries
    log = stream.getvalue()
    assert "1.37/nvidia-v25.12/dra-all         running" in log
    assert "1.37/nvidia-v0.4/dra-all           failed    FAIL: passed 0 failed 1 skipped 0 errors 0 in" in log
    assert "\x1b[" not in log  # not a terminal: lines only, no redrawn table


def test_display_on_a_terminal_redraws_a_status_table() -> None:
    runs = [
        CellRun(Cell("1.37", "p", "dra-all"), Path("/x"), Path("/cx")),
        CellRun(Cell("1.36", "p", "dra-all"), Path("/y"), Path("/cy")),
    ]
    out = io.StringIO()
    display = Display(runs, out, tty=True)
    runs[0].state, runs[0].percent = "running", 42
    display.tick()
    display.tick()
    text = out.getvalue()
    assert text.count("1.37/p/dra-all") == 2
    assert "\x1b[2F\x1b[J" in text  # the second table replaces the first
    assert " 42%" in text


def test_missing_control_planes_are_built_first_with_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.controlplane.build as build
    from harness.matrix import ensure_builds

    built: list[str] = []

    def fake_build(minor: object, progress: Callable[[str], None]) -> Path:
        name = getattr(minor, "name", "")
        progress(f"k8slocal {name}: 10/20 packages, 5s")
        built.append(name)
        return Path(f"/cache/{name}/k8slocal")

    monkeypatch.setattr(build, "ensure_controlplane", fake_build)
    monkeypatch.setattr(build, "ensure_kwok", lambda matrix, progress: Path("/cache/kwok"))
    monkeypatch.setattr(build, "binary_path", lambda minor: Path("/nonexistent") / minor.name)
    lines: list[str] = []
    cells = [Cell("1.36", "p", "dra-all"), Cell("1.37", "p", "dra-all"), Cell("1.36", "q", "dra-all")]
    ensure_builds(load_matrix(), cells, lines.append)
    assert built == ["1.37", "1.36"]
    assert lines == [
        "control plane v1.37.2: building",
        "k8slocal 1.37: 10/20 packages, 5s",
        "control plane v1.37.2: /cache/1.37/k8slocal",
        "control plane v1.36.3: building",
        "k8slocal 1.36: 10/20 packages, 5s",
        "control plane v1.36.3: /cache/1.36/k8slocal",
    ]


def test_a_cells_latest_progress_line_is_read_from_its_log(tmp_path: Path) -> None:
    from harness.matrix.runner import _progress

    log = tmp_path / "pytest.log"
    assert _progress(log) == ""
    log.write_text(
        "....progress 1.37/dra-all: 10/96 tests, 30s elapsed, ETA 4m18s\n"
        "..F.progress 1.37/dra-all: 40/96 tests, 1 failed, 2m10s elapsed, ETA 3m02s\n..."
    )
    assert _progress(log) == "40/96 tests, 1 failed, 2m10s elapsed, ETA 3m02s"


def test_display_shows_running_cells_progress_in_the_table_and_as_plain_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import harness.matrix.display as display_module

    run = CellRun(Cell("1.37", "p", "dra-all"), Path("/x"), Path("/cx"))
    run.state, run.progress = "running", "40/96 tests, 1 failed, 2m10s elapsed, ETA 3m02s"
    tty = io.StringIO()
    Display([run], tty, tty=True).tick()
    assert "1.37/p/dra-all" in tty.getvalue()
    assert "  40/96 tests, 1 failed, 2m10s elapsed, ETA 3m02s\n" in tty.getvalue()

    monkeypatch.setattr(display_module, "PLAIN_EVERY", 0.0)
    plain = io.StringIO()
    display = Display([run], plain, tty=False)
    display.tick()
    display.tick()  # the same progress again: not repeated
    lines = plain.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith(
        "] 1.37/p/dra-all                     running   40/96 tests, 1 failed, 2m10s elapsed, ETA 3m02s"
    )
    assert "\x1b[" not in plain.getvalue()
