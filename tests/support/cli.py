"""Run the dra-harness CLI as a user would: a subprocess, its exit code and both streams."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.core.versions import REPO_ROOT


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def run_suite_file(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    """pytest, in a subprocess with the plugins of a real run, on one test module `source`."""
    pytester.makeconftest((REPO_ROOT / "conftest.py").read_text())
    pytester.makepyfile(test_generated=source)
    return pytester.runpytest_subprocess("-p", "no:pytest-kind", "-p", "no:cacheprovider", *args, timeout=300)
