"""The diff against a baseline as the section a report opens on: an HTML fragment (inline
styles, no scripts, no URLs), Markdown (also the CI job summary) and JSON, from the jinja2
templates reports/templates/baseline.{html,md}.j2."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.nightly.diff import KINDS, Diff, Entry
from harness.nightly.history import History
from harness.reports.summary import personality_provenance
from harness.reports.templates import environment

WHAT = {
    "new failure": "failed tonight, did not fail in the baseline",
    "fixed": "failed in the baseline, passes tonight",
    "still failing": "failed on both nights",
    "flaky": "passed tonight only when run again: the first attempt's failure is shown",
    "newly skipped": "skipped tonight: ran in the baseline, or was skipped for another reason",
    "slower": "passed on both nights, took longer beyond the threshold",
    "not in baseline": "tonight's cells and tests the baseline cannot be compared on",
    "not run tonight": "in the baseline, not in tonight's results",
}


@dataclass(frozen=True)
class Rendered:
    html: str  # a fragment, to open a page on
    md: str
    json: dict[str, Any]


def _by_cell(entries: list[Entry]) -> list[tuple[str, list[Entry]]]:
    out: dict[str, list[Entry]] = {}
    for e in entries:
        out.setdefault(e.cell, []).append(e)
    return list(out.items())


def checked(cells: list[str]) -> list[tuple[str, str]]:
    """Each fake personality the cells (<minor>/<personality>/<profile>) name, with how it was
    checked (fake_driver.facts.personalities provenance); real drivers and unknown names left out."""
    names = dict.fromkeys(c.split("/")[1] for c in cells if c.count("/") == 2)
    return [(n, why) for n in names if (why := personality_provenance(n))]


def render_diff(diff: Diff, tonight: str, baseline: str) -> Rendered:
    """`tonight` and `baseline`: what was compared, in words (the sources)."""
    env = environment()
    sections = [(k, WHAT[k], len(diff.of(k)), _by_cell(diff.of(k))) for k in KINDS if diff.of(k)]
    personalities = checked([cell for _, _, _, cells in sections for cell, _ in cells])
    context = {
        "d": diff,
        "sections": sections,
        "tonight": tonight,
        "baseline": baseline,
        "personalities": personalities,
    }
    doc = {"tonight": tonight, "baseline": baseline, **diff.to_json(), "personalities": dict(personalities)}
    return Rendered(
        env.get_template("baseline.html.j2").render(context),
        env.get_template("baseline.md.j2").render(context),
        doc,
    )


# The squares of the history grid (outcomes as TestRun.shown gives them).
COLOURS = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "errors": "#cf222e",
    "flaky": "#bf8700",
    "skipped": "#6e7781",
}


def render_history(h: History) -> Rendered:
    env = environment()
    context = {"h": h, "colours": COLOURS}
    return Rendered(
        env.get_template("history.html.j2").render(context),
        env.get_template("history.md.j2").render(context),
        h.to_json(),
    )
