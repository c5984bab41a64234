"""The readiness report: cell summaries (summary.json from one matrix run, or merged from many
CI runners) -> per-cell check tables, a heat-map (cells x checks), the upgrade view between
consecutive minors, and the scale benchmark's cost comparison when present (model.py holds
the model, inputs.py reads the files, this module builds and renders it).

Written as readiness.html (one self-contained file: inline CSS, no scripts, no external URLs),
readiness.md and readiness.json, from the jinja2 templates in reports/templates/.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from harness.core.redaction import redact, redact_obj
from harness.readiness.inputs import bench_files, load_cells, load_cost, load_rehearsals, run_info
from harness.readiness.model import Report, upgrades, with_rehearsals
from harness.readiness.status import STATUS_WORDS, Status
from harness.reports.templates import environment
from harness.reports.verdicts import legend


@dataclass(frozen=True)
class Lead:
    """A section the report opens on, rendered by whoever made it (the command line passes
    the diff against a baseline night): an HTML fragment, Markdown, and JSON that becomes the
    JSON report's first key, `key`."""

    key: str
    html: str
    md: str
    json: dict[str, Any]


def build_report(
    dirs: Sequence[Path],
    bench: Path | None = None,
    *,
    now: datetime.datetime | None = None,
    rehearsals: Sequence[Path] = (),
) -> Report:
    """`rehearsals`: upgrade reports of `dra-harness upgrade` (upgrade.json, or directories
    holding them); those under `dirs` are read too."""
    cells, notes, checks = load_cells(dirs)
    cost = load_cost(bench_files(bench))
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    runs = [info for d in dirs if (info := run_info(d))]
    ups = with_rehearsals(upgrades(cells), load_rehearsals([*dirs, *rehearsals]))
    return Report(stamp, [str(d) for d in dirs], cells, ups, cost, notes, checks, runs)


def _env() -> jinja2.Environment:
    return environment()


def render(report: Report, lead: Lead | None = None) -> dict[str, str]:
    report = redact_obj(report)  # summaries and matrix.json notes of older or foreign runs too
    if lead is not None:  # its messages come from the same summaries
        lead = Lead(lead.key, redact(lead.html), redact(lead.md), redact_obj(lead.json))
    env = _env()
    context = {"r": report, "Status": Status, "lead": lead, "legend": legend(STATUS_WORDS)}
    doc = {lead.key: lead.json, **report.to_json()} if lead else report.to_json()
    return {
        "readiness.html": env.get_template("readiness.html.j2").render(context),
        "readiness.md": env.get_template("readiness.md.j2").render(context),
        "readiness.json": json.dumps(doc, indent=2) + "\n",
    }


def write_report(
    dirs: Sequence[Path],
    out: Path,
    bench: Path | None = None,
    rehearsals: Sequence[Path] = (),
    lead: Lead | None = None,
) -> list[Path]:
    report = build_report(dirs, bench, rehearsals=rehearsals)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render(report, lead).items():
        path = out / name
        path.write_text(text)
        written.append(path)
    return written
