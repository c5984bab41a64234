"""The readiness report: cell summaries (summary.json from one matrix run, or merged from many
CI runners) -> per-cell check tables, a heat-map (cells x checks), the upgrade view between
consecutive minors, and the scale benchmark's cost comparison when present.

Written as readiness.html (one self-contained file: inline CSS, no scripts, no external URLs),
readiness.md and readiness.json, from the jinja2 templates in reports/templates/.

Scale benchmark input (reports/out/bench/scale.json, optional):
    {"title": str?, "generated": str?,
     "rows": [{"cell": "1.37/nvidia-v25.12/dra-all", "scenario": "device plugin" | ...,
               "nodes": int, "pods": int, "metrics": {"<name> (<unit>)": number, ...}}]}
"""

from __future__ import annotations

import datetime
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from harness.errors import HarnessError
from harness.readiness.checks import CHECKS, Check, CheckResult, Status, evaluate_cell, uncovered
from harness.reporting import CellSummary, merge_totals, read_summary
from harness.versions import REPO_ROOT

TEMPLATES = REPO_ROOT / "reports" / "templates"
DEFAULT_BENCH = REPO_ROOT / "reports" / "out" / "bench" / "scale.json"


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
        major, minor = self.minor.split(".")
        return int(major), int(minor)

    def status(self, check: str) -> CheckResult:
        return next(r for r in self.results if r.check == check)

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

    @property
    def totals(self) -> dict[str, int]:
        return merge_totals(c.summary for c in self.cells)

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
            "notes": self.notes,
        }


# ---- input ---------------------------------------------------------------------------------


def _matrix_json(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Exit codes and states per cell id from a matrix.json next to the cells, if any."""
    path = run_dir / "matrix.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
        return {c["id"]: c for c in data["cells"]}
    except (ValueError, KeyError, TypeError) as err:
        raise ReportError(f"{path} is not a matrix.json: {err}") from None


def find_summaries(dirs: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    for d in dirs:
        if not d.exists():
            raise ReportError(f"{d} does not exist")
        if d.is_file():
            hits = [d] if d.name == "summary.json" else []
        elif (d / "summary.json").is_file():
            hits = [d / "summary.json"]
        else:
            hits = sorted(p for p in d.rglob("summary.json") if "allure-results" not in p.parts)
        if not hits:
            raise ReportError(f"no summary.json under {d}: not a cell or matrix run directory")
        found.extend(h for h in hits if h not in found)
    return found


def load_cells(dirs: Sequence[Path]) -> tuple[list[CellReport], list[str]]:
    cells: dict[str, CellReport] = {}
    notes: list[str] = []
    for path in find_summaries(dirs):
        try:
            summary = read_summary(path)
            c = summary.cell
            cid = f"{c['minor']}/{c['personality']}/{c['profile']}"
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ReportError(f"{path} is not a summary.json: {type(err).__name__}: {err}") from None
        meta: dict[str, Any] = {}
        for parent in path.parents[:3]:
            meta = _matrix_json(parent).get(cid, {})
            if meta:
                break
        if cid in cells:
            notes.append(f"cell {cid} appears twice: {path.parent} replaces {cells[cid].source}")
        cells[cid] = CellReport(
            cid,
            c["minor"],
            c["personality"],
            c["profile"],
            summary,
            str(path.parent),
            evaluate_cell(summary.tests),
            meta.get("exit_code"),
            meta.get("state", ""),
        )
        missing = uncovered(summary.tests)
        if missing:
            notes.append(f"{cid}: {len(missing)} test(s) belong to no check, e.g. {missing[0]}")
    for d in dirs:
        for cid, meta in _matrix_json(d).items() if d.is_dir() else ():
            if cid not in cells:
                why = f"{meta.get('state', '?')}, exit {meta.get('exit_code')}"
                note = f": {meta['note']}" if meta.get("note") else ""
                notes.append(f"cell {cid} wrote no summary.json ({why}){note}")
    ordered = sorted(cells.values(), key=lambda c: (-c.number[1], c.personality, c.profile))
    return ordered, notes


def load_cost(path: Path | None, explicit: bool) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        if explicit and path is not None:
            raise ReportError(f"benchmark file {path} does not exist")
        return None
    try:
        data = json.loads(path.read_text())
        rows = data["rows"]
        if not isinstance(rows, list):
            raise TypeError("rows must be a list")
        metrics: list[str] = []
        clean = []
        for row in rows:
            values = {str(k): float(v) for k, v in (row.get("metrics") or {}).items()}
            metrics.extend(k for k in values if k not in metrics)
            clean.append(
                {
                    "cell": str(row.get("cell", "")),
                    "scenario": str(row["scenario"]),
                    "nodes": int(row.get("nodes", 0)),
                    "pods": int(row.get("pods", 0)),
                    "metrics": values,
                }
            )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ReportError(f"{path} is not a scale benchmark JSON: {type(err).__name__}: {err}") from None
    return {
        "title": str(data.get("title", "Scale benchmark")),
        "generated": str(data.get("generated", "")),
        "source": str(path),
        "metrics": metrics,
        "rows": clean,
    }


# ---- comparison ----------------------------------------------------------------------------


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


def build_report(
    dirs: Sequence[Path], bench: Path | None = None, *, now: datetime.datetime | None = None
) -> Report:
    cells, notes = load_cells(dirs)
    cost = load_cost(bench if bench is not None else DEFAULT_BENCH, explicit=bench is not None)
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return Report(stamp, [str(d) for d in dirs], cells, upgrades(cells), cost, notes)


# ---- output --------------------------------------------------------------------------------


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    return env


def render(report: Report) -> dict[str, str]:
    env = _env()
    context = {"r": report, "Status": Status}
    return {
        "readiness.html": env.get_template("readiness.html.j2").render(context),
        "readiness.md": env.get_template("readiness.md.j2").render(context),
        "readiness.json": json.dumps(report.to_json(), indent=2) + "\n",
    }


def write_report(dirs: Sequence[Path], out: Path, bench: Path | None = None) -> list[Path]:
    report = build_report(dirs, bench)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render(report).items():
        path = out / name
        path.write_text(text)
        written.append(path)
    return written
