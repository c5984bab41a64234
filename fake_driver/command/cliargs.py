"""Argument parsing for the fake driver's commands (the harness CLI uses it too): a bad argument
is one line on stderr and exit 2, before any work starts.

Standard library only, so every command line of the project can share it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import NoReturn

from fake_driver.api import apilimits
from fake_driver.core.errors import FakeDriverError
from fake_driver.fleetspec.fleet import node_name_problem


class OneLineParser(argparse.ArgumentParser):
    """argparse without the usage block on errors: the one line says what is wrong."""

    usage_exit = 2  # a subcommand whose 2 means something else sets its own

    def error(self, message: str) -> NoReturn:
        self.exit(self.usage_exit, f"{self.prog}: error: {message} (see --help)\n")


def _number(convert: Callable[[str], float], text: str, what: str, *, zero: bool = False) -> float:
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not math.isfinite(value) or not (value >= 0 if zero else value > 0):
        bound = "at least 0" if zero else "greater than 0"
        raise argparse.ArgumentTypeError(f"must be {bound}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    return _number(float, text, "a number")


def positive_int(text: str) -> int:
    return int(_number(int, text, "a whole number"))


def nonnegative_int(text: str) -> int:
    return int(_number(int, text, "a whole number", zero=True))


def nonempty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def nonempty_csv(text: str) -> list[str]:
    """'a,b' -> ['a', 'b']; an empty item (',,', 'a,') is a typo, not a default."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    items = [x.strip() for x in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"empty item in {text!r}")
    return items


def node_name(text: str) -> str:
    problem = node_name_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def node_names(text: str) -> list[str]:
    return [node_name(n) for n in nonempty_csv(text)]


def known_minor(text: str) -> str:
    """A Kubernetes minor the fake driver has API facts for (apilimits.SUPPORTED_MINORS)."""
    try:
        minor = apilimits.parse_minor(text)
    except FakeDriverError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if minor not in apilimits.SUPPORTED_MINORS:
        known = ", ".join(apilimits.format_minor(m) for m in apilimits.SUPPORTED_MINORS)
        old = minor < apilimits.V1_SINCE
        why = "does not serve resource.k8s.io/v1" if old else "is unknown to the fake driver"
        raise argparse.ArgumentTypeError(f"Kubernetes {text} {why}; supported: {known}")
    return text
