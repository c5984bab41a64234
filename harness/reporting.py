"""Per-cell report files that are not pytest's own: summary.json, and the allure side files
(environment.properties, categories.json). Plain functions, so the matrix runner and the
readiness report read and write the same shapes.

summary.json (one per cell run):
    {"cell": {"provider", "minor", "kubernetes", "profile", "driver", "personality"},
     "totals": {"passed", "failed", "skipped", "errors"},
     "wall_seconds": float,
     "tests": [{"nodeid", "area", "outcome", "duration", "message"}]}
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.redaction import redact_obj

OUTCOMES = ("passed", "failed", "skipped", "errors")

# Which failures are whose: allure sorts failed tests by the first category that matches.
CATEGORIES: list[dict[str, Any]] = [
    {
        "name": "infrastructure",
        "matchedStatuses": ["broken", "failed"],
        "messageRegex": r".*(ComponentFailed|exited early|cluster:|Connection refused|MaxRetryError"
        r"|HarnessError).*",
    },
    {
        "name": "driver",
        "matchedStatuses": ["broken", "failed"],
        "messageRegex": r".*(PublishError|InstallRefusedError|fake_driver|ApiError).*",
    },
    {
        "name": "kubernetes",
        "matchedStatuses": ["failed"],
        "messageRegex": r".*(timed out after|expected .* for|assert).*",
    },
    {"name": "harness", "matchedStatuses": ["broken"]},
]


@dataclass
class TestRecord:
    __test__ = False  # a record of a test, not a test class for pytest to collect

    nodeid: str
    area: str
    outcome: str  # passed | failed | skipped | errors
    duration: float
    message: str = ""


@dataclass
class CellSummary:
    cell: dict[str, str]
    tests: list[TestRecord] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def totals(self) -> dict[str, int]:
        counts = dict.fromkeys(OUTCOMES, 0)
        for t in self.tests:
            counts[t.outcome] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "totals": self.totals,
            "wall_seconds": round(self.wall_seconds, 1),
            "tests": [asdict(t) for t in self.tests],
        }


def area_of(nodeid: str) -> str:
    """suites/<area>/... -> area; the harness's own tests are "harness"."""
    parts = nodeid.split("/")
    return parts[1] if parts[0] == "suites" and len(parts) > 2 else "harness"


def read_summary(path: Path) -> CellSummary:
    data = json.loads(path.read_text())
    return CellSummary(data["cell"], [TestRecord(**t) for t in data["tests"]], data.get("wall_seconds", 0.0))


def write_summary(path: Path, summary: CellSummary) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(redact_obj(summary.to_json()), indent=2))


def environment_properties(values: Mapping[str, str]) -> str:
    """Allure's environment.properties: key=value lines, with the separators escaped."""

    def esc(text: str) -> str:
        return re.sub(r"([=:\\])", r"\\\1", text)

    return "".join(f"{esc(k)}={esc(v)}\n" for k, v in sorted(values.items()))


def write_allure_extras(alluredir: Path, environment: Mapping[str, str]) -> None:
    alluredir.mkdir(parents=True, exist_ok=True)
    (alluredir / "environment.properties").write_text(environment_properties(redact_obj(dict(environment))))
    (alluredir / "categories.json").write_text(json.dumps(CATEGORIES, indent=2))


def merge_totals(summaries: Iterable[CellSummary]) -> dict[str, int]:
    total = dict.fromkeys(OUTCOMES, 0)
    for s in summaries:
        for k, v in s.totals.items():
            total[k] += v
    return total
