"""Child process for the teardown tests: runs a LocalCluster until a signal arrives.

python tests/e2e/cluster_child.py RUN_DIR
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from harness.clusters.local import LocalCluster

if __name__ == "__main__":
    with LocalCluster(run_dir=Path(sys.argv[1])) as cluster:
        print("ready", flush=True)
        signal.pause()  # blocks until SIGINT/SIGTERM unwinds the context manager
