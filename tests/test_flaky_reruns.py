"""A test that fails, then passes on its rerun (--reruns, pytest-rerunfailures) is recorded as
flaky in summary.json with the first attempt's failure, never as a plain pass; qualify, the
readiness report and matrix all say FLAKY (one word, harness.reports.verdicts) and the nightly
diff lists it as flaky."""

from __future__ import annotations

import json

import pytest

from harness.core.requirements import Kind, Reason
from harness.nightly.diff import compare
from harness.nightly.night import CellNight, Night, TestRun
from harness.qualify.capabilities import CAPABILITIES, decide
from harness.readiness import evaluate
from harness.readiness.catalog import CHECK_IDS
from harness.readiness.status import Status
from harness.reports.summary import TestRecord
from harness.reports.verdicts import Word, cell_word
from tests.support.cli import run_suite_file

FLAKY_TESTS = """
from pathlib import Path

ATTEMPTS = Path(__file__).with_name("attempts")


def test_fails_once():
    ATTEMPTS.write_text(ATTEMPTS.read_text() + "x" if ATTEMPTS.exists() else "x")
    assert len(ATTEMPTS.read_text()) > 1, "first attempt fails"


def test_steady():
    pass


def test_always_fails():
    assert False, "broken for good"
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_pass_on_the_rerun_is_recorded_with_the_first_failure(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    summary_json = pytester.path / "summary.json"
    result = run_suite_file(pytester, FLAKY_TESTS, "--reruns=1", f"--summary-json={summary_json}", *workers)

    result.assert_outcomes(passed=2, failed=1)
    assert result.parseoutcomes()["rerun"] == 2
    tests = {t["nodeid"].rsplit("::", 1)[1]: t for t in json.loads(summary_json.read_text())["tests"]}
    assert {name: t["outcome"] for name, t in tests.items()} == {
        "test_fails_once": "passed",
        "test_steady": "passed",
        "test_always_fails": "failed",
    }
    assert tests["test_fails_once"]["rerun"].startswith("call: AssertionError: first attempt fails")
    assert tests["test_always_fails"]["rerun"].startswith("call: AssertionError: broken for good")
    assert "rerun" not in tests["test_steady"]  # files of tests that ran once stay as they were
    # the passing attempt's phases only: the failed attempt is the `rerun` text
    assert tests["test_fails_once"]["phases"] == {"setup": "passed", "call": "passed", "teardown": "passed"}


GANG = "suites/gang/test_gang.py::test_x"


FLAKY_GANG = TestRecord(GANG, "gang", "passed", 1.0, rerun="call: TimeoutError: pods Running")


def test_readiness_says_flaky_and_names_the_first_failure() -> None:
    r = evaluate(CHECK_IDS["gang"], [FLAKY_GANG])
    assert (r.status, str(r.status), r.detail) == (
        Status.FLAKY,
        "FLAKY",
        "1 of 1 passed only on a rerun (flaky); test_x: call: TimeoutError: pods Running",
    )


def test_a_flaky_pass_outranks_a_skip_that_warns() -> None:
    gated = TestRecord(
        "suites/gang/test_gang.py::test_y",
        "gang",
        "skipped",
        0.0,
        "needs feature gate GangScheduling, off in 1.35/dra-all",
        [Reason(Kind.FEATURE_GATE, minor="1.35", profile="dra-all", gate="GangScheduling", state=False)],
    )
    assert evaluate(CHECK_IDS["gang"], [FLAKY_GANG, gated]).status is Status.FLAKY


def test_qualify_readiness_and_matrix_say_the_same_word_for_a_flaky_pass() -> None:
    [gang] = [c for c in CAPABILITIES if c.id == "gang"]
    qualified = decide(gang, [FLAKY_GANG])
    readiness = evaluate(CHECK_IDS["gang"], [FLAKY_GANG])
    assert (qualified.verdict, readiness.status.word, cell_word([FLAKY_GANG])) == (
        Word.FLAKY,
        Word.FLAKY,
        Word.FLAKY,
    )
    assert qualified.evidence[0] == (
        f"{GANG}: passed only on its rerun; first attempt: call: TimeoutError: pods Running"
    )
    assert qualified.headline == "FLAKY, 1 of 1 passed only on a rerun"


def test_the_nightly_diff_lists_a_flaky_pass_with_both_outcomes() -> None:
    def night(run: TestRun) -> Night:
        n = Night()
        n.add(CellNight("1.37/nvidia-v25.12/dra-all", "x", {GANG: run}))
        return n

    diff = compare(night(TestRun("passed", 1.0, "", "call: boom")), night(TestRun("passed", 1.0)))
    assert [(e.kind, e.before, e.after, e.detail) for e in diff.entries] == [
        ("flaky", "passed", "flaky", "failed, then passed on its rerun: call: boom")
    ]
    assert diff.exit_code == 0  # a flake is not a new failure
