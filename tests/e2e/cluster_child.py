"""Child process for the teardown tests: runs a LocalCluster until a signal arrives.

python tests/e2e/cluster_child.py RUN_DIR
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from harness.clusters.local.cluster import LocalCluster

if __name__ == "__main__":
    # A shell's background job starts with SIGINT ignored, and Python then keeps ignoring it;
    # the test sends SIGINT as Ctrl-C would, so restore Ctrl-C's KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with LocalCluster(run_dir=Path(sys.argv[1])) as cluster:
        print("ready", flush=True)
        signal.pause()  # blocks until SIGINT/SIGTERM unwinds the context manager
