"""`dra-harness matrix`: the suites on many cells (Kubernetes minor x driver personality x gate
profile), each cell its own pytest process with its own cluster, up to --jobs at a time.

    reports/out/<run-id>/
        matrix.json                      cells, exit codes, wall times
        cells/<cell-slug>/               one directory per cell
            junit.xml  allure-results/  summary.json  pytest.log  clusters/
        readiness.html / .md / .json     the readiness report over all cells

Control planes a cell needs are built (or found in the cache) before any cell starts, with
the build's progress shown. Progress is one line per cell state change; on a terminal a
compact status table is redrawn in place as well.
"""

from __future__ import annotations

import datetime
import fnmatch
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from fake_driver.personalities import PERSONALITIES
from harness.clusters.processes import exit_code as signal_exit_code
from harness.clusters.processes import forward_stop, popen_child
from harness.clusters.rundirs import ENV, matrix_cell_run_dir
from harness.errors import HarnessError
from harness.redaction import redact_file, redact_obj
from harness.versions import REPO_ROOT, Matrix

REPORTS = REPO_ROOT / "reports" / "out"

DEFAULT_JOBS = 2


class MatrixError(HarnessError):
    """A cell filter or matrix input that names nothing runnable."""


@dataclass(frozen=True, order=True)
class Cell:
    minor: str
    personality: str
    profile: str

    @property
    def id(self) -> str:
        return f"{self.minor}/{self.personality}/{self.profile}"

    @property
    def slug(self) -> str:
        """Filesystem-safe form: 1.37_nvidia-v25.12_dra-all."""
        return self.id.replace("/", "_")

    @property
    def number(self) -> tuple[int, int]:
        major, minor = self.minor.split(".")
        return int(major), int(minor)

    @classmethod
    def parse(cls, text: str) -> Cell:
        parts = text.strip().split("/")
        if len(parts) != 3 or not all(parts):
            raise MatrixError(
                f"cell {text!r} is not <minor>/<personality>/<profile>, e.g. 1.37/nvidia-v25.12/dra-all"
            )
        return cls(*parts)


def all_cells(matrix: Matrix, personalities: Iterable[str] = PERSONALITIES) -> list[Cell]:
    """Every runnable cell: minors that can be built here x personalities x gate profiles."""
    names = list(personalities)
    return sorted(
        (
            Cell(m.name, p, prof)
            for m in matrix.minors.values()
            if not m.unavailable
            for p in names
            for prof in m.profiles
        ),
        key=lambda c: (-c.number[1], c.personality, c.profile),
    )


def _valid_summary(matrix: Matrix, personalities: Sequence[str]) -> str:
    profiles = sorted({p for m in matrix.minors.values() for p in m.profiles})
    return (
        f"valid: <minor>/<personality>/<profile> with minor {'|'.join(matrix.minors)}, "
        f"personality {'|'.join(personalities)}, profile {'|'.join(profiles)} (wildcards * allowed)"
    )


def cells_from(
    matrix: Matrix, personalities: Iterable[str] = PERSONALITIES, filters: Sequence[str] | None = None
) -> list[Cell]:
    """The cells selected by `filters` (ids or fnmatch patterns, comma-separated allowed);
    versions.toml's [matrix] default_cells when None, every runnable cell for "all".
    One-line MatrixError otherwise."""
    names = list(personalities)
    valid = all_cells(matrix, names)
    wanted: list[str] = []
    for f in filters if filters is not None else matrix.default_cells:
        wanted.extend(x.strip() for x in f.split(",") if x.strip())
    if not wanted:
        raise MatrixError(f"no cells given; {_valid_summary(matrix, names)}")
    chosen: list[Cell] = []
    for pattern in wanted:
        if pattern == "all":
            hits = valid
        elif any(ch in pattern for ch in "*?["):
            hits = [c for c in valid if fnmatch.fnmatchcase(c.id, pattern)]
            if not hits:
                raise MatrixError(
                    f"cell pattern {pattern!r} matches no cell; {_valid_summary(matrix, names)}"
                )
        else:
            cell = Cell.parse(pattern)
            why = _unknown_part(matrix, names, cell)
            if why:
                raise MatrixError(f"unknown cell {pattern!r}: {why}; {_valid_summary(matrix, names)}")
            hits = [cell]
        chosen.extend(c for c in hits if c not in chosen)
    return chosen


def _unknown_part(matrix: Matrix, personalities: Sequence[str], cell: Cell) -> str:
    minor = matrix.minors.get(cell.minor)
    if minor is None:
        return f"no Kubernetes minor {cell.minor!r}"
    if minor.unavailable:
        return f"Kubernetes {cell.minor} is unavailable here ({minor.unavailable})"
    if cell.personality not in personalities:
        return f"no driver personality {cell.personality!r}"
    if cell.profile not in minor.profiles:
        return f"no gate profile {cell.profile!r} for {cell.minor}"
    return ""


def new_run_id() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")


def pytest_command(cell: Cell, cell_dir: Path, paths: Sequence[str], extra: Sequence[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        *paths,
        f"--k8s-version={cell.minor}",
        f"--gates={cell.profile}",
        f"--personality={cell.personality}",
        f"--junitxml={cell_dir / 'junit.xml'}",
        f"--alluredir={cell_dir / 'allure-results'}",
        f"--summary-json={cell_dir / 'summary.json'}",
        "-p",
        "no:cacheprovider",
        *extra,
    ]


# ---- running -------------------------------------------------------------------------------


@dataclass
class CellRun:
    cell: Cell
    dir: Path
    cluster_dir: Path  # outside the reports: the cell's clusters keep keys there
    state: str = "queued"  # queued | running | passed | failed | error | interrupted
    exit_code: int | None = None
    started: float = 0.0
    wall_seconds: float = 0.0
    percent: int = 0
    totals: dict[str, int] = field(default_factory=dict)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.cell.id,
            "minor": self.cell.minor,
            "personality": self.cell.personality,
            "profile": self.cell.profile,
            "dir": f"cells/{self.cell.slug}",
            "state": self.state,
            "exit_code": self.exit_code,
            "wall_seconds": round(self.wall_seconds, 1),
            "totals": self.totals,
            "note": self.note,
        }


_PERCENT = re.compile(rb"\[\s*(\d+)%\]")

# pytest exit codes that are an outcome of the cell, not a failure to run it.
_RAN = {0: "passed", 1: "failed", 5: "passed"}


def _percent(log: Path) -> int:
    """pytest's own progress ("[ 42%]") from the tail of the cell's log."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, log.stat().st_size - 4096))
            hits = _PERCENT.findall(f.read())
    except OSError:
        return 0
    return int(hits[-1]) if hits else 0


def _totals(summary: Path) -> dict[str, int]:
    try:
        data = json.loads(summary.read_text())
        return {k: int(v) for k, v in data["totals"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _last_line(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:200] if lines else ""


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


class Display:
    """Progress: one line per cell state change; on a TTY, a status table redrawn in place."""

    def __init__(self, runs: Sequence[CellRun], out: TextIO, tty: bool | None = None):
        self.runs, self.out = runs, out
        self.tty = out.isatty() if tty is None else tty
        self._drawn = 0
        self._t0 = time.monotonic()

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
            self.line(f"{run.cell.id:<34} {run.state:<9} {counts}{took}{note}")

    def tick(self) -> None:
        if self.tty:
            self._erase()
            self._table()

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
            rows.append(f"  {r.cell.id:<34} {r.state:<11} {pct} {secs:5.0f}s")
        self.out.write("\n".join(rows) + "\n")
        self.out.flush()
        self._drawn = len(rows)


def _run_cell(
    run: CellRun,
    paths: Sequence[str],
    extra: Sequence[str],
    events: queue.Queue[CellRun],
    procs: dict[str, subprocess.Popen[bytes]],
    stopping: threading.Event,
) -> None:
    if stopping.is_set():
        run.state, run.note = "interrupted", "not started"
        events.put(run)
        return
    run.dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, ENV: str(run.cluster_dir), "PYTHONUNBUFFERED": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    log = run.dir / "pytest.log"
    run.started = time.monotonic()
    with log.open("wb") as out:
        proc = popen_child(
            pytest_command(run.cell, run.dir, paths, extra),
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        procs[run.cell.id] = proc
        run.state = "running"
        events.put(run)
        code = proc.wait()
    procs.pop(run.cell.id, None)
    redact_file(log)  # the cell redacts its reports; its terminal output is ours to redact
    run.wall_seconds = time.monotonic() - run.started
    run.exit_code = code
    run.totals = _totals(run.dir / "summary.json")
    if stopping.is_set():
        run.state = "interrupted"
    elif code in _RAN:
        run.state = _RAN[code] if code or not run.totals.get("errors") else "failed"
    else:
        run.state = "error"
        run.note = _last_line(log)
    events.put(run)


@dataclass
class MatrixResult:
    run_id: str
    out: Path
    runs: list[CellRun]
    wall_seconds: float
    build_seconds: float
    interrupt_code: int = 130  # 128 + the signal that stopped the run

    @property
    def exit_code(self) -> int:
        if any(r.state == "interrupted" for r in self.runs):
            return self.interrupt_code
        return 0 if all(r.state == "passed" for r in self.runs) else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "wall_seconds": round(self.wall_seconds, 1),
            "build_seconds": round(self.build_seconds, 1),
            "exit_code": self.exit_code,
            "cells": [r.to_json() for r in self.runs],
        }


def ensure_builds(matrix: Matrix, cells: Sequence[Cell], progress: Callable[[str], None]) -> None:
    """Build every control plane the cells need (and kwok) before any cell starts: cells
    built in parallel would fight over the Go build cache and the two cores."""
    from harness.controlplane.build import binary_path, ensure_controlplane, ensure_kwok

    for name in sorted({c.minor for c in cells}, reverse=True):
        minor = matrix.minor(name)
        cached = binary_path(minor).exists()
        progress(f"control plane {minor.kubernetes}: {'checking cache' if cached else 'building'}")
        progress(f"control plane {minor.kubernetes}: {ensure_controlplane(minor, progress)}")
    ensure_kwok(matrix, progress)


def run_matrix(
    matrix: Matrix,
    cells: Sequence[Cell],
    *,
    jobs: int = DEFAULT_JOBS,
    paths: Sequence[str] = ("suites",),
    extra: Sequence[str] = (),
    out_root: Path = REPORTS,
    run_id: str | None = None,
    stream: TextIO = sys.stdout,
    build: bool = True,
) -> MatrixResult:
    run_id = run_id or new_run_id()
    out = out_root / run_id
    out.mkdir(parents=True, exist_ok=True)
    runs = [CellRun(c, out / "cells" / c.slug, matrix_cell_run_dir(run_id, c.slug)) for c in cells]
    display = Display(runs, stream)
    t0 = time.monotonic()
    display.line(f"matrix {run_id}: {len(cells)} cell(s), {jobs} at a time, reports in {out}")
    if build:
        ensure_builds(matrix, cells, display.line)
    build_seconds = time.monotonic() - t0

    events: queue.Queue[CellRun] = queue.Queue()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    stopping = threading.Event()
    pending = list(runs)
    threads: list[threading.Thread] = []
    done = 0
    interrupted_by = 130

    def launch() -> None:
        while pending and len(threads) - done < jobs:
            t = threading.Thread(
                target=_run_cell, args=(pending.pop(0), paths, extra, events, procs, stopping), daemon=True
            )
            threads.append(t)
            t.start()

    try:
        launch()
        while done < len(runs):
            try:
                run = events.get(timeout=1.0)
            except queue.Empty:
                for r in runs:
                    if r.state == "running":
                        r.percent = _percent(r.dir / "pytest.log")
                display.tick()
                continue
            display.event(run)
            if run.state != "running":
                done += 1
                launch()
    except KeyboardInterrupt as stop:
        stopping.set()
        pending.clear()
        display.line("interrupted: stopping running cells (their clusters are torn down)")
        interrupted_by = signal_exit_code(stop)
        stoppers = [threading.Thread(target=forward_stop, args=(p, stop)) for p in list(procs.values())]
        for t in stoppers:
            t.start()
        for t in [*stoppers, *threads]:
            t.join()
        for r in runs:
            if r.state == "queued":
                r.state, r.note = "interrupted", "not started"
    result = MatrixResult(run_id, out, runs, time.monotonic() - t0, build_seconds, interrupted_by)
    (out / "matrix.json").write_text(json.dumps(redact_obj(result.to_json()), indent=2))
    return result


def read_matrix_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise HarnessError(f"cannot read {path}: {err}") from None
    return data
