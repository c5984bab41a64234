"""Errors a user can act on: the CLI and the pytest plugin print them as one line."""

from __future__ import annotations


class HarnessError(Exception):
    """A problem with the input or the environment, reported as one line, exit non-zero."""


class ComponentFailed(HarnessError):
    """A cluster component exited early; the message names it and carries its log tail."""


class WaitTimeout(AssertionError):
    """A bounded wait ran out; the message names the wait and the last observed state."""
