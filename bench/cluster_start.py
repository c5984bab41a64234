"""Benchmark: local cluster start to ready, with binaries cached (not a test).

    python bench/cluster_start.py [-k 1.37] [--gates dra-all] [--runs 5]

Prints one JSON line: every run's seconds and the median. Target: <= 10 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from harness.clusters.local.cluster import LocalCluster
from harness.controlplane.build import ensure_controlplane, ensure_kwok
from harness.core.versions import load_matrix


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-k", "--k8s-version", default=None)
    parser.add_argument("--gates", default=None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    matrix = load_matrix()
    minor = matrix.minor(args.k8s_version or matrix.default_minor)
    ensure_controlplane(minor)  # outside the timing: the target is start with binaries cached
    ensure_kwok(matrix)
    runs = []
    for _ in range(args.runs):
        started = time.monotonic()
        with LocalCluster(minor.name, args.gates):
            runs.append(round(time.monotonic() - started, 2))
    print(
        json.dumps(
            {
                "bench": "cluster_start",
                "kubernetes": minor.kubernetes,
                "runs": runs,
                "median_s": statistics.median(runs),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
