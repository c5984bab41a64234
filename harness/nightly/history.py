"""A history grid over several nights, testgrid-like: a row per (cell, test), a column per
night, the outcome in each square ("flaky" for a pass on a rerun, "" where the night has no
result for it). Rows where every night passed are counted, not drawn, so the grid shows what
moved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.nightly.night import Night

PASSED = "passed"


@dataclass(frozen=True)
class HistoryRow:
    cell: str
    test: str
    outcomes: tuple[str, ...]  # one per night, oldest first


@dataclass(frozen=True)
class History:
    nights: tuple[str, ...]  # the nights' names, oldest first (tonight last)
    rows: tuple[HistoryRow, ...]
    steady: int  # (cell, test) pairs that passed on every night that ran them

    def to_json(self) -> dict[str, object]:
        return {
            "nights": list(self.nights),
            "steady": self.steady,
            "rows": [{"cell": r.cell, "test": r.test, "outcomes": list(r.outcomes)} for r in self.rows],
        }


def history(nights: Sequence[tuple[str, Night]]) -> History:
    """`nights`: (name, night), oldest first."""
    keys: dict[tuple[str, str], None] = {}
    for _, night in nights:
        for cid, cell in night.cells.items():
            for nodeid in cell.tests or {}:
                keys.setdefault((cid, nodeid), None)
    rows, steady = [], 0
    for cid, nodeid in sorted(keys):
        outcomes = tuple(_outcome(night, cid, nodeid) for _, night in nights)
        if all(o in (PASSED, "") for o in outcomes):
            steady += 1
            continue
        rows.append(HistoryRow(cid, nodeid, outcomes))
    return History(tuple(name for name, _ in nights), tuple(rows), steady)


def _outcome(night: Night, cid: str, nodeid: str) -> str:
    cell = night.cells.get(cid)
    run = (cell.tests or {}).get(nodeid) if cell is not None else None
    return run.shown if run is not None else ""
