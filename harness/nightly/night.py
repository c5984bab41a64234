"""One night's merged result: per cell, per test, the outcome, duration and message — what two
nights are compared on. Written as night.json next to the readiness report, so the next
night's `report --merge ... --baseline` reads it back:

    {"format": "dra-harness-night", "version": 1,
     "cells": [{"id": "1.37/nvidia-v25.12/dra-all", "source": str, "provider": str,
                "commit": str, "versions": {name: version},
                "tests": [{"nodeid": str, "outcome": "passed" | "failed" | "skipped" | "errors",
                           "duration": float | null, "message": str}]}]}

A test's message is its failure message, or for a skipped test why it did not run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.core.errors import HarnessError
from harness.reports.summary import OUTCOMES, CellSummary

FORMAT = "dra-harness-night"
VERSION = 1
FAILING = frozenset({"failed", "errors"})


class NightError(HarnessError):
    """A night that cannot be compared: a missing input, or two artifacts claiming one cell."""


@dataclass(frozen=True)
class TestRun:
    __test__ = False  # a record of a test, not a test class for pytest to collect

    outcome: str  # one of harness.reports.summary.OUTCOMES
    duration: float | None  # None: the file did not say
    message: str = ""
    rerun: str = ""  # an earlier attempt's failure (--reruns): passed with one is flaky

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING

    @property
    def flaky(self) -> bool:
        return self.outcome == "passed" and bool(self.rerun)

    @property
    def shown(self) -> str:
        """The outcome as a report shows it: a pass on a rerun is "flaky", never "passed"."""
        return "flaky" if self.flaky else self.outcome

    def to_json(self, nodeid: str) -> dict[str, Any]:
        out = {"nodeid": nodeid, "outcome": self.outcome, "duration": self.duration, "message": self.message}
        return out | ({"rerun": self.rerun} if self.rerun else {})


@dataclass
class CellNight:
    id: str
    source: str  # the file it was read from
    # None: the source holds no per-test results (a readiness.json of before night.json)
    tests: dict[str, TestRun] | None
    provider: str = ""
    commit: str = ""
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def totals(self) -> dict[str, int]:
        counts = dict.fromkeys(OUTCOMES, 0)
        for t in (self.tests or {}).values():
            counts[t.outcome] = counts.get(t.outcome, 0) + 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "provider": self.provider,
            "commit": self.commit,
            "versions": self.versions,
            "tests": [t.to_json(nodeid) for nodeid, t in (self.tests or {}).items()],
        }


@dataclass
class Night:
    cells: dict[str, CellNight] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what could not be read, and why

    def add(self, cell: CellNight) -> None:
        """Two artifacts claiming one cell make the night ambiguous: NightError naming both."""
        other = self.cells.get(cell.id)
        if other is not None:
            raise NightError(f"cell {cell.id} is claimed twice: by {other.source} and by {cell.source}")
        self.cells[cell.id] = cell

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "cells": [c.to_json() for c in self.cells.values()],
            "notes": self.notes,
        }


def cell_id(cell: dict[str, str]) -> str:
    return f"{cell['minor']}/{cell['personality']}/{cell['profile']}"


def from_summary(summary: CellSummary, source: str) -> CellNight:
    """A cell's summary.json as read by harness.reports.summary.read_summary. A test recorded twice
    (a rerun) keeps its last outcome."""
    tests = {t.nodeid: TestRun(t.outcome, t.duration, t.message, t.rerun) for t in summary.tests}
    return CellNight(
        cell_id(summary.cell),
        source,
        tests,
        summary.cell.get("provider", ""),
        summary.commit,
        dict(summary.versions),
    )
