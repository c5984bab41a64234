"""Tonight against a baseline night, per cell and test:

    new failure      failed (or a setup error) tonight; passed or skipped in the baseline
    fixed            passed tonight; failed in the baseline
    still failing    failed on both nights
    flaky            passed tonight only on a rerun (--reruns): both outcomes are shown
    newly skipped    skipped tonight, ran in the baseline, or skipped there for another reason
    slower           passed on both nights, and tonight took `slower_by` percent longer and at
                     least MIN_SLOWER_SECONDS more (short tests' noise is not a regression)
    not in baseline  a cell or test the baseline does not have (also: a baseline of an older
                     format without per-test results); never a new failure
    not run tonight  a cell or test of the baseline tonight does not have

Exit code of `report --baseline`: NEW_FAILURE_EXIT when there is a new failure, else 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.core.versions import minor_number
from harness.nightly.night import CellNight, Night, TestRun

NEW_FAILURE_EXIT = 3
DEFAULT_SLOWER_BY = 50.0  # percent
MIN_SLOWER_SECONDS = 2.0

KINDS = (
    "new failure",
    "fixed",
    "still failing",
    "flaky",
    "newly skipped",
    "slower",
    "not in baseline",
    "not run tonight",
)


@dataclass(frozen=True)
class Entry:
    kind: str  # one of KINDS
    cell: str
    test: str  # "" for a whole cell
    before: str  # the baseline's outcome ("" when it has none)
    after: str  # tonight's
    detail: str  # the failure message, the skip reason and what it was, or the durations

    def to_json(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "cell": self.cell,
            "test": self.test,
            "before": self.before,
            "after": self.after,
            "detail": self.detail,
        }


@dataclass
class Diff:
    entries: list[Entry]
    compared: int  # (cell, test) pairs present on both nights
    slower_by: float
    notes: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[Entry]:
        return [e for e in self.entries if e.kind == kind]

    @property
    def counts(self) -> dict[str, int]:
        return {k: len(self.of(k)) for k in KINDS}

    @property
    def exit_code(self) -> int:
        return NEW_FAILURE_EXIT if self.of("new failure") else 0

    def headline(self) -> str:
        """One line: the counts that are not zero."""
        shown = [f"{n} {k}" for k, n in self.counts.items() if n]
        changes = ", ".join(shown) or "no change"
        return f"against the baseline ({self.compared} test(s) compared): {changes}"

    def to_json(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "slower_by_percent": self.slower_by,
            "min_slower_seconds": MIN_SLOWER_SECONDS,
            "exit_code": self.exit_code,
            "counts": self.counts,
            "entries": [e.to_json() for e in self.entries],
            "notes": self.notes,
        }


def _cell_order(cid: str) -> tuple[tuple[int, int], str]:
    minor, _, rest = cid.partition("/")
    try:
        number = minor_number(minor)
    except ValueError:
        number = (0, 0)
    return (-number[0], -number[1]), rest


def _shown(run: TestRun) -> str:
    return f"{run.duration:.1f} s" if run.duration is not None else "?"


def _compare(cid: str, nodeid: str, before: TestRun, after: TestRun, slower_by: float) -> Entry | None:
    def entry(kind: str, detail: str) -> Entry:
        return Entry(kind, cid, nodeid, before.shown, after.shown, detail)

    if after.failing:
        return entry("still failing" if before.failing else "new failure", after.message)
    if after.flaky:
        return entry("flaky", f"failed, then passed on its rerun: {after.rerun}")
    if after.outcome == "passed" and before.failing:
        return entry("fixed", f"failed in the baseline: {before.message}" if before.message else "")
    if after.outcome == "skipped":
        if before.outcome != "skipped":
            return entry("newly skipped", after.message)
        if before.message != after.message:
            return entry("newly skipped", f"{after.message} (was: {before.message})")
    if after.outcome == before.outcome == "passed" and before.duration and after.duration is not None:
        grew = after.duration - before.duration
        if after.duration > before.duration * (1 + slower_by / 100) and grew >= MIN_SLOWER_SECONDS:
            pct = 100 * grew / before.duration
            return entry("slower", f"{_shown(before)} -> {_shown(after)} (+{pct:.0f}%)")
    return None


def _cell_entries(
    cid: str, now: CellNight, then: CellNight | None, slower_by: float
) -> tuple[list[Entry], int]:
    if then is None or then.tests is None:
        why = "cell not in baseline" if then is None else "the baseline has no per-test results for it"
        totals = ", ".join(f"{n} {k}" for k, n in now.totals.items() if n)
        return [Entry("not in baseline", cid, "", "", "", f"{why} ({totals or 'no tests'})")], 0
    out: list[Entry] = []
    compared = 0
    for nodeid, after in (now.tests or {}).items():
        before = then.tests.get(nodeid)
        if before is None:
            out.append(Entry("not in baseline", cid, nodeid, "", after.shown, after.rerun or after.message))
            continue
        compared += 1
        found = _compare(cid, nodeid, before, after, slower_by)
        if found is not None:
            out.append(found)
    gone = sorted(set(then.tests) - set(now.tests or {}))
    out.extend(Entry("not run tonight", cid, n, then.tests[n].outcome, "", "") for n in gone)
    return out, compared


def compare(tonight: Night, baseline: Night, slower_by: float = DEFAULT_SLOWER_BY) -> Diff:
    entries: list[Entry] = []
    compared = 0
    for cid in sorted(tonight.cells, key=_cell_order):
        found, n = _cell_entries(cid, tonight.cells[cid], baseline.cells.get(cid), slower_by)
        entries.extend(found)
        compared += n
    for cid in sorted(set(baseline.cells) - set(tonight.cells), key=_cell_order):
        entries.append(Entry("not run tonight", cid, "", "", "", "cell not in tonight's results"))
    order = {k: i for i, k in enumerate(KINDS)}
    entries.sort(key=lambda e: order[e.kind])  # stable: cells and tests keep their order
    return Diff(entries, compared, slower_by, [*tonight.notes, *baseline.notes])
