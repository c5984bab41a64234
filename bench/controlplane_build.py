"""Benchmark: control-plane build times and binary size (not a test).

    python bench/controlplane_build.py [-k 1.37] [--cold]

Warm (default): the Go build cache is kept and only the stamp is dropped, so this measures
the rebuild after an input change (compile of changed packages + link).
--cold: a fresh GOCACHE (modules stay downloaded) so every package compiles again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from harness.controlplane.build import binary_path, ensure_controlplane
from harness.core.versions import load_matrix


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-k", "--k8s-version", default=None)
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    matrix = load_matrix()
    minor = matrix.minor(args.k8s_version or matrix.default_minor)
    binary = binary_path(minor)
    binary.with_name("inputs.sha256").unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="gocache-") as cache:
        if args.cold:
            os.environ["GOCACHE"] = cache
        started = time.monotonic()
        ensure_controlplane(minor, progress=lambda line: None)
        seconds = time.monotonic() - started
    print(
        json.dumps(
            {
                "bench": "controlplane_build",
                "kubernetes": minor.kubernetes,
                "mode": "cold" if args.cold else "warm",
                "seconds": round(seconds, 1),
                "binary_bytes": binary.stat().st_size,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
