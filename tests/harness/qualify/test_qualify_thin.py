"""A PASS resting on fewer distinct checks than its capability declares says so (issue 50,
item 2): partitions, prioritized-list, cel-selectors and consumable-capacity each declare at
least 2 test functions (a parametrized test's cases count once); fewer passed is "thin" in the
headline qualify prints and both reports carry."""

from __future__ import annotations

import json
from pathlib import Path

from harness.core.requirements import Kind, Reason
from harness.qualify.capabilities import CAPABILITIES, Capability, Verdict, decide
from harness.qualify.preflight import ClusterFacts
from harness.qualify.report import Qualification, write_report
from harness.reports.summary import TestRecord

BY_ID = {c.id: c for c in CAPABILITIES}
MIG = Reason(Kind.FLEET, device_class="c", need="MIG devices", text="2 plain GPUs")
PUBLISHED = "suites/driver/test_published_devices.py::"
STATIC = "suites/mig/test_static_mig.py::"
TOTALS = {"passed": 1, "failed": 0, "skipped": 2, "errors": 0}


def _t(nodeid: str, outcome: str, *reasons: Reason) -> TestRecord:
    return TestRecord(nodeid, "gang", outcome, 1.0, "", list(reasons), "")


def _partition_on_a_fleet_without_mig() -> list[TestRecord]:
    return [
        _t(PUBLISHED + "test_a_partition_device_is_allocated_on_its_node", "passed"),
        _t(STATIC + "test_profile_selector_gets_exactly_that_profile", "skipped", MIG),
        _t(STATIC + "test_match_attribute_parent_uuid_keeps_two_mig_devices_on_one_gpu", "skipped", MIG),
    ]


def test_the_declared_minimums() -> None:
    assert {c.id: c.minimum for c in CAPABILITIES} == {
        "bridging": 1,
        "mixed-pools": 1,
        "partitions": 2,
        "prioritized-list": 2,
        "cel-selectors": 2,
        "consumable-capacity": 2,
        "gang": 1,
        "failure-modes": 1,
        "node-side": 1,
        "device-health": 1,
    }


def test_a_pass_on_one_check_of_a_capability_declaring_two_is_thin() -> None:
    result = decide(BY_ID["partitions"], _partition_on_a_fleet_without_mig())
    assert (result.verdict, result.headline) == (
        Verdict.PASS,
        "PASS, 1 of 3 ran; 2 skipped: needs MIG devices of class c; the fleet has 2 plain GPUs; "
        "thin: rests on 1 distinct check, declares at least 2",
    )
    selector = decide(BY_ID["cel-selectors"], [_t(PUBLISHED + "test_selector_on_a_unique_x", "passed")])
    assert selector.headline == "PASS, 1 of 1 ran; thin: rests on 1 distinct check, declares at least 2"


def test_a_parametrized_tests_cases_are_one_check() -> None:
    cases = [
        _t(f"suites/shared_devices/test_consumable_capacity.py::test_two_pods[{i}]", "passed") for i in "ab"
    ]
    result = decide(BY_ID["consumable-capacity"], cases)
    assert result.headline == "PASS, 2 of 2 ran; thin: rests on 1 distinct check, declares at least 2"


def test_two_distinct_checks_meet_the_minimum() -> None:
    tests = [
        _t("suites/mig/test_prioritized_list.py::test_first_available_prefers_3g", "passed"),
        _t(PUBLISHED + "test_prioritized_list_falls_back", "passed"),
        _t("suites/mig/test_prioritized_scoring.py::test_the_scheduler_prefers", "skipped", MIG),
    ]
    result = decide(BY_ID["prioritized-list"], tests)
    assert result.headline == (
        "PASS, 2 of 3 ran; 1 skipped: needs MIG devices of class c; the fleet has 2 plain GPUs"
    )


def test_a_capability_without_a_declared_minimum_is_never_thin() -> None:
    gang = decide(BY_ID["gang"], [_t("suites/gang/test_gang.py::test_a", "passed")])
    assert gang.headline == "PASS, 1 of 1 ran"


def test_the_reports_say_thin(tmp_path: Path) -> None:
    result = decide(BY_ID["partitions"], _partition_on_a_fleet_without_mig())
    q = Qualification("d", "c", "r", "qualify", ClusterFacts(), [result], totals=TOTALS)
    write_report(q, tmp_path)
    [cap] = json.loads((tmp_path / "qualify.json").read_text())["capabilities"]
    assert (cap["headline"], cap["minimum"]) == (result.headline, 2)
    assert f"| {result.headline} |" in (tmp_path / "qualify.md").read_text()
    assert "thin: rests on 1 distinct check, declares at least 2" in (tmp_path / "qualify.html").read_text()


def test_a_capability_can_declare_its_own_minimum() -> None:
    three = Capability("x", "x", ("suites/x/*",), minimum=3)
    tests = [_t(f"suites/x/test_x.py::test_{i}", "passed") for i in "ab"]
    assert decide(three, tests).headline == (
        "PASS, 2 of 2 ran; thin: rests on 2 distinct checks, declares at least 3"
    )
