"""Keeps one LocalCluster running in the background for `dra-harness cluster up`.

Run as `python -m harness.clusters.supervisor --state-dir D --k8s-version V --gates G`:
starts the cluster with D as its run directory, writes D/state.json (with this PID), then
blocks until SIGTERM or SIGINT and stops every component.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from harness.clusters.local import LocalCluster
from harness.errors import HarnessError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dra-harness-supervisor")
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--k8s-version")
    parser.add_argument("--gates")
    args = parser.parse_args(argv)
    # Block the stop signals first, then wait for them synchronously: no race, no polling.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    cluster = LocalCluster(args.k8s_version, args.gates, run_dir=args.state_dir, keep_run_dir=True)
    try:
        cluster.start()
    except HarnessError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    state_file = args.state_dir / "state.json"
    state = json.loads(state_file.read_text()) | {"supervisor_pid": os.getpid(), "ready": True}
    state_file.write_text(json.dumps(state, indent=2))
    try:
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    finally:
        cluster.stop()
        state_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
