"""qualify's verdict words (harness.reports.verdicts): FLAKY on a rerun, the two NOT SUPPORTED
words, PASS saying how many ran, the run's word and exit code (NOTHING RAN, pytest's own exit
counted), and the legend in qualify.html and qualify.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markupsafe import escape as html_escape

from harness.core.requirements import Kind, Reason
from harness.qualify.capabilities import CAPABILITIES, CapabilityResult, Verdict, decide
from harness.qualify.preflight import ClusterFacts
from harness.qualify.report import EXIT_CODES, Qualification, write_report
from harness.reports.summary import TestRecord
from harness.reports.verdicts import LEGEND, Word

[GANG] = [c for c in CAPABILITIES if c.id == "gang"]
BASE = "suites/gang/test_gang.py::"
MIG = Reason(Kind.FLEET, device_class="c", need="MIG devices", text="2 plain GPUs")
GATE = Reason(Kind.FEATURE_GATE, minor="1.35", profile="dra-all", gate="GangScheduling", state=False)


def _t(name: str, outcome: str, *reasons: Reason, message: str = "", rerun: str = "") -> TestRecord:
    return TestRecord(BASE + name, "gang", outcome, 1.0, message, list(reasons), rerun)


def test_pass_says_how_many_of_its_tests_ran_and_why_the_others_did_not() -> None:
    tests = [_t(f"test_{i}", "passed") for i in range(4)]
    tests += [_t("test_mig_a", "skipped", MIG), _t("test_mig_b", "skipped", MIG)]
    result = decide(GANG, tests)
    assert (result.verdict, result.headline) == (
        Verdict.PASS,
        "PASS, 4 of 6 ran; 2 skipped: needs MIG devices of class c; the fleet has 2 plain GPUs",
    )
    assert decide(GANG, tests[:1]).headline == "PASS, 1 of 1 ran"


def test_a_pass_only_on_a_rerun_is_flaky_with_the_first_failure_first() -> None:
    steady, flaky = _t("test_a", "passed"), _t("test_b", "passed", rerun="call: AssertionError: 1 != 2")
    result = decide(GANG, [steady, flaky])
    assert (result.verdict, result.headline, result.evidence) == (
        Verdict.FLAKY,
        "FLAKY, 1 of 2 passed only on a rerun",
        [
            f"{BASE}test_b: passed only on its rerun; first attempt: call: AssertionError: 1 != 2",
            "passed: test_a",
            "passed: test_b",
        ],
    )


def test_a_failure_outranks_a_flaky_pass() -> None:
    tests = [_t("test_b", "passed", rerun="call: x"), _t("test_c", "errors", message="teardown: left")]
    result = decide(GANG, tests)
    assert (result.verdict, result.headline, result.evidence) == (
        Verdict.FAIL,
        "FAIL, 1 of 2 failed",
        [f"{BASE}test_c: teardown: left"],
    )


def test_not_supported_is_the_drivers_and_cluster_lacks_the_clusters() -> None:
    version = Reason(Kind.VERSION, minor="1.34", need="1.35")
    api = Reason(Kind.API, minor="1.35", profile="dra-all", need="scheduling.k8s.io/v1alpha1")
    cluster = decide(GANG, [_t("test_a", "skipped", GATE), _t("test_b", "skipped", version, api)])
    assert (cluster.verdict, cluster.evidence) == (
        Verdict.CLUSTER_LACKS,
        [
            "test_a: needs feature gate GangScheduling, off in 1.35/dra-all",
            "test_b: needs Kubernetes >= 1.35 (cell is 1.34); "
            "needs scheduling.k8s.io/v1alpha1 served (runtime-config), not served in 1.35/dra-all",
        ],
    )
    both = decide(GANG, [_t("test_a", "skipped", GATE), _t("test_c", "skipped", MIG)])
    assert (both.verdict, both.evidence) == (
        Verdict.NOT_SUPPORTED,  # the fleet's reason is certain, whatever the gates
        ["test_c: needs MIG devices of class c; the fleet has 2 plain GPUs"],
    )


def test_a_skip_for_cells_without_a_gate_lacks_nothing() -> None:
    """A test for cells where the gate is off, skipped because it is on: nothing is lacking."""
    on = Reason(
        Kind.FEATURE_GATE, required=False, minor="1.37", profile="dra-all", gate="GangScheduling", state=True
    )
    result = decide(GANG, [_t("test_a", "skipped", on)])
    assert (result.verdict, result.evidence) == (
        Verdict.NOT_TESTED,
        ["test_a: covers cells where feature gate GangScheduling is off; it is on in 1.37/dra-all"],
    )


def _q(*results: CapabilityResult, totals: dict[str, int], pytest_exit: int = 0) -> Qualification:
    q = Qualification(
        "gpu.acme.example", "gpu.acme.example", "nvidia.com/gpu", "dra-harness qualify", ClusterFacts()
    )
    q.capabilities, q.totals, q.pytest_exit = list(results), totals, pytest_exit
    return q


def _verdicts(*verdicts: Verdict) -> list[CapabilityResult]:
    return [CapabilityResult(GANG, v) for v in verdicts]


RAN = {"passed": 3, "failed": 0, "skipped": 1, "errors": 0}
NONE_RAN = {"passed": 0, "failed": 0, "skipped": 3, "errors": 0}


@pytest.mark.parametrize(
    ("verdicts", "totals", "pytest_exit", "word", "code"),
    [
        ((Verdict.PASS, Verdict.NOT_TESTED), RAN, 0, Word.PASS, 0),
        ((Verdict.PASS, Verdict.FLAKY), RAN, 0, Word.FLAKY, 5),
        ((Verdict.PASS, Verdict.FAIL, Verdict.FLAKY), RAN, 1, Word.FAIL, 3),
        # the shared_devices run of issue 50: 3 skipped, nothing ran, was exit 0 and PASS
        (
            (Verdict.NOT_TESTED, Verdict.NOT_SUPPORTED, Verdict.CLUSTER_LACKS),
            NONE_RAN,
            0,
            Word.NOTHING_RAN,
            4,
        ),
        ((Verdict.NOT_TESTED,), NONE_RAN, 5, Word.NOTHING_RAN, 4),
        # pytest saw a failure summary.json does not hold: never exit 0
        ((Verdict.PASS,), RAN, 1, Word.FAIL, 3),
        ((Verdict.PASS,), RAN | {"errors": 1}, 0, Word.FAIL, 3),
        # interrupted, an internal error, a usage error: the run did not complete
        ((Verdict.PASS,), RAN, 2, Word.ERROR, 1),
        ((Verdict.PASS,), RAN, 3, Word.ERROR, 1),
    ],
)
def test_the_runs_word_and_exit_code(
    verdicts: tuple[Verdict, ...], totals: dict[str, int], pytest_exit: int, word: Word, code: int
) -> None:
    q = _q(*_verdicts(*verdicts), totals=totals, pytest_exit=pytest_exit)
    assert (q.verdict, q.exit_code) == (word, code)


def test_the_exit_codes_are_distinct_and_none_is_argparses() -> None:
    assert EXIT_CODES == {Word.PASS: 0, Word.ERROR: 1, Word.FAIL: 3, Word.NOTHING_RAN: 4, Word.FLAKY: 5}


def test_the_reports_carry_the_verdict_the_headlines_and_a_legend_of_the_words(tmp_path: Path) -> None:
    passed = decide(GANG, [_t("test_a", "passed"), _t("test_b", "skipped", MIG)])
    q = _q(passed, decide(GANG, [_t("test_c", "skipped", GATE)]), totals=RAN)
    write_report(q, tmp_path)
    data = json.loads((tmp_path / "qualify.json").read_text())
    assert (data["verdict"], data["exit_code"], data["pytest_exit"]) == ("PASS", 0, 0)
    assert data["capabilities"][0]["headline"] == (
        "PASS, 1 of 2 ran; 1 skipped: needs MIG devices of class c; the fleet has 2 plain GPUs"
    )
    md = (tmp_path / "qualify.md").read_text()
    html = (tmp_path / "qualify.html").read_text()
    assert "**Verdict: PASS** (exit 0)" in md
    assert "| **gang**: Gang scheduling with the driver's devices |" in md  # Markdown: not HTML-escaped
    assert "| PASS, 1 of 2 ran; 1 skipped: needs MIG devices of class c; the fleet has 2 plain GPUs |" in md
    for word, meaning in LEGEND.items():
        if word in (Word.WARN, Word.SKIP):  # the readiness report's only
            assert f"| {word} |" not in md
            continue
        assert (meaning in md, str(html_escape(meaning)) in html) == (True, True), word
    assert "| NOTHING RAN | 4 | the whole run: not one test ran, so nothing was qualified |" in md
    assert '<span class="badge CLUSTER-LACKS">CLUSTER LACKS</span>' in html
    assert "<dd>exit 5: passed only on a rerun" in html
