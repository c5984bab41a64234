"""Run the dra-harness CLI as a user would: a subprocess, its exit code and both streams."""

from __future__ import annotations

import subprocess
import sys

from harness.versions import REPO_ROOT


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
