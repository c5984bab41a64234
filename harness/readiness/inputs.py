"""The readiness report's inputs: cell summaries (summary.json) and the matrix.json of their
run, and the scale benchmark's files for the cost section.

Scale benchmark input (optional): every reports/out/bench/scale*.json, or --bench FILE, in
harness.reports.costs's ScaleSummary format (scale-<minor>.json) or this plain one:
    {"title": str?, "generated": str?,
     "rows": [{"cell": "1.37/nvidia-v25.12/dra-all", "scenario": "device plugin" | ...,
               "nodes": int, "pods": int, "metrics": {"<name> (<unit>)": number, ...}}]}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core.layout import MatrixCellJson, MatrixJson, read_matrix_json
from harness.readiness.catalog import CHECKS
from harness.readiness.checks import evaluate_cell, fallback_checks, uncovered
from harness.readiness.costtext import caveat, context, curve_view, mode_sentence, profile_lines, watch_list
from harness.readiness.model import CellReport, ReportError
from harness.readiness.status import Check
from harness.reports.costplot import curve_svg
from harness.reports.costs import DEFAULT_BENCH_DIR, MODE_DESCRIPTIONS, read_scale
from harness.reports.summary import read_summary


def _matrix_json(run_dir: Path) -> MatrixJson | None:
    try:
        return read_matrix_json(run_dir)
    except ValueError as err:
        raise ReportError(str(err)) from None


def _cell_meta(run_dir: Path) -> dict[str, MatrixCellJson]:
    """Exit codes and states per cell id from a matrix.json next to the cells, if any."""
    data = _matrix_json(run_dir)
    return {c["id"]: c for c in data["cells"]} if data else {}


def run_info(run_dir: Path) -> dict[str, Any]:
    data = _matrix_json(run_dir)
    if not data:
        return {}
    return {
        "run_id": str(data.get("run_id", run_dir.name)),
        "wall_seconds": float(data.get("wall_seconds", 0.0)),
        "cells": len(data.get("cells", [])),
    }


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
        meta: MatrixCellJson = {}
        for parent in path.parents[:3]:
            meta = _cell_meta(parent).get(cid, {})
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
        for cid, meta in _cell_meta(d).items() if d.is_dir() else ():
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
    words: list[dict[str, Any]] = []
    title, generated = "Scale benchmark", ""
    for path in paths:
        try:
            data = read_scale(path)
            rows.extend(_scale_rows(data) if "modes" in data else _plain_rows(data))
            if "modes" in data:
                words.append(_in_words(data))
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
        "words": words,
        "curves": load_curves(),
    }


def _in_words(data: dict[str, Any]) -> dict[str, Any]:
    reference = (data.get("reference") or {}).get("modes") or {}
    return {
        "context": context(data),
        "caveat": caveat(data),
        "sentences": [mode_sentence(m, data) for m in data["modes"]],
        "why": [f"{m}: {e['why']}" for m, e in reference.items() if e.get("why")],
        "watch": watch_list(data),
        "profile_mode": (data.get("cpu_profile") or {}).get("mode", ""),
        "profile": profile_lines(data),
    }


def load_curves() -> list[dict[str, Any]]:
    """Every reports/out/bench/curve*.json, with its plot drawn from it."""
    paths = sorted(DEFAULT_BENCH_DIR.glob("curve*.json")) if DEFAULT_BENCH_DIR.is_dir() else []
    out = []
    for path in paths:
        try:
            doc = read_scale(path)
            out.append({**curve_view(doc), "source": str(path), "svg": curve_svg(doc)})
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ReportError(f"{path} is not a cost curve JSON: {type(err).__name__}: {err}") from None
    return out


def load_rehearsals(dirs: Sequence[Path]) -> list[dict[str, Any]]:
    """upgrade.json files (`dra-harness upgrade`) in or under `dirs`."""
    found: list[dict[str, Any]] = []
    for d in dirs:
        paths = [d] if d.is_file() else sorted(d.rglob("upgrade.json")) if d.is_dir() else []
        for path in paths:
            try:
                data = json.loads(path.read_text())
                found.append({k: data[k] for k in REHEARSAL_KEYS})
            except (OSError, ValueError, KeyError, TypeError) as err:
                raise ReportError(f"{path}: not an upgrade report ({err})") from None
    return found


REHEARSAL_KEYS = (
    "personality",
    "before",
    "after",
    "profile",
    "wall_seconds",
    "steps",
    "keeps_working",
    "changes",
    "blocks",
    "failed",
)
