"""Teardown torture for real nodes (not a test): start a cluster with real nodes in a child,
interrupt it at a random moment of its start (SIGINT, SIGTERM or SIGKILL; after SIGKILL the
next start's reaping is run), and compare the host with how it was.

    python bench/real_node_torture.py [--runs 20] [--seed 1]

Prints one line per run and exits 1 if any run left something behind.
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys

from harness.clusters.host import state as hoststate

OWNER = """
import signal
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.pools import RealPoolSpec
with LocalCluster(real_pools=[RealPoolSpec("t", count=2, gpus=1, device_plugin=True)]):
    signal.pause()
"""
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)


def one_run(rng: random.Random, before: dict[str, object]) -> tuple[str, dict[str, object]]:
    sig, at = rng.choice(SIGNALS), rng.uniform(0.3, 12.0)
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        owner.wait(timeout=at)  # the random moment; an owner that already exited is a failed start
    except subprocess.TimeoutExpired:
        owner.send_signal(sig)
    owner.wait(timeout=120)
    if sig == signal.SIGKILL:
        hoststate.reap_stale()  # what the next start does first
    after = hoststate.snapshot()
    left = {k: after[k] for k in after if after[k] != before[k]}
    return f"{sig.name} at {at:.1f}s", left


def main() -> int:
    parser = argparse.ArgumentParser(prog="real_node_torture")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    before = hoststate.snapshot()
    dirty = 0
    for i in range(args.runs):
        what, left = one_run(rng, before)
        dirty += bool(left)
        print(f"{i:2d} {what}: {left or 'clean'}", flush=True)
    print(f"{dirty} of {args.runs} runs left something behind")
    return 1 if dirty else 0


if __name__ == "__main__":
    sys.exit(main())
