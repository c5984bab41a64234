"""Benchmark: DRA's cost to the scheduler and the API server (not a test).

    python bench/scale.py [-k 1.37] [--nodes 500] [--pods 2000] [--reps 3] [--modes plain,legacy,...]

Writes reports/out/bench/scale-<minor>.json (the readiness report's "cost shift" section)
and prints the summary. See harness/bench/scale.py for what each mode does.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from harness.bench.scale import MODES, run
from harness.controlplane.build import ensure_controlplane, ensure_kwok
from harness.versions import REPO_ROOT, load_matrix


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-k", "--k8s-version", default=None)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    matrix = load_matrix()
    minor = matrix.minor(args.k8s_version or matrix.default_minor)
    modes = tuple(args.modes.split(","))
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        print(f"unknown mode {', '.join(unknown)}; valid: {', '.join(MODES)}", file=sys.stderr)
        return 2
    ensure_controlplane(minor)
    ensure_kwok(matrix)
    started = time.monotonic()
    out = REPO_ROOT / "reports" / "out" / "bench" / f"scale-{minor.name}.json"
    summary = run(minor.name, args.nodes, args.pods, args.reps, modes, out)
    summary["wall_seconds"] = round(time.monotonic() - started, 1)
    out.write_text(json.dumps(summary, indent=2))
    print(
        json.dumps(
            {
                m: {
                    "median": e["median"],
                    "cv_percent": e["cv_percent"],
                    **{k: v for k, v in e.items() if k.startswith("ratio")},
                }
                for m, e in summary["modes"].items()
            },
            indent=1,
        )
    )
    print(f"wall: {summary['wall_seconds']}s; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
