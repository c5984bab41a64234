"""Matrix progress: one line per cell state change; on a terminal a compact status table is
redrawn in place as well, with each running cell's tests done/total, failures, elapsed and
ETA; elsewhere (CI logs) those as plain lines every PLAIN_EVERY seconds."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TextIO

from harness.core.cells import Cell
from harness.core.versions import REPO_ROOT


class CellRun(Protocol):
    """What the display reads of a cell's run (harness.matrix.runner.CellRun)."""

    cell: Cell
    dir: Path
    state: str
    exit_code: int | None
    started: float
    wall_seconds: float
    percent: int
    progress: str
    totals: dict[str, int]
    note: str
    verdict: str


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


PLAIN_EVERY = 30.0


class Display:
    """Progress: one line per cell state change; on a TTY, a status table redrawn in place."""

    def __init__(self, runs: Sequence[CellRun], out: TextIO, tty: bool | None = None):
        self.runs, self.out = runs, out
        self.tty = out.isatty() if tty is None else tty
        self._drawn = 0
        self._t0 = time.monotonic()
        self._plain = self._t0
        self._said: dict[str, str] = {}

    def _stamp(self) -> str:
        return f"[{time.monotonic() - self._t0:6.0f}s]"

    def line(self, text: str) -> None:
        self._erase()
        self.out.write(f"{self._stamp()} {text}\n")
        self._table()

    def event(self, run: CellRun) -> None:
        if run.state == "running":
            self.line(f"{run.cell.id:<34} running   -> {_rel(run.dir)}/pytest.log")
        else:
            t = run.totals
            counts = f"passed {t.get('passed', 0)} failed {t.get('failed', 0)} " if t else ""
            if t:
                counts += f"skipped {t.get('skipped', 0)} errors {t.get('errors', 0)} "
            note = f" ({run.note})" if run.note else ""
            took = f"in {run.wall_seconds:.0f}s, exit {run.exit_code}"
            word = f"{run.verdict}: " if run.verdict else ""
            self.line(f"{run.cell.id:<34} {run.state:<9} {word}{counts}{took}{note}")

    def tick(self) -> None:
        if self.tty:
            self._erase()
            self._table()
            return
        now = time.monotonic()
        if now - self._plain < PLAIN_EVERY:
            return
        self._plain = now
        for r in self.runs:
            if r.state == "running" and r.progress and self._said.get(r.cell.id) != r.progress:
                self._said[r.cell.id] = r.progress
                self.line(f"{r.cell.id:<34} running   {r.progress}")

    def _erase(self) -> None:
        if self.tty and self._drawn:
            self.out.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _table(self) -> None:
        if not self.tty:
            self.out.flush()
            return
        now = time.monotonic()
        rows = []
        for r in self.runs:
            secs = (now - r.started) if r.state == "running" else r.wall_seconds
            pct = f"{r.percent:3d}%" if r.state == "running" else "    "
            tests = f"  {r.progress}" if r.state == "running" and r.progress else ""
            rows.append(f"  {r.cell.id:<34} {r.state:<11} {pct} {secs:5.0f}s{tests}")
        self.out.write("\n".join(rows) + "\n")
        self.out.flush()
        self._drawn = len(rows)
