"""Every phase counts: a planted teardown failure (a fixture finding a leftover after the test's
own checks passed) is recorded in summary.json and JUnit, fails the test's capability with its
message as the evidence, and makes qualify's verdict FAIL (exit 3)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.core.versions import REPO_ROOT
from harness.qualify.capabilities import CAPABILITIES, Capability, decide_all
from harness.qualify.preflight import ClusterFacts
from harness.qualify.report import Qualification
from harness.reports.summary import SummaryError, read_summary
from harness.reports.verdicts import Word

PLANTED = """
import pytest


@pytest.fixture
def leftover():
    yield
    raise AssertionError("claim c-1 still prepared on node-a after the test")


@pytest.fixture
def broken_setup():
    raise RuntimeError("no namespace")


@pytest.fixture
def not_here():
    pytest.skip("needs MIG devices")


def test_body_passes_then_teardown_finds_a_leftover(leftover):
    pass


def test_body_and_teardown_both_fail(leftover):
    assert False, "wrong device"


def test_setup_fails(broken_setup):
    pass


def test_skipped_in_setup(not_here):
    pass


def test_clean():
    pass
"""
FILE = "suites/gang/test_planted.py"
LEFTOVER = "teardown: AssertionError: claim c-1 still prepared on node-a after the test"


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makeconftest((REPO_ROOT / "conftest.py").read_text())
    pytester.mkdir("suites")
    pytester.mkdir("suites/gang")
    (pytester.path / FILE).write_text(PLANTED)
    return pytester.runpytest_subprocess(
        "-p",
        "no:pytest-kind",
        "-p",
        "no:cacheprovider",
        f"--rootdir={pytester.path}",
        FILE,
        *args,
        timeout=300,
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_planted_teardown_failure_fails_the_capability(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    result = _run(
        pytester, f"--summary-json={pytester.path / 'summary.json'}", "--junitxml=junit.xml", *workers
    )
    result.assert_outcomes(passed=2, failed=1, errors=3, skipped=1)
    summary = read_summary(pytester.path / "summary.json")
    got = {t.nodeid.rsplit("::", 1)[1]: (t.outcome, t.message, t.phases) for t in summary.tests}
    assert got == {
        "test_body_passes_then_teardown_finds_a_leftover": (
            "errors",
            LEFTOVER,
            {"setup": "passed", "call": "passed", "teardown": "failed"},
        ),
        "test_body_and_teardown_both_fail": (
            "failed",
            f"AssertionError: wrong device\nassert False; {LEFTOVER}",
            {"setup": "passed", "call": "failed", "teardown": "failed"},
        ),
        "test_setup_fails": (
            "errors",
            "RuntimeError: no namespace",
            {"setup": "failed", "teardown": "passed"},
        ),
        "test_skipped_in_setup": ("skipped", "needs MIG devices", {"setup": "skipped", "teardown": "passed"}),
        "test_clean": ("passed", "", {"setup": "passed", "call": "passed", "teardown": "passed"}),
    }
    assert summary.totals == {"passed": 1, "failed": 1, "skipped": 1, "errors": 2}
    raw = json.loads((pytester.path / "summary.json").read_text())["tests"]
    assert {t["nodeid"].rsplit("::", 1)[1]: t["phases"]["teardown"] for t in raw}["test_clean"] == "passed"

    [gang] = [c for c in decide_all(summary) if c.capability.id == "gang"]
    assert (gang.verdict, gang.evidence[0]) == (
        Word.FAIL,
        f"{FILE}::test_body_passes_then_teardown_finds_a_leftover: {LEFTOVER}",
    )
    q = Qualification("d", "c", "r", "qualify", ClusterFacts(), decide_all(summary), totals=summary.totals)
    q.pytest_exit = result.ret
    assert (q.verdict, q.exit_code, result.ret) == (Word.FAIL, 3, 1)

    junit = ET.parse(pytester.path / "junit.xml").getroot()
    cases = {c.get("name"): c for c in junit.iter("testcase")}
    props = {
        p.get("name"): p.get("value")
        for p in cases["test_body_passes_then_teardown_finds_a_leftover"].iter("property")
    }
    assert (props["phase.setup"], props["phase.call"], props["phase.teardown"]) == (
        "passed",
        "passed",
        "failed",
    )
    props = {p.get("name"): p.get("value") for p in cases["test_clean"].iter("property")}
    assert (props["phase.setup"], props["phase.call"], props["phase.teardown"]) == (
        "passed",
        "passed",
        "passed",
    )


def test_only_the_teardown_failing_is_enough_for_fail(pytester: pytest.Pytester) -> None:
    """The smallest plant: one test, its body passes, its fixture's teardown raises."""
    result = _run(pytester, "-k", "teardown_finds", f"--summary-json={pytester.path / 'summary.json'}")
    result.assert_outcomes(passed=1, errors=1)
    verdicts = {c.capability.id: c.verdict for c in decide_all(read_summary(pytester.path / "summary.json"))}
    assert verdicts["gang"] is Word.FAIL


CELL = {"minor": "1.37", "personality": "external", "profile": "dra-all"}


@pytest.mark.parametrize(
    ("phases", "error"),
    [
        ({"teardown": "exploded"}, "setup/call/teardown: passed, failed or skipped"),
        ({"cleanup": "passed"}, "setup/call/teardown: passed, failed or skipped"),
        (["teardown"], "an object"),
    ],
)
def test_a_summary_with_bad_phases_is_one_line(tmp_path: Path, phases: object, error: str) -> None:
    test = {"nodeid": "suites/gang/test_x.py::test_x", "area": "gang", "outcome": "passed", "duration": 1.0}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"cell": CELL, "tests": [test | {"phases": phases}]}))
    with pytest.raises(SummaryError) as bad:
        read_summary(path)
    assert str(bad.value) == f"{path} is not a summary.json: tests[0].phases must be {error}, got {phases!r}"


def test_a_summary_without_phases_reads_as_before(tmp_path: Path) -> None:
    test = {"nodeid": "suites/gang/test_x.py::test_x", "area": "gang", "outcome": "passed", "duration": 1.0}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"cell": CELL, "tests": [test]}))
    [record] = read_summary(path).tests
    assert (record.phases, "phases" in record.to_json()) == ({}, False)


TEARDOWN_ONLY = """
import pytest


@pytest.fixture
def leftover():
    yield
    raise AssertionError("claim c-1 still prepared on node-a after the test")


def test_body_passes_then_teardown_finds_a_leftover(leftover):
    pass


def test_clean():
    pass
"""


@pytest.mark.parametrize("capability", CAPABILITIES, ids=[c.id for c in CAPABILITIES])
def test_a_teardown_failure_in_a_test_of_each_capability_fails_that_capability(
    pytester: pytest.Pytester, capability: Capability
) -> None:
    """Planted in a file the capability's own pattern covers, the teardown failure alone (the body
    passed) turns that capability FAIL with the leftover as its first evidence."""
    path = capability.tests[0].split("::")[0].replace("*", "test_planted.py")
    pytester.makeconftest((REPO_ROOT / "conftest.py").read_text())
    (pytester.path / path).parent.mkdir(parents=True, exist_ok=True)
    (pytester.path / path).write_text(TEARDOWN_ONLY)
    result = pytester.runpytest_subprocess(
        "-p", "no:pytest-kind", "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
        f"--summary-json={pytester.path / 'summary.json'}", path, timeout=300,
    )  # fmt: skip

    result.assert_outcomes(passed=2, errors=1)
    [mine] = [
        c for c in decide_all(read_summary(pytester.path / "summary.json")) if c.capability is capability
    ]
    assert (mine.verdict, mine.evidence[0]) == (
        Word.FAIL,
        f"{path}::test_body_passes_then_teardown_finds_a_leftover: {LEFTOVER}",
    )
