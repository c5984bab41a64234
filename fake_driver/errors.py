"""Errors of the fake driver. Every message is one line: the CLI prints it as is."""

from __future__ import annotations

from collections.abc import Iterable


class FakeDriverError(Exception):
    """Base class; str(err) is a single line fit for stderr."""


class UnknownChoiceError(FakeDriverError, KeyError):
    def __init__(self, what: str, value: object, choices: Iterable[str], where: str = "") -> None:
        self.what = what
        self.value = value
        self.choices = tuple(choices)
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}unknown {what} {value!r}; valid choices: {', '.join(self.choices)}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class FleetError(FakeDriverError):
    """The fleet description is invalid."""


class UnsupportedError(FakeDriverError):
    """The requested combination does not exist in the personality or API version."""


class PublishError(FakeDriverError):
    """The API server rejected (or silently altered) a slice; names the field."""


class InstallRefusedError(FakeDriverError):
    """Installer guard, like the NVIDIA chart's templates/validation.yaml."""


class NodeNotFoundError(FakeDriverError):
    pass
