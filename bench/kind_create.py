"""Benchmark: a kind cluster of the default pools (1 control plane, 2 workers) created, the
fake driver deployed and both DaemonSets rolled out, then deleted (not a test).

    python bench/kind_create.py [-k 1.37] [--gates dra-all] [--runs 3]

Needs what the kind provider needs (kind, the node image from `make kind-images`, and a Docker
engine or root to start the harness's own); a missing one is one line and exit 2. Prints one
JSON line: each run's create and delete seconds (the engine's start and stop included, when
the harness starts its own) and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness.clusters.kind.provider import KindProvider
from harness.core.errors import HarnessError
from harness.core.versions import load_matrix


def _one(minor: str, gates: str | None) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="bench-kind-") as run_dir:
        p = KindProvider(minor, gates, run_dir=Path(run_dir), name="dra-harness-bench-kind", kwok=False)
        started = time.monotonic()
        try:
            p.start()
            created = time.monotonic() - started
        finally:
            stopping = time.monotonic()
            p.stop()
        return round(created, 2), round(time.monotonic() - stopping, 2)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-k", "--k8s-version", default=None)
    parser.add_argument("--gates", default=None)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    minor = load_matrix().minor(args.k8s_version or load_matrix().default_minor)
    runs = []
    for _ in range(args.runs):
        try:
            runs.append(_one(minor.name, args.gates))
        except HarnessError as err:
            print(f"bench/kind_create.py: {err}", file=sys.stderr)
            return 2
    created, deleted = [c for c, _ in runs], [d for _, d in runs]
    print(
        json.dumps(
            {
                "bench": "kind_create",
                "kubernetes": minor.kubernetes,
                "create_s": created,
                "delete_s": deleted,
                "median_create_s": statistics.median(created),
                "median_delete_s": statistics.median(deleted),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
