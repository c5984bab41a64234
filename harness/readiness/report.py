"""The readiness report: cell summaries (summary.json from one matrix run, or merged from many
CI runners) -> per-cell check tables, a heat-map (cells x checks), the upgrade view between
consecutive minors, and the scale benchmark's cost comparison when present.

Written as readiness.html (one self-contained file: inline CSS, no scripts, no external URLs),
readiness.md and readiness.json, from the jinja2 templates in reports/templates/.

Scale benchmark input (optional): every reports/out/bench/scale*.json, or --bench FILE, in
bench/scale.py's format (scale-<minor>.json: {kubernetes, nodes, pods, modes: {plain|legacy|
bridged|claims: {median, cv_percent, ratio_to_legacy}}}) or this plain one:
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

from harness.costs import DEFAULT_BENCH_DIR, MODE_DESCRIPTIONS, read_scale
from harness.errors import HarnessError
from harness.readiness.checks import (
    CHECKS,
    Check,
    CheckResult,
    Status,
    evaluate_cell,
    fallback_checks,
    uncovered,
)
from harness.redaction import redact_obj
from harness.reporting import CellSummary, merge_totals, read_summary
from harness.versions import REPO_ROOT

TEMPLATES = REPO_ROOT / "reports" / "templates"


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
    runs: list[dict[str, Any]] = field(default_factory=list)  # matrix.json of each run given

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
            "runs": self.runs,
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


def _run_info(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "matrix.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
        return {
            "run_id": str(data.get("run_id", run_dir.name)),
            "wall_seconds": float(data.get("wall_seconds", 0.0)),
            "cells": len(data.get("cells", [])),
        }
    except (ValueError, TypeError, AttributeError) as err:
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


def load_cells(dirs: Sequence[Path]) -> tuple[list[CellReport], list[str], list[Check]]:
    cells: dict[str, CellReport] = {}
    notes: list[str] = []
    for path in find_summaries(dirs):
        summary = read_summary(path)  # one line naming the file and the field, if malformed
        c = summary.cell
        cid = f"{c['minor']}/{c['personality']}/{c['profile']}"
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
            [],
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
    ordered = sorted(cells.values(), key=lambda x: (-x.number[1], x.personality, x.profile))
    checks = [*CHECKS, *fallback_checks(t for x in ordered for t in x.summary.tests)]
    for report in ordered:
        report.results = evaluate_cell(report.summary.tests, checks)
    return ordered, notes, checks


# median key -> column, scale; ratio_to_legacy key -> column.
SCALE_METRICS = (
    ("avg_pods_per_s", "pods/s", 1.0),
    ("p50", "pods/s p50 (1s windows)", 1.0),
    ("api_objects_per_pod", "API objects/pod", 1.0),
    ("api_writes_per_pod", "API writes/pod", 1.0),
    ("etcd_growth_bytes", "etcd growth (MB)", 1e-6),
    ("scheduler_cpu_s", "scheduler CPU (s)", 1.0),
    ("peak_pending_pods", "peak pending pods", 1.0),
    ("claims_created", "claims created", 1.0),
)
SCALE_RATIOS = (
    ("avg_pods_per_s", "pods/s vs legacy (x)"),
    ("scheduler_cpu_s", "scheduler CPU vs legacy (x)"),
    ("etcd_growth_bytes", "etcd growth vs legacy (x)"),
)


def _scale_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """bench/scale.py's scale-<minor>.json: {kubernetes, nodes, pods, modes: {mode: {median,
    cv_percent, ratio_to_legacy}}} -> cost rows, one per mode."""
    rows = []
    for mode, entry in data["modes"].items():
        median, ratio = entry["median"], entry.get("ratio_to_legacy") or {}
        metrics = {col: round(float(median[k]) * scale, 3) for k, col, scale in SCALE_METRICS if k in median}
        metrics.update({col: float(ratio[k]) for k, col in SCALE_RATIOS if k in ratio})
        pooled = entry.get("pooled_windows") or {}
        for q in ("p50", "p99"):  # over every repetition's seconds: percentiles need the length
            if q in pooled:
                metrics[f"pods/s {q} (1s windows)"] = float(pooled[q])
        if "best_pods_per_s" in entry:  # the fastest repetition: noise only slows one down
            metrics["pods/s best of reps"] = float(entry["best_pods_per_s"])
        if entry.get("best_ratio_to_legacy") is not None:
            metrics["best pods/s vs legacy (x)"] = float(entry["best_ratio_to_legacy"])
        cv = (entry.get("cv_percent") or {}).get("avg_pods_per_s")
        if cv is not None:
            metrics["pods/s CV (%)"] = float(cv)
        ratio_cv = (entry.get("ratio_cv_percent_to_legacy") or {}).get("avg_pods_per_s")
        if ratio_cv is not None:
            metrics["pods/s vs legacy CV (%)"] = float(ratio_cv)
        rows.append(
            {
                "cell": str(data["kubernetes"]),
                "scenario": f"{mode}: {MODE_DESCRIPTIONS.get(mode, mode)}",
                "nodes": int(data.get("nodes", 0)),
                "pods": int(data.get("pods", 0)),
                "metrics": metrics,
            }
        )
    return rows


def _plain_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    rows = data["rows"]
    if not isinstance(rows, list):
        raise TypeError("rows must be a list")
    return [
        {
            "cell": str(row.get("cell", "")),
            "scenario": str(row["scenario"]),
            "nodes": int(row.get("nodes", 0)),
            "pods": int(row.get("pods", 0)),
            "metrics": {str(k): float(v) for k, v in (row.get("metrics") or {}).items()},
        }
        for row in rows
    ]


def bench_files(bench: Path | None) -> list[Path]:
    """--bench FILE, or every reports/out/bench/scale*.json there is."""
    if bench is not None:
        if not bench.is_file():
            raise ReportError(f"benchmark file {bench} does not exist")
        return [bench]
    return sorted(DEFAULT_BENCH_DIR.glob("scale*.json")) if DEFAULT_BENCH_DIR.is_dir() else []


def load_cost(paths: Sequence[Path]) -> dict[str, Any] | None:
    """The cost section from scale benchmark files (bench/scale.py's format, or the plain
    {"rows": [...]} format in this module's docstring); None when there are none."""
    rows: list[dict[str, Any]] = []
    title, generated = "Scale benchmark", ""
    for path in paths:
        try:
            data = read_scale(path)
            rows.extend(_scale_rows(data) if "modes" in data else _plain_rows(data))
            title, generated = str(data.get("title", title)), str(data.get("generated", generated))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise ReportError(f"{path} is not a scale benchmark JSON: {type(err).__name__}: {err}") from None
    if not rows:
        return None
    metrics: list[str] = []
    for row in rows:
        metrics.extend(k for k in row["metrics"] if k not in metrics)
    return {
        "title": title,
        "generated": generated,
        "source": ", ".join(str(p) for p in paths),
        "metrics": metrics,
        "rows": rows,
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
    cells, notes, checks = load_cells(dirs)
    cost = load_cost(bench_files(bench))
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    runs = [info for d in dirs if (info := _run_info(d))]
    return Report(stamp, [str(d) for d in dirs], cells, upgrades(cells), cost, notes, checks, runs)


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
    report = redact_obj(report)  # summaries and matrix.json notes of older or foreign runs too
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
