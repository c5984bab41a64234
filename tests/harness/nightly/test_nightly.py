"""The nightly diff: two nights of a 3-cell matrix with planted changes, compared in Python
and through `dra-harness report --merge ... --baseline`; bad baselines as notes or one line;
summary.json's run facts (commit, versions, load)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.nightly import Entry, compare, history, load_baseline, load_tonight
from harness.nightly.night import CellNight, Night, TestRun
from harness.reports.summary import SummaryError, git_commit, read_summary
from tests.support.cli import run_cli
from tests.support.nightly_data import NEW, OLD, PREV, TIMEOUT, night_one, night_two, record, write_night
from tests.support.readiness_data import DYN, EXT, GANG, LIFE, NO_MAP, SMOKE


def _rows(entries: Sequence[Entry]) -> list[tuple[str, str, str, str, str]]:
    return [(e.kind, e.cell, e.test, e.before, e.after) for e in entries]


def test_the_planted_regression_fix_skip_and_slowdown_are_named_exactly(tmp_path: Path) -> None:
    one = write_night(tmp_path / "one", night_one())
    two = write_night(tmp_path / "two", night_two())
    diff = compare(load_tonight([two]), load_baseline(one))
    assert _rows(diff.entries) == [
        ("new failure", NEW, GANG, "passed", "failed"),
        ("fixed", PREV, EXT, "failed", "passed"),
        ("still failing", OLD, DYN, "failed", "failed"),
        ("newly skipped", OLD, LIFE, "passed", "skipped"),
        ("slower", PREV, SMOKE, "passed", "passed"),
    ]
    new, fixed, still, skipped, slower = diff.entries
    assert new.detail == TIMEOUT
    assert fixed.detail == "failed in the baseline: expected 1 claim for pod"
    assert still.detail == "assert 5 == 7"
    assert skipped.detail == NO_MAP.message()
    assert slower.detail == "10.0 s -> 40.0 s (+300%)"
    assert diff.compared == 10
    assert diff.exit_code == 3
    assert diff.headline() == (
        "against the baseline (10 test(s) compared): 1 new failure, 1 fixed, 1 still failing, "
        "1 newly skipped, 1 slower"
    )


def test_a_fix_alone_exits_0_and_the_same_night_is_no_change(tmp_path: Path) -> None:
    one = write_night(tmp_path / "one", night_one())
    fixed = night_one()
    fixed[PREV][1] = record(EXT)
    diff = compare(load_tonight([write_night(tmp_path / "fixed", fixed)]), load_baseline(one))
    assert (_rows(diff.entries), diff.exit_code) == (
        [("fixed", PREV, EXT, "failed", "passed"), ("still failing", OLD, DYN, "failed", "failed")],
        0,
    )
    same = compare(load_tonight([one]), load_baseline(one))
    assert (_rows(same.entries), same.exit_code) == (
        [("still failing", OLD, DYN, "failed", "failed"), ("still failing", PREV, EXT, "failed", "failed")],
        0,
    )


def test_the_slower_threshold_is_a_percentage_and_2_seconds_at_least(tmp_path: Path) -> None:
    one = write_night(tmp_path / "one", night_one())
    two = load_tonight([write_night(tmp_path / "two", night_two())])
    assert compare(two, load_baseline(one), slower_by=300.0).of("slower") == []  # +300% is not beyond
    assert _rows(compare(two, load_baseline(one), slower_by=299.0).of("slower")) == [
        ("slower", PREV, SMOKE, "passed", "passed")
    ]
    quick = night_one()
    quick[NEW][0] = record(SMOKE, duration=2.9)  # 1.0 s -> 2.9 s: +190%, but under 2 s more
    diff = compare(load_tonight([write_night(tmp_path / "q", quick)]), load_baseline(one))
    assert [e.kind for e in diff.entries] == ["still failing", "still failing"]


def test_a_skip_whose_reason_changed_shows_both_reasons(tmp_path: Path) -> None:
    before, after = night_one(), night_one()
    before[OLD][1] = record(LIFE, "skipped", "needs DRAExtendedResource")
    after[OLD][1] = record(LIFE, "skipped", NO_MAP.message())
    diff = compare(
        load_tonight([write_night(tmp_path / "b", after)]), load_baseline(write_night(tmp_path / "a", before))
    )
    (entry,) = diff.of("newly skipped")
    assert (entry.cell, entry.test, entry.detail) == (
        OLD,
        LIFE,
        f"{NO_MAP.message()} (was: needs DRAExtendedResource)",
    )


# ---- through the command line --------------------------------------------------------------


def test_report_with_a_baseline_opens_on_the_diff_and_exits_3_on_a_new_failure(tmp_path: Path) -> None:
    one = write_night(tmp_path / "one", night_one())
    two = write_night(tmp_path / "two", night_two())
    first = run_cli("report", "--merge", str(one / "cells"), "--out", str(tmp_path / "r1"))
    assert (first.returncode, first.stderr) == (0, "")
    night = json.loads((tmp_path / "r1" / "night.json").read_text())
    assert (night["format"], sorted(c["id"] for c in night["cells"])) == (
        "dra-harness-night",
        [PREV, OLD, NEW],
    )
    done = run_cli(
        "report",
        "--merge",
        str(two / "cells"),
        "--out",
        str(tmp_path / "r2"),
        "--baseline",
        str(tmp_path / "r1"),
    )
    assert (done.returncode, done.stderr) == (3, "")
    assert done.stdout.splitlines()[-2:] == [
        "against the baseline (10 test(s) compared): 1 new failure, 1 fixed, 1 still failing, "
        "1 newly skipped, 1 slower",
        f"new failure: {NEW} {GANG}",
    ]
    out = tmp_path / "r2"
    assert sorted(p.name for p in out.iterdir()) == [
        "baseline.md", "night.json", "readiness.html", "readiness.json", "readiness.md"
    ]  # fmt: skip
    html = (out / "readiness.html").read_text()
    assert html.index('<section id="baseline"') < html.index('<div class="kpis">')
    assert f'<td class="ids" rowspan="1">{NEW}</td><td><code>{GANG}</code></td>' in html
    doc = json.loads((out / "readiness.json").read_text())
    assert next(iter(doc)) == "baseline"
    assert doc["baseline"]["counts"]["new failure"] == 1
    assert doc["baseline"]["entries"][0] == {
        "kind": "new failure", "cell": NEW, "test": GANG,
        "before": "passed", "after": "failed", "detail": TIMEOUT,
    }  # fmt: skip
    md = (out / "readiness.md").read_text()
    assert md.index("## Since the baseline") < md.index("Checks over all cells")
    assert f"| {PREV} | `{EXT}` | failed | passed | failed in the baseline: expected 1 claim for pod |" in md
    # How each fake personality the diff names was checked (fake_driver.facts.personalities provenance).
    checked = (
        "Fake driver personalities: nvidia-v25.12 (from source reading at v25.12.0, not compared with "
        "a running plugin); nvidia-v0.4 (compared with the real plugin v0.4.1)."
    )
    assert checked in md
    assert checked in " ".join(html.split())
    assert doc["baseline"]["personalities"] == {
        "nvidia-v25.12": "from source reading at v25.12.0, not compared with a running plugin",
        "nvidia-v0.4": "compared with the real plugin v0.4.1",
    }


def test_a_night_with_only_a_fix_exits_0(tmp_path: Path) -> None:
    one = write_night(tmp_path / "one", night_one())
    fixed = night_one()
    fixed[PREV][1] = record(EXT)
    two = write_night(tmp_path / "two", fixed)
    done = run_cli("report", "--merge", str(two), "--out", str(tmp_path / "r"), "--baseline", str(one))
    assert (done.returncode, done.stderr) == (0, "")
    assert (
        done.stdout.splitlines()[-1] == "against the baseline (10 test(s) compared): 1 fixed, 1 still failing"
    )


def test_two_artifacts_claiming_one_cell_are_one_line_naming_both(tmp_path: Path) -> None:
    one = write_night(tmp_path / "one", night_one())
    two = write_night(tmp_path / "two", night_two())
    a, b = one / "cells" / "1.37_nvidia-v25.12_dra-all", two / "cells" / "1.37_nvidia-v25.12_dra-all"
    done = run_cli("report", "--merge", str(a), str(b), "--out", str(tmp_path / "r"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"dra-harness: cell {NEW} is claimed twice: by {a / 'summary.json'} and by {b / 'summary.json'}\n"
    )
    shutil.copytree(a, one / "again")  # the baseline side too
    done = run_cli("report", "--merge", str(two), "--out", str(tmp_path / "r"), "--baseline", str(one))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"dra-harness: cell {NEW} is claimed twice: by {one / 'again' / 'summary.json'} "
        f"and by {a / 'summary.json'}\n"
    )


@pytest.mark.parametrize(
    ("args", "code", "stderr"),
    [
        (("--slower-by", "20"), 1,
         "dra-harness: --slower-by compares durations with a --baseline; give one\n"),
        (("--baseline", "{tmp}/nope"), 1, "dra-harness: baseline {tmp}/nope does not exist\n"),
        (("--baseline", "{tmp}/empty"), 1,
         "dra-harness: baseline {tmp}/empty holds no night.json, summary.json or readiness.json\n"),
    ],
)  # fmt: skip
def test_bad_baseline_arguments_are_one_line(
    tmp_path: Path, args: tuple[str, ...], code: int, stderr: str
) -> None:
    (tmp_path / "empty").mkdir()
    run = write_night(tmp_path / "run", night_one())
    done = run_cli("report", str(run), "--out", str(tmp_path / "r"), *(a.format(tmp=tmp_path) for a in args))
    assert (done.returncode, done.stdout, done.stderr) == (code, "", stderr.format(tmp=tmp_path))


def test_slower_by_must_be_a_positive_number(tmp_path: Path) -> None:
    done = run_cli("report", str(tmp_path), "--baseline", str(tmp_path), "--slower-by", "0")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "--slower-by" in done.stderr


# ---- baselines of other formats and other cells ------------------------------------------


def test_a_readiness_json_baseline_of_an_older_format_is_compared_per_cell_only(tmp_path: Path) -> None:
    one = write_night(tmp_path / "one", night_one())
    assert run_cli("report", str(one), "--out", str(tmp_path / "r1")).returncode == 0
    (tmp_path / "r1" / "night.json").unlink()  # a report from before night.json
    diff = compare(load_tonight([write_night(tmp_path / "two", night_two())]), load_baseline(tmp_path / "r1"))
    assert _rows(diff.entries) == [("not in baseline", c, "", "", "") for c in (OLD, NEW, PREV)]
    assert diff.entries[1].detail == "the baseline has no per-test results for it (3 passed, 1 failed)"
    assert diff.notes == [
        f"{tmp_path / 'r1' / 'readiness.json'}: a readiness report of an older format, without per-test "
        "results: no test compared"
    ]
    assert diff.exit_code == 0


def test_an_older_summary_json_is_compared_where_it_can_be(tmp_path: Path) -> None:
    """No commit, versions, load or reasons; one record without a duration, one unreadable."""
    old = tmp_path / "old" / "summary.json"
    old.parent.mkdir()
    cell = {"minor": "1.37", "personality": "nvidia-v25.12", "profile": "dra-all"}
    tests = [
        {"nodeid": SMOKE, "area": "smoke", "outcome": "passed"},
        {"nodeid": GANG, "area": "gang", "outcome": "passed", "duration": 3.0},
        {"nodeid": EXT, "outcome": "exploded"},
    ]
    old.write_text(json.dumps({"cell": cell, "tests": tests}))
    diff = compare(load_tonight([write_night(tmp_path / "two", night_two())]), load_baseline(old.parent))
    assert _rows(diff.entries) == [
        ("new failure", NEW, GANG, "passed", "failed"),
        ("not in baseline", OLD, "", "", ""),
        ("not in baseline", NEW, EXT, "", "passed"),
        ("not in baseline", NEW, LIFE, "", "passed"),
        ("not in baseline", PREV, "", "", ""),
    ]
    assert diff.compared == 2
    assert diff.notes == [f"{old}: 1 test record(s) unreadable, not compared"]


def test_a_baseline_of_other_cells_lists_both_sides_and_exits_0(tmp_path: Path) -> None:
    other = night_one()
    other = {"1.35/nvidia-v25.12/dra-all": other[NEW]}
    diff = compare(
        load_tonight([write_night(tmp_path / "two", night_two())]),
        load_baseline(write_night(tmp_path / "o", other)),
    )
    assert _rows(diff.entries) == [
        ("not in baseline", OLD, "", "", ""),
        ("not in baseline", NEW, "", "", ""),
        ("not in baseline", PREV, "", "", ""),
        ("not run tonight", "1.35/nvidia-v25.12/dra-all", "", "", ""),
    ]
    assert diff.entries[1].detail == "cell not in baseline (3 passed, 1 failed)"
    assert (diff.compared, diff.exit_code) == (0, 0)


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("{", ": not JSON, not compared (JSONDecodeError)"),
        ("[1]", ": not a night.json, summary.json or readiness.json, not compared"),
        ('{"format": "dra-harness-night", "cells": [{"tests": []}]}',
         " cells[0]: names no cell (<minor>/<personality>/<profile>), not compared"),
    ],
)  # fmt: skip
def test_an_unreadable_baseline_file_is_a_note_not_a_traceback(tmp_path: Path, text: str, note: str) -> None:
    path = tmp_path / "night.json"
    path.write_text(text)
    baseline = load_baseline(tmp_path)  # the directory holding it
    assert (baseline.cells, baseline.notes) == ({}, [f"{path}{note}"])


# ---- summary.json's run facts ---------------------------------------------------------------


def test_summary_records_commit_versions_and_load_and_older_files_read_without_them(tmp_path: Path) -> None:
    run = write_night(tmp_path / "run", night_one())
    summary = read_summary(run / "cells" / "1.37_nvidia-v25.12_dra-all" / "summary.json")
    assert (summary.commit, summary.versions, summary.load_before_1m) == (
        "a" * 40,
        {"kubernetes": "v1.37.2"},
        0.5,
    )
    old = tmp_path / "summary.json"
    old.write_text(
        json.dumps({"cell": {"minor": "1.37", "personality": "p", "profile": "dra-all"}, "tests": []})
    )
    summary = read_summary(old)
    assert (summary.commit, summary.versions, summary.load_before_1m) == ("", {}, None)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("commit", 7, "commit must be a string, got 7"),
        ("versions", {"kubernetes": 1}, "versions must be an object of strings, got {'kubernetes': 1}"),
        ("load_before_1m", "high", "load_before_1m must be a number or null, got 'high'"),
    ],
)
def test_a_malformed_run_fact_is_one_line_naming_the_field(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    path = tmp_path / "summary.json"
    cell = {"minor": "1.37", "personality": "p", "profile": "dra-all"}
    path.write_text(json.dumps({"cell": cell, "tests": [], field: value}))
    with pytest.raises(SummaryError) as err:
        read_summary(path)
    assert str(err.value) == f"{path} is not a summary.json: {message}"


def test_commit_is_unknown_outside_a_checkout(tmp_path: Path) -> None:
    assert git_commit(tmp_path) == "unknown"
    assert len(git_commit().removesuffix("-dirty")) == 40


def test_report_history_lays_the_nights_side_by_side_and_draws_only_what_moved(tmp_path: Path) -> None:
    one = write_night(tmp_path / "one", night_one())
    two = write_night(tmp_path / "two", night_two())
    assert run_cli("report", "--merge", str(one / "cells"), "--out", str(tmp_path / "r1")).returncode == 0
    done = run_cli(
        "report", "--merge", str(two / "cells"), "--out", str(tmp_path / "r2"),
        "--baseline", str(tmp_path / "r1"), "--history", str(tmp_path / "r1"),
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (3, "")
    doc = json.loads((tmp_path / "r2" / "readiness.json").read_text())
    grid = doc["baseline"]["history"]
    assert grid["nights"] == [str(tmp_path / "r1"), "tonight"]
    rows = {(r["cell"], r["test"]): r["outcomes"] for r in grid["rows"]}
    assert rows[(NEW, GANG)] == ["passed", "failed"]
    assert rows[(PREV, EXT)] == ["failed", "passed"]
    assert rows[(OLD, DYN)] == ["failed", "failed"]
    assert rows[(OLD, LIFE)] == ["passed", "skipped"]
    assert (NEW, SMOKE) not in rows  # passed both nights: counted, not drawn
    assert grid["steady"] == len({(c, t) for c, t in _all_tests()}) - len(rows)
    md = (tmp_path / "r2" / "readiness.md").read_text()
    assert md.index("## Since the baseline") < md.index("## History") < md.index("Checks over all cells")
    assert f"| {NEW} | `{GANG}` | passed | failed |" in md
    html = (tmp_path / "r2" / "readiness.html").read_text()
    assert '<section id="history"' in html
    assert '<td title="failed" style="background:#cf222e; color:#fff; text-align:center">F</td>' in html


def _all_tests() -> set[tuple[str, str]]:
    return {(c, r.nodeid) for night in (night_one(), night_two()) for c, recs in night.items() for r in recs}


def test_a_flaky_pass_is_its_own_square_in_the_history() -> None:
    flaky = Night()
    flaky.add(CellNight(NEW, "x", {GANG: TestRun("passed", 1.0, "", "call: boom")}))
    steady = Night()
    steady.add(CellNight(NEW, "y", {GANG: TestRun("passed", 1.0)}))
    grid = history([("monday", steady), ("tuesday", flaky), ("tonight", steady)])
    assert [(r.cell, r.test, r.outcomes) for r in grid.rows] == [(NEW, GANG, ("passed", "flaky", "passed"))]
    assert grid.steady == 0
