"""Outputs are checked before the work that writes them: a run of many minutes must not lose
its result to a path it cannot write, and a refused command leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from fake_driver.core.paths import unwritable
from harness.core.errors import HarnessError


def check_output(path: Path, what: str, *, directory: bool = False) -> None:
    """One line naming `what` (the flag) and the path, if `path` cannot be written."""
    problem = unwritable(path, directory=directory)
    if problem:
        raise HarnessError(f"{what} {path}: {problem}")


# The report paths pytest writes (junitxml, at the end of the run) and allure (a directory, at
# the start): each an INTERNALERROR when it cannot be written. flag -> is a directory.
REPORT_FLAGS = {"--junitxml": False, "--junit-xml": False, "--alluredir": True}


def check_report_args(args: list[str]) -> None:
    """One line for a report path among pytest's `args` (`--junitxml=X` or `--junitxml X`)
    that cannot be written: `run -- ...` and `matrix -- ...` say so before anything starts."""
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag not in REPORT_FLAGS:
            continue
        if not eq:
            value = args[i + 1] if i + 1 < len(args) else ""
        if value:
            check_output(Path(value), flag, directory=REPORT_FLAGS[flag])
