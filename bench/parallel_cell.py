"""Benchmark: the default cell's full run (`dra-harness run`, cluster start included), one
pytest process vs xdist workers on one session cluster, interleaved (not a test).

    python bench/parallel_cell.py [--runs 3] [--workers 4] [-- PYTEST_ARGS]

Runs serial, parallel, serial, parallel, ... so drift on a shared machine hits both alike,
and prints one JSON line: every run's wall seconds and exit code, the medians, their ratio,
and the 1-minute load average at each run's start (the machine is shared: a figure without
its load means little). The control plane is built (or found) before the first run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from harness.controlplane.build import ensure_controlplane, ensure_kwok
from harness.core.versions import REPO_ROOT, load_matrix


def _one(workers: int, extra: list[str]) -> dict[str, float | int]:
    load = os.getloadavg()[0]
    cmd = [
        sys.executable,
        "-m",
        "harness.cli.main",
        "run",
        "-n",
        str(workers),
        *(["--", *extra] if extra else []),
    ]
    started = time.monotonic()
    done = subprocess.run(
        cmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return {"wall_s": round(time.monotonic() - started, 1), "exit": done.returncode, "load1": round(load, 1)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--workers", type=int, default=4, help="xdist workers of the parallel runs")
    parser.add_argument("pytest_args", nargs="*", help="after --: to every run's pytest")
    args = parser.parse_args()
    matrix = load_matrix()
    ensure_controlplane(matrix.minor(matrix.default_minor))  # outside the timing
    ensure_kwok(matrix)
    serial: list[dict[str, float | int]] = []
    parallel: list[dict[str, float | int]] = []
    for _ in range(args.runs):
        serial.append(_one(0, args.pytest_args))
        parallel.append(_one(args.workers, args.pytest_args))
    medians = {
        name: statistics.median(r["wall_s"] for r in runs)
        for name, runs in (("serial", serial), ("parallel", parallel))
    }
    print(
        json.dumps(
            {
                "bench": "parallel_cell",
                "workers": args.workers,
                "serial": serial,
                "parallel": parallel,
                "median_s": medians,
                "parallel_over_serial": round(medians["parallel"] / medians["serial"], 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
