"""Benchmark: DRA's cost to the scheduler and the API server (not a test).

    python bench/scale.py [-k 1.37] [--nodes 500] [--pods 2000] [--reps 3] [--modes plain,legacy,...]

The same as `dra-harness bench`: writes reports/out/bench/scale-<minor>.json (the readiness
report's "cost shift" section) and prints medians, CVs and ratios. See harness/bench/.
"""

from __future__ import annotations

import sys

from harness.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
