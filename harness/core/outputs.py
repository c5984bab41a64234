"""Outputs are checked before the work that writes them: a run of many minutes must not lose
its result to a path it cannot write, and a refused command leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from fake_driver.paths import unwritable
from harness.core.errors import HarnessError


def check_output(path: Path, what: str, *, directory: bool = False) -> None:
    """One line naming `what` (the flag) and the path, if `path` cannot be written."""
    problem = unwritable(path, directory=directory)
    if problem:
        raise HarnessError(f"{what} {path}: {problem}")
