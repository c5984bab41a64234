"""`dra-harness matrix`: the suites on many cells (Kubernetes minor x driver personality x gate
profile), each cell its own pytest process with its own cluster, up to --jobs at a time.

    reports/out/<run-id>/
        matrix.json                      cells, exit codes, wall times
        cells/<cell-slug>/               one directory per cell
            junit_<cell-slug>.xml  allure-results/  summary.json  pytest.log  clusters/
        readiness.html / .md / .json     the readiness report over all cells

Control planes a cell needs are built (or found in the cache) before any cell starts, with
the build's progress shown. Progress is one line per cell state change; on a terminal a
compact status table is redrawn in place as well.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from harness.clusters.host.processes import exit_code as signal_exit_code
from harness.clusters.host.processes import forward_stop, popen_child, stops_deferred
from harness.clusters.host.rundirs import ENV, matrix_cell_run_dir
from harness.core.cells import Cell
from harness.core.drivers import is_driver_ref
from harness.core.errors import HarnessError
from harness.core.layout import (
    REPORTS,
    MatrixCellJson,
    MatrixJson,
    cell_dir,
    junit_name,
    new_run_id,
    pytest_command,
    write_matrix_json,
)
from harness.core.redaction import redact_file
from harness.core.versions import REPO_ROOT, Matrix
from harness.matrix.display import Display
from harness.reports.summary import LOAD_ENV, read_summary
from harness.reports.verdicts import Word, cell_word

DEFAULT_JOBS = 2
ISOLATED = ("-p", "no:cacheprovider")  # cells in parallel share no pytest cache
# The cells' progress lines (fixtures/artifacts/progress.py) in their logs, read for the display.
PROGRESS_EVERY = ("--progress-interval=10",)
_PROGRESS = re.compile(rb"progress [^:\n]+: ([^\r\n]+)")
# A real-driver cell's process (a command: it joins clusters and qualify, which this product
# may not import): its own real-node cluster, then `qualify` with the cell's suites.
REAL_DRIVER_CELL = "harness.cli.realcell"


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
    progress: str = ""  # the cell's latest progress line, after "progress <cell>: "
    totals: dict[str, int] = field(default_factory=dict)
    note: str = ""
    verdict: str = ""  # PASS, FLAKY, FAIL, NOTHING RAN or ERROR once it ended (harness.reports.verdicts)

    def to_json(self) -> MatrixCellJson:
        return {
            "id": self.cell.id,
            "minor": self.cell.minor,
            "personality": self.cell.personality,
            "profile": self.cell.profile,
            "dir": f"cells/{self.cell.slug}",
            "state": self.state,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "wall_seconds": round(self.wall_seconds, 1),
            "totals": self.totals,
            "note": self.note,
        }


_PERCENT = re.compile(rb"\[\s*(\d+)%\]")

# pytest exit codes that are an outcome of the cell, not a failure to run it.
_RAN = {0: "passed", 1: "failed", 5: "passed"}


def _tail_matches(log: Path, pattern: re.Pattern[bytes]) -> list[bytes]:
    """`pattern`'s groups in the tail of the cell's log."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, log.stat().st_size - 4096))
            return pattern.findall(f.read())
    except OSError:
        return []


def _percent(log: Path) -> int:
    """pytest's own progress ("[ 42%]") from the tail of the cell's log."""
    hits = _tail_matches(log, _PERCENT)
    return int(hits[-1]) if hits else 0


def _progress(log: Path) -> str:
    """The cell's latest progress line ("40/96 tests, 1 failed, 2m10s elapsed, ETA 3m02s")."""
    hits = _tail_matches(log, _PROGRESS)
    return hits[-1].decode(errors="replace") if hits else ""


def _outcome(summary: Path) -> tuple[dict[str, int], Word]:
    """The cell's totals and its word, as qualify and the readiness report would say it."""
    try:
        tests = read_summary(summary)
    except HarnessError:  # none written (a cell that failed to start) or cut short
        return {}, Word.ERROR
    return tests.totals, cell_word(tests.tests)


def _last_line(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:200] if lines else ""


def _cell_command(run: CellRun, paths: Sequence[str], extra: Sequence[str]) -> list[str]:
    junit = junit_name(run.cell)
    if is_driver_ref(run.cell.personality):  # its own real-node cluster, then qualify
        argv = [sys.executable, "-m", REAL_DRIVER_CELL, f"--cell={run.cell.id}", f"--out={run.dir}"]
        chosen = [] if list(paths) == ["suites"] else paths  # no --suite: qualify's own suites
        argv += [f"--junit={junit}", *(f"--suite={p}" for p in chosen)]
        return [*argv, "--", *ISOLATED, *PROGRESS_EVERY, *extra]
    return pytest_command(run.cell, run.dir, paths, [*ISOLATED, *PROGRESS_EVERY, *extra], junit=junit)


def _run_cell(
    run: CellRun,
    paths: Sequence[str],
    extra: Sequence[str],
    events: queue.Queue[CellRun],
    procs: dict[str, subprocess.Popen[bytes]],
    stopping: threading.Event,
    load_before: float,
) -> None:
    if stopping.is_set():
        run.state, run.note = "interrupted", "not started"
        events.put(run)
        return
    run.dir.mkdir(parents=True, exist_ok=True)
    # summary.json's load_before_1m: the machine's load before the matrix, not its siblings'
    env = {**os.environ, ENV: str(run.cluster_dir), "PYTHONUNBUFFERED": "1", LOAD_ENV: f"{load_before:.2f}"}
    env.pop("PYTEST_XDIST_WORKER", None)
    log = run.dir / "pytest.log"
    run.started = time.monotonic()
    with log.open("wb") as out:
        proc = popen_child(
            _cell_command(run, paths, extra),
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
    run.totals, word = _outcome(run.dir / "summary.json")
    if stopping.is_set():
        run.state = "interrupted"
    elif code in _RAN:
        run.state = _RAN[code] if code or not run.totals.get("errors") else "failed"
    else:
        run.state, word = "error", Word.ERROR
        run.note = _last_line(log)
    run.verdict = "" if run.state == "interrupted" else str(word)
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

    def to_json(self) -> MatrixJson:
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
    real = [c for c in cells if is_driver_ref(c.personality)]
    if real:
        _ensure_real_driver_parts(matrix, real, progress)


def _ensure_real_driver_parts(matrix: Matrix, cells: Sequence[Cell], progress: Callable[[str], None]) -> None:
    """Real-driver cells' nodes: kubelet, containerd and images of their minors, the drivers."""
    from harness.controlplane.driverparts import ensure_driver
    from harness.controlplane.nodeparts import build_node_parts
    from harness.core.drivers import driver_ref

    for name in sorted({c.minor for c in cells}, reverse=True):
        build_node_parts(matrix.minor(name), matrix, progress)
    for ref in sorted({c.personality for c in cells}):
        spec, version = driver_ref(ref)
        progress(f"driver {ref}: {ensure_driver(spec, version, progress)}")


@dataclass
class _Workers:
    """Up to `jobs` cells at a time, each on its own thread running its pytest process."""

    runs: list[CellRun]
    paths: Sequence[str]
    extra: Sequence[str]
    jobs: int
    load_before: float = 0.0
    events: queue.Queue[CellRun] = field(default_factory=queue.Queue)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    done: int = 0

    def __post_init__(self) -> None:
        self.pending = list(self.runs)

    def launch(self) -> None:
        while self.pending and len(self.threads) - self.done < self.jobs:
            run = self.pending.pop(0)
            args = (run, self.paths, self.extra, self.events, self.procs, self.stopping, self.load_before)
            t = threading.Thread(target=_run_cell, args=args, daemon=True)
            self.threads.append(t)
            t.start()

    def run_all(self, display: Display) -> None:
        self.launch()
        while self.done < len(self.runs):
            try:
                run = self.events.get(timeout=1.0)
            except queue.Empty:
                for r in self.runs:
                    if r.state == "running":
                        r.percent = _percent(r.dir / "pytest.log")
                        r.progress = _progress(r.dir / "pytest.log")
                display.tick()
                continue
            display.event(run)
            if run.state != "running":
                self.done += 1
                self.launch()

    def stop(self, stop: KeyboardInterrupt) -> None:
        """Forward the stop to every running cell, wait for them, mark the rest not started."""
        self.stopping.set()
        self.pending.clear()
        stoppers = [threading.Thread(target=forward_stop, args=(p, stop)) for p in list(self.procs.values())]
        for t in stoppers:
            t.start()
        for t in [*stoppers, *self.threads]:
            t.join()
        for r in self.runs:
            if r.state == "queued":
                r.state, r.note = "interrupted", "not started"


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
    runs = [CellRun(c, cell_dir(out, c), matrix_cell_run_dir(run_id, c.slug)) for c in cells]
    display = Display(runs, stream)
    t0, load_before = time.monotonic(), os.getloadavg()[0]  # before the builds count in it
    display.line(f"matrix {run_id}: {len(cells)} cell(s), {jobs} at a time, reports in {out}")
    if build:
        ensure_builds(matrix, cells, display.line)
    build_seconds = time.monotonic() - t0
    workers = _Workers(runs, paths, extra, jobs, load_before)
    interrupted_by = 130
    try:
        workers.run_all(display)
    except KeyboardInterrupt as stop:
        display.line("interrupted: stopping running cells (their clusters are torn down)")
        interrupted_by = signal_exit_code(stop)
        with stops_deferred():  # a second Ctrl-C must not abandon the cells mid-teardown
            workers.stop(stop)
    result = MatrixResult(run_id, out, runs, time.monotonic() - t0, build_seconds, interrupted_by)
    write_matrix_json(out, result.to_json())
    return result
