"""Per capability a vendor driver is qualified on: which tests decide it, and the verdict
from their outcomes (summary.json), decided on outcomes and structured skip reasons, never
on wording. The words are harness.reports.verdicts' (shared with readiness and matrix).

    FAIL           a test failed in its setup, body or teardown (its message is the evidence)
    FLAKY          none failed, but one passed only on a rerun (its first failure is the evidence)
    PASS           at least one test ran and passed, none failed; its headline says how many
                   of its tests ran and why the others did not ("PASS, 4 of 6 ran; 2 skipped: ..."),
                   and when it rests on fewer distinct checks (test functions, parameters
                   folded) than the capability's minimum, that it is thin
    NOT SUPPORTED  nothing ran, because the driver or its fleet lacks what the tests need
    CLUSTER LACKS  nothing ran, because the cluster lacks it: a feature gate, the version, an API
    NOT TESTED     nothing ran, only because the tests need the fake driver's own fleet or a
                   provider feature here; says nothing about the driver
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from harness.core.requirements import Kind
from harness.reports.summary import CellSummary, TestRecord
from harness.reports.verdicts import Word, first_rerun

Verdict = Word  # qualify's name for the shared words
# What a capability can be, in the legend's order.
CAPABILITY_WORDS = (
    Word.PASS,
    Word.FLAKY,
    Word.FAIL,
    Word.NOT_SUPPORTED,
    Word.CLUSTER_LACKS,
    Word.NOT_TESTED,
)


@dataclass(frozen=True)
class Capability:
    id: str
    title: str
    tests: tuple[str, ...]  # nodeid patterns (fnmatch)
    # Distinct checks (test functions) a PASS should rest on; fewer passed says "thin".
    minimum: int = 1


CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        "bridging",
        "Extended-resource bridging: unchanged nvidia.com/gpu pods get devices of the class",
        (
            "suites/bridging/test_extended_resource.py::*",
            "suites/bridging/test_bridging_lifecycle.py::*",
            "suites/bridging/test_several_resources.py::*",
            # a node the device plugin left: bridged pods reach it (from 1.35)
            "suites/bridging/test_device_plugin_leftover.py::*",
        ),
    ),
    Capability(
        "mixed-pools",
        "Legacy and claim pods share the driver's nodes",
        ("suites/bridging/test_mixed_pools.py::*",),
    ),
    Capability(
        "partitions",
        "MIG / partitionable devices (static and shared-counter)",
        (
            "suites/mig/test_static_mig.py::*",
            "suites/mig/test_dynamic_mig.py::*",
            "suites/driver/test_published_devices.py::test_a_partition*",
            # a parent and its partitions exclude each other; counters fill; the container's view
            "suites/driver/test_partitions.py::*",
        ),
        # one alone (test_a_partition_device_...) passed on a fleet with no MIG at all (issue 50)
        minimum=2,
    ),
    Capability(
        "prioritized-list",
        "Prioritized list (firstAvailable) requests",
        (
            "suites/mig/test_prioritized_list.py::*",
            "suites/mig/test_prioritized_scoring.py::*",
            "suites/driver/test_published_devices.py::test_prioritized*",
        ),
        minimum=2,
    ),
    Capability(
        "cel-selectors",
        "CEL selectors on the driver's attributes",
        ("suites/mig/test_selectors.py::*", "suites/driver/test_published_devices.py::test_selector*"),
        minimum=2,
    ),
    Capability(
        "consumable-capacity",
        "Consumable capacity (shared devices)",
        ("suites/shared_devices/*", "suites/driver/test_published_devices.py::test_a_shared*"),
        minimum=2,
    ),
    Capability("gang", "Gang scheduling with the driver's devices", ("suites/gang/*",)),
    Capability("failure-modes", "Failure-mode detectors name staged problems", ("suites/failure_modes/*",)),
    Capability("node-side", "Node-side: kubelet prepares claims (real kubelets only)", ("suites/node/*",)),
    Capability(
        "device-health",
        "Device health: a device made sick (--inject-fault-command) is tainted NoSchedule/NoExecute "
        "or withdrawn, and the scheduler keeps new claims off it",
        ("suites/device_health/test_any_driver.py::*",),
    ),
)

# Tests qualify runs that decide no capability: what they check is the cluster's, not the
# driver's. Every other suite test qualify runs belongs to exactly one capability
# (tests/harness/qualify/test_qualify.py collects the suites and holds both lists to that).
ABOUT_THE_CLUSTER: dict[str, str] = {
    "suites/bridging/test_extended_resource_name.py::*": (
        "the API server's validation of a DeviceClass's extendedResourceName; no driver is involved"
    ),
    # It passes exactly where a driver's class does not bridge: counted toward bridging it made
    # dra-example-driver v0.2.1 (no extendedResourceName) PASS.
    "suites/bridging/test_bridge_unavailable.py::*": (
        "what the scheduler does where there is no bridge (unchanged pods wait, never get devices "
        "silently): the cluster's behaviour, not the driver's bridging"
    ),
}


def undecided(nodeids: list[str], suites: tuple[str, ...]) -> list[str]:
    """Tests under `suites` that decide no capability and are not declared the cluster's."""
    declared = [*ABOUT_THE_CLUSTER, *(p for cap in CAPABILITIES for p in cap.tests)]
    return [
        n
        for n in nodeids
        if any(n.startswith((s.rstrip("/") + "/", s + "::")) for s in suites)  # a directory or a file
        and not any(fnmatch.fnmatch(n, p) for p in declared)
    ]


def deciding(nodeid: str) -> list[str]:
    """The capabilities a test counts toward (one, or none for ABOUT_THE_CLUSTER's)."""
    return [cap.id for cap in CAPABILITIES if any(fnmatch.fnmatch(nodeid, p) for p in cap.tests)]


# Skips that say the driver (or its fleet) lacks something, and those that say the cluster does.
_DRIVER_LACKS = {Kind.FLEET, Kind.DRIVER_CAPABILITY}
_CLUSTER_LACKS = {Kind.FEATURE_GATE, Kind.VERSION, Kind.API}


@dataclass
class CapabilityResult:
    capability: Capability
    verdict: Verdict
    evidence: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    headline: str = ""  # the verdict with how many ran ("PASS, 4 of 6 ran; 2 skipped: ...")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.capability.id,
            "title": self.capability.title,
            "verdict": str(self.verdict),
            "headline": self.headline or str(self.verdict),
            "evidence": self.evidence,
            "counts": self.counts,
            "minimum": self.capability.minimum,
        }


def _covers(cap: Capability, t: TestRecord) -> bool:
    return any(fnmatch.fnmatch(t.nodeid, p) for p in cap.tests)


def _why(t: TestRecord) -> str:
    return "; ".join(r.message() for r in t.reasons) or t.message


def _skip_line(t: TestRecord) -> str:
    return f"{t.nodeid.rsplit('::', 1)[-1]}: {_why(t)}"


def distinct_checks(passed: list[TestRecord]) -> int:
    """Test functions among `passed`: a parametrized test's cases are one check."""
    return len({t.nodeid.split("[", 1)[0] for t in passed})


def thin(cap: Capability, passed: list[TestRecord]) -> str:
    """ "" or the headline's note that a PASS rests on fewer distinct checks than declared."""
    n = distinct_checks(passed)
    if n >= cap.minimum:
        return ""
    return f"thin: rests on {n} distinct check{'s' if n != 1 else ''}, declares at least {cap.minimum}"


def _ran_headline(word: Verdict, mine: list[TestRecord], skipped: list[TestRecord], note: str = "") -> str:
    parts = [f"{word}, {len(mine) - len(skipped)} of {len(mine)} ran"]
    if skipped:
        parts.append(f"{len(skipped)} skipped: {'; '.join(dict.fromkeys(_why(t) for t in skipped))}")
    return "; ".join([*parts, note] if note else parts)


def decide(cap: Capability, tests: list[TestRecord]) -> CapabilityResult:
    mine = [t for t in tests if _covers(cap, t)]
    counts = {o: sum(t.outcome == o for t in mine) for o in ("passed", "failed", "skipped", "errors")}
    failed = [t for t in mine if t.outcome in ("failed", "errors")]
    passed = [t for t in mine if t.outcome == "passed"]
    skipped = [t for t in mine if t.outcome == "skipped"]
    if failed:
        evidence = [f"{t.nodeid}: {t.message}" for t in failed]
        return CapabilityResult(
            cap, Verdict.FAIL, evidence, counts, f"FAIL, {len(failed)} of {len(mine)} failed"
        )
    if passed:
        evidence = [
            f"passed: {t.nodeid.rsplit('::', 1)[-1]}" + (f": {t.message}" if t.message else "")
            for t in passed
        ]
        evidence += [f"skipped {_skip_line(t)}" for t in skipped]
        flaky = first_rerun(passed)
        if flaky is not None:  # never a plain pass: the first attempt failed, and will again
            first = f"{flaky.nodeid}: passed only on its rerun; first attempt: {flaky.rerun}"
            headline = f"FLAKY, {sum(t.flaky for t in passed)} of {len(mine)} passed only on a rerun"
            return CapabilityResult(cap, Verdict.FLAKY, [first, *evidence], counts, headline)
        headline = _ran_headline(Verdict.PASS, mine, skipped, thin(cap, passed))
        return CapabilityResult(cap, Verdict.PASS, evidence, counts, headline)
    return _nothing_ran(cap, skipped, counts)


def _nothing_ran(cap: Capability, skipped: list[TestRecord], counts: dict[str, int]) -> CapabilityResult:
    """The driver lacking it is said first: its fleet's reasons are certain, whatever the gates."""
    for word, kinds_ in ((Verdict.NOT_SUPPORTED, _DRIVER_LACKS), (Verdict.CLUSTER_LACKS, _CLUSTER_LACKS)):
        # required=False: a test for cells *without* the gate or capability; nothing lacks it
        lacking = [t for t in skipped if any(r.kind in kinds_ and r.required for r in t.reasons)]
        if lacking:
            return CapabilityResult(cap, word, [_skip_line(t) for t in lacking], counts, str(word))
    evidence = [_skip_line(t) for t in skipped] or ["no test of this capability was run"]
    return CapabilityResult(cap, Verdict.NOT_TESTED, evidence, counts, str(Verdict.NOT_TESTED))


def decide_all(summary: CellSummary) -> list[CapabilityResult]:
    return [decide(cap, summary.tests) for cap in CAPABILITIES]
