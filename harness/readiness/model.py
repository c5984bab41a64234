"""The readiness report's model: per-cell check results, the changes between consecutive
minors (upgrades) and what needs attention, with their JSON form."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.errors import HarnessError
from harness.core.versions import minor_number, release_label
from harness.readiness.catalog import CHECKS
from harness.readiness.status import Check, CheckResult, Status
from harness.reports.summary import CellSummary, merge_totals, what_was_tested


class ReportError(HarnessError):
    """Report input that cannot be read (no summaries, malformed JSON)."""


@dataclass
class CellReport:
    id: str
    minor: str
    personality: str
    profile: str
    summary: CellSummary
    source: str
    results: list[CheckResult]
    exit_code: int | None = None
    state: str = ""

    @property
    def number(self) -> tuple[int, int]:
        return minor_number(self.minor)

    def status(self, check: str) -> CheckResult:
        return next(r for r in self.results if r.check == check)

    @property
    def tested(self) -> str:
        return what_was_tested(self.summary.cell)

    @property
    def counts(self) -> dict[str, int]:
        out = {str(s): 0 for s in Status}
        for r in self.results:
            out[str(r.status)] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "minor": self.minor,
            "personality": self.personality,
            "profile": self.profile,
            "provider": self.summary.cell.get("provider", ""),
            "driver": self.summary.cell.get("driver", ""),
            "tested": self.tested,
            "source": self.source,
            "exit_code": self.exit_code,
            "state": self.state,
            "wall_seconds": round(self.summary.wall_seconds, 1),
            "totals": self.summary.totals,
            "checks": [r.to_json() for r in self.results],
        }


@dataclass(frozen=True)
class Change:
    check: str
    title: str
    before: Status
    after: Status
    detail: str
    remediation: str
    before_ran: bool = True
    after_ran: bool = True

    @property
    def direction(self) -> str:
        if not (self.before_ran and self.after_ran):
            return "not compared"  # the check's tests ran on one side only
        if Status.SKIP in (self.before, self.after):
            return "changes"
        return "improves" if self.after < self.before else "regresses"


@dataclass(frozen=True)
class Upgrade:
    personality: str
    profile: str
    before: str
    after: str
    changes: list[Change]
    unchanged: int
    # upgrade.json of `dra-harness upgrade` for this pair: the step rehearsed in place
    rehearsal: dict[str, Any] | None = None

    @property
    def title(self) -> str:
        return f"from {self.before} to {self.after} with {self.personality} ({self.profile})"


@dataclass(frozen=True)
class Attention:
    """One thing to act on: a check that FAILs or WARNs in some cells, with one remediation."""

    check: str
    title: str
    status: Status
    cells: list[str]
    remediation: str
    detail: str


@dataclass
class Report:
    generated: str
    sources: list[str]
    cells: list[CellReport]
    upgrades: list[Upgrade]
    cost: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    checks: Sequence[Check] = CHECKS
    runs: list[dict[str, Any]] = field(default_factory=list)  # matrix.json of each run given

    @property
    def totals(self) -> dict[str, int]:
        return merge_totals(c.summary for c in self.cells)

    @property
    def tested(self) -> list[str]:
        """What the cells tested, each distinct line once (the header says it first)."""
        return list(dict.fromkeys(c.tested for c in self.cells))

    @property
    def kubernetes(self) -> list[str]:
        """Which Kubernetes builds the cells ran against, each once ("v1.38.0-beta.0, pre-release")."""
        # the build each cell's cluster ran (fixtures.artifacts.reporting: run_versions), else its cell's
        found = (c.summary.versions.get("kubernetes") or c.summary.cell.get("kubernetes") for c in self.cells)
        return list(dict.fromkeys(release_label(v) for v in found if v))

    @property
    def wall_seconds(self) -> float:
        return sum(c.summary.wall_seconds for c in self.cells)

    @property
    def status_counts(self) -> dict[str, int]:
        out = {str(s): 0 for s in Status}
        for c in self.cells:
            for k, v in c.counts.items():
                out[k] += v
        return out

    @property
    def attention(self) -> list[Attention]:
        """FAIL and WARN results grouped by check and remediation, worst first."""
        groups: dict[tuple[str, str], list[tuple[CellReport, CheckResult]]] = {}
        for c in self.cells:
            for res in c.results:
                if res.status >= Status.WARN:
                    groups.setdefault((res.check, res.remediation), []).append((c, res))
        items = [
            Attention(
                check,
                hits[0][1].title,
                max(res.status for _, res in hits),
                [c.id for c, _ in hits],
                remediation,
                hits[0][1].detail,
            )
            for (check, remediation), hits in groups.items()
        ]
        order = {c.id: i for i, c in enumerate(self.checks)}
        return sorted(items, key=lambda a: (-a.status, order.get(a.check, 0)))

    def to_json(self) -> dict[str, Any]:
        return {
            "generated": self.generated,
            "tested": self.tested,
            "kubernetes": self.kubernetes,
            "sources": self.sources,
            "totals": self.totals,
            "status_counts": self.status_counts,
            "checks": [
                {"id": c.id, "title": c.title, "area": c.area, "tests": list(c.tests)} for c in self.checks
            ],
            "cells": [c.to_json() for c in self.cells],
            "attention": [
                {
                    "check": a.check,
                    "title": a.title,
                    "status": str(a.status),
                    "cells": a.cells,
                    "remediation": a.remediation,
                    "detail": a.detail,
                }
                for a in self.attention
            ],
            "heatmap": {c.id: {r.check: str(r.status) for r in c.results} for c in self.cells},
            "upgrades": [
                {
                    "personality": u.personality,
                    "profile": u.profile,
                    "from": u.before,
                    "to": u.after,
                    "unchanged": u.unchanged,
                    "rehearsal": u.rehearsal,
                    "changes": [
                        {
                            "check": ch.check,
                            "title": ch.title,
                            "before": str(ch.before),
                            "after": str(ch.after),
                            "direction": ch.direction,
                            "before_ran": ch.before_ran,
                            "after_ran": ch.after_ran,
                            "detail": ch.detail,
                            "remediation": ch.remediation,
                        }
                        for ch in u.changes
                    ],
                }
                for u in self.upgrades
            ],
            "cost": self.cost,
            "runs": self.runs,
            "notes": self.notes,
        }


def upgrades(cells: Sequence[CellReport]) -> list[Upgrade]:
    """Between consecutive minors present for the same personality and gate profile."""
    out: list[Upgrade] = []
    groups: dict[tuple[str, str], list[CellReport]] = {}
    for c in cells:
        groups.setdefault((c.personality, c.profile), []).append(c)
    for (personality, profile), group in sorted(groups.items()):
        group.sort(key=lambda c: c.number)
        for before, after in itertools.pairwise(group):
            changes = []
            for a in after.results:
                b = before.status(a.check)
                if a.status != b.status:
                    # What to do is the new cell's remediation; nothing when it got better.
                    fix = a.remediation if a.status >= Status.WARN else ""
                    changes.append(Change(a.check, a.title, b.status, a.status, a.detail, fix, b.ran, a.ran))
            out.append(
                Upgrade(
                    personality,
                    profile,
                    before.minor,
                    after.minor,
                    changes,
                    len(after.results) - len(changes),
                )
            )
    return out


def with_rehearsals(ups: list[Upgrade], rehearsals: Sequence[dict[str, Any]]) -> list[Upgrade]:
    """Each rehearsal (upgrade.json) joins the upgrade of its pair, personality and profile; a
    rehearsed pair without two cells to compare gets an upgrade of its own, after the rest."""
    out = list(ups)
    for r in rehearsals:
        key = (r["personality"], r["profile"], r["before"], r["after"])
        i = next((i for i, u in enumerate(out) if (u.personality, u.profile, u.before, u.after) == key), None)
        if i is None:
            out.append(Upgrade(*key, [], 0, r))
        else:
            out[i] = dataclasses.replace(out[i], rehearsal=r)
    return out
