"""Where local clusters keep their run directories (PKI, kubeconfigs, etcd data, logs).

Never under reports/: reports are uploaded by CI and must not carry private keys. They name
these directories; diagnostics copy what they need (redacted logs) into the report.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from harness.controlplane.build import cache_root

ENV = "DRA_HARNESS_RUN_DIR"
# The PKI inside is valid for 7 days (harness.clusters.host.pki): an older run dir is only bulk.
_KEEP_SECONDS = 7 * 24 * 3600


def runs_root() -> Path:
    return cache_root() / "runs"


def session_run_dir(minor: str, profile: str, worker: str) -> Path:
    """Per pytest process, so parallel runs (matrix cells, xdist workers) never share one;
    under $DRA_HARNESS_RUN_DIR when a matrix run sets it for its cell."""
    base = Path(os.environ.get(ENV) or runs_root())
    return base / f"{minor}-{profile}-{worker}-{os.getpid()}"


def matrix_cell_run_dir(run_id: str, cell_slug: str) -> Path:
    return runs_root() / run_id / cell_slug


def prune_old_runs(now: float | None = None) -> list[Path]:
    """Remove run dirs of ours older than the PKI inside them; returns what was removed."""
    root, now = runs_root(), now or time.time()
    removed = []
    for entry in root.iterdir() if root.is_dir() else ():
        if not entry.is_symlink() and entry.is_dir() and now - entry.stat().st_mtime > _KEEP_SECONDS:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed
