"""Errors of the fake driver. Every message is one line: the CLI prints it as is."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence

# A reader that went away (`... | head`) is no error: 128 + SIGPIPE, as a shell reports it.
EXIT_BROKEN_PIPE = 141


class FakeDriverError(Exception):
    """Base class; str(err) is a single line fit for stderr."""

    exit_code = 2


class ClusterError(FakeDriverError):
    """The cluster cannot be used: unreachable, silent, or refusing these credentials."""

    exit_code = 1


class KubeconfigError(ClusterError):
    """The kubeconfig cannot be used; names the file and what is wrong with it."""


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


class ForeignObjectError(InstallRefusedError):
    """An object of the name we install exists and is not ours (fake_driver.api.ownership)."""

    exit_code = 1


class InUseError(FakeDriverError):
    """Another live process serves what this one would take over (a kubelet plugin's sockets)."""

    exit_code = 1


class NodeNotFoundError(FakeDriverError):
    pass


def end_quietly_on_broken_pipe() -> int:
    """After EPIPE on stdout: point stdout at /dev/null, so the interpreter's final flush does
    not print "Exception ignored", and return the exit code for it."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def cli_main(
    prog: str,
    run: Callable[[Sequence[str] | None], int],
    argv: Sequence[str] | None,
    *,
    catch_all: bool = False,
) -> int:
    """Run a command line: a FakeDriverError (or, with catch_all, anything) is one line; exit 1
    when the cluster or its kubeconfig cannot be used, 2 for anything else; a closed stdout
    ends quietly."""
    try:
        try:
            return run(argv)
        finally:
            sys.stdout.flush()  # here, where a closed pipe can still be caught
    except BrokenPipeError:
        return end_quietly_on_broken_pipe()
    except SystemExit as e:  # argparse: its one line is printed; callers get the code like any other
        return e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    except FakeDriverError as e:
        sys.stderr.write(f"{prog}: error: {' '.join(str(e).split())}\n")
        return e.exit_code
    except Exception as e:
        if not catch_all:
            raise
        sys.stderr.write(f"{prog}: error: {type(e).__name__}: {' '.join(str(e).split())}\n")
        return 2
