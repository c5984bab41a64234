"""The verdict words, from one place: qualify (per capability and per run), the readiness
report (per check) and `matrix` (per cell) say the same word for the same outcome, and each
report prints the legend below. A product uses the subset that applies to it (the readiness
report has WARN and SKIP; qualify has the two NOT SUPPORTED words and NOTHING RAN).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from harness.reports.summary import TestRecord


class Word(enum.StrEnum):
    PASS = "PASS"
    FLAKY = "FLAKY"
    FAIL = "FAIL"
    WARN = "WARN"
    SKIP = "SKIP"
    NOT_SUPPORTED = "NOT SUPPORTED"
    CLUSTER_LACKS = "CLUSTER LACKS"
    NOT_TESTED = "NOT TESTED"
    NOTHING_RAN = "NOTHING RAN"
    ERROR = "ERROR"

    @property
    def css(self) -> str:
        """The word as an HTML class name (the reports' badges)."""
        return self.value.replace(" ", "-")


LEGEND: dict[Word, str] = {
    Word.PASS: "every test that ran passed on its first attempt; says how many of its tests ran",
    Word.FLAKY: "passed only on a rerun: the first attempt failed (its failure is the evidence)",
    Word.FAIL: "a test failed, in its setup, its body or its teardown (the message is the evidence)",
    Word.WARN: "works partly, or needs a change to the cluster (readiness only)",
    Word.SKIP: "not applicable to this cell (readiness only)",
    Word.NOT_SUPPORTED: "nothing ran: the driver or its fleet lacks what the tests need",
    Word.CLUSTER_LACKS: "nothing ran: the cluster lacks it (a feature gate, the Kubernetes version, an API)",
    Word.NOT_TESTED: "nothing ran, only because the tests need the harness's own cluster or driver",
    Word.NOTHING_RAN: "the whole run: not one test ran, so nothing was qualified",
    Word.ERROR: "the run could not start or did not complete",
}


def legend(words: Iterable[Word]) -> list[dict[str, str]]:
    """[{"word", "css", "meaning"}] for a report's legend, in the order given."""
    return [{"word": str(w), "css": w.css, "meaning": LEGEND[w]} for w in words]


def first_rerun(records: Iterable[TestRecord]) -> TestRecord | None:
    """The first record that passed only on a rerun: what makes a verdict FLAKY."""
    return next((r for r in records if r.flaky), None)


def cell_word(records: Iterable[TestRecord]) -> Word:
    """One run's (a matrix cell's) word from its records: FAIL over FLAKY over PASS; NOTHING
    RAN when not one test passed or failed."""
    tests = list(records)
    if any(r.outcome in ("failed", "errors") for r in tests):
        return Word.FAIL
    if not any(r.outcome == "passed" for r in tests):
        return Word.NOTHING_RAN
    return Word.FLAKY if first_rerun(tests) else Word.PASS
