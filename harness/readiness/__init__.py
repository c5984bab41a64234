"""Readiness report: which DRA migration checks pass, fail or need a change, per cell."""

from __future__ import annotations

from harness.readiness.catalog import CHECKS
from harness.readiness.checks import evaluate, evaluate_cell
from harness.readiness.model import Report
from harness.readiness.report import Lead, build_report, render, write_report
from harness.readiness.status import Check, CheckResult, Status

__all__ = [
    "CHECKS",
    "Check",
    "CheckResult",
    "Lead",
    "Report",
    "Status",
    "build_report",
    "evaluate",
    "evaluate_cell",
    "render",
    "write_report",
]
