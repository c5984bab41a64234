"""Readiness report: which DRA migration checks pass, fail or need a change, per cell."""

from __future__ import annotations

from harness.readiness.checks import CHECKS, Check, CheckResult, Status, evaluate, evaluate_cell
from harness.readiness.model import Report
from harness.readiness.report import build_report, render, write_report

__all__ = [
    "CHECKS",
    "Check",
    "CheckResult",
    "Report",
    "Status",
    "build_report",
    "evaluate",
    "evaluate_cell",
    "render",
    "write_report",
]
