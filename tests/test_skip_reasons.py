"""A skip's structured reason travels from the test, through the reporting plugin, into
summary.json next to its wording; pytest's own skips carry none."""

from __future__ import annotations

import json

import pytest

from harness.core.requirements import Kind, Reason
from tests.cli import run_suite_file

GATE = Reason(Kind.FEATURE_GATE, minor="1.35", profile="defaults", gate="DRAExtendedResource", state=False)
API = Reason(Kind.API, minor="1.36", profile="defaults", need="scheduling.k8s.io/v1alpha2")

SKIPPING_TESTS = """
import pytest

from fixtures.requirements import skip
from harness.core.requirements import Reason, Kind


@pytest.fixture
def served():
    skip(Reason(Kind.API, minor="1.36", profile="defaults", need="scheduling.k8s.io/v1alpha2"))


def test_in_the_body():
    skip(Reason(Kind.FEATURE_GATE, minor="1.35", profile="defaults", gate="DRAExtendedResource", state=False))


def test_in_a_fixture(served):
    pass


def test_plain_pytest_skip():
    pytest.skip("needs feature gate DRAExtendedResource, off in 1.35/defaults")
"""


# With xdist, the reasons reach the controller that writes summary.json from the workers.
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_summary_json_records_each_skips_reasons_and_its_wording(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    summary_json = pytester.path / "summary.json"
    result = run_suite_file(pytester, SKIPPING_TESTS, "-rs", f"--summary-json={summary_json}", *workers)

    result.assert_outcomes(skipped=3)
    # pytest's line names the test's own line, as for pytest.skip
    result.stdout.fnmatch_lines([f"SKIPPED [[]1[]] test_generated.py:13: {GATE.message()}"])
    tests = {t["nodeid"].rsplit("::", 1)[1]: t for t in json.loads(summary_json.read_text())["tests"]}
    assert {name: (t["message"], t["reasons"]) for name, t in tests.items()} == {
        "test_in_the_body": (GATE.message(), [GATE.to_json()]),
        "test_in_a_fixture": (API.message(), [API.to_json()]),
        "test_plain_pytest_skip": (GATE.message(), []),
    }


RULE_MARKED_TESTS = """
import pytest

from harness.core.cells import Cell


@pytest.fixture(params=[
    Cell("1.34", profile="dra-all", gates={"DRADeviceTaints": True}),
    Cell("1.34", profile="defaults", gates={"DRADeviceTaints": False}),
    Cell("1.35", profile="dra-all", gates={"DRADeviceTaints": True, "DRADeviceTaintRules": True}),
    Cell("1.35", profile="defaults", gates={"DRADeviceTaints": False, "DRADeviceTaintRules": False}),
], ids=["1.34-on", "1.34-off", "1.35-on", "1.35-off"])
def cell(request):
    return request.param


@pytest.mark.feature_gate("DRADeviceTaintRules")
def test_rules(cell):
    pass
"""


def test_a_rule_marker_is_checked_against_the_gate_that_carried_rules_on_the_minor(
    pytester: pytest.Pytester,
) -> None:
    # 1.34 has no DRADeviceTaintRules: rules work under DRADeviceTaints (harness.core.expectations).
    result = run_suite_file(pytester, RULE_MARKED_TESTS, "-rs")

    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines_random(
        [
            "*SKIPPED*needs feature gate DRADeviceTaints, off in 1.34/defaults",
            "*SKIPPED*needs feature gate DRADeviceTaintRules, off in 1.35/defaults",
        ]
    )
