"""Child processes the harness owns: started in their own process group, logged to a
file, and always torn down — by stop(), on SIGINT/SIGTERM, at interpreter exit, and
(through PR_SET_PDEATHSIG) even when the harness itself is killed outright."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

from harness.core.errors import ComponentFailed, HarnessError, WaitTimeout
from harness.core.redaction import redact

_PR_SET_PDEATHSIG = 1
_LOG_TAIL_LINES = 20

_live: set[ManagedProcess] = set()
_lock = threading.Lock()


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: if the harness dies, so does the child.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # no graceful shutdown to wait for: the owner is gone
    # The mask survives fork and exec: a component the cluster supervisor starts while it
    # sigwaits (a restarted publisher, an upgraded API server) would never see its SIGTERM.
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def _stop_with_parent() -> None:
    # A pytest child whose owner was killed outright still tears its cluster down.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


# How long a forwarded stop may take: pytest's teardown stops a cluster and deletes the
# objects a run made on someone else's cluster.
CHILD_TEARDOWN_SECONDS = 120.0


def popen_child(argv: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
    """A long-running child (a pytest run): its own process group, so a terminal's Ctrl-C
    reaches it once, through us; SIGTERM to it if we are killed outright."""
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        list(argv), start_new_session=True, preexec_fn=_stop_with_parent, **kwargs
    )


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """A second Ctrl-C (or SIGTERM) while children tear down is ignored, not raised: raised,
    it abandoned the child mid-teardown, whose PDEATHSIG SIGTERM then ended its own interrupt
    report in a traceback under our "interrupted" line. The teardown is bounded already."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, lambda *_: None)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def forward_stop(proc: subprocess.Popen[bytes], interrupt: KeyboardInterrupt) -> None:
    """Send the child the signal we got (SIGINT or SIGTERM), wait for its teardown (bounded),
    then SIGKILL its process group if it is still there."""
    with stops_deferred():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, getattr(interrupt, "signum", signal.SIGINT))
        try:
            proc.wait(timeout=CHILD_TEARDOWN_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run_child(argv: Sequence[str], **kwargs: object) -> int:
    """popen_child, wait; on Ctrl-C or SIGTERM forward it, wait, and re-raise."""
    proc = popen_child(argv, **kwargs)
    try:
        return proc.wait()
    except KeyboardInterrupt as stop:
        forward_stop(proc, stop)
        raise


def log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "<no log>"
    return "\n".join(text.splitlines()[-lines:])


class ManagedProcess:
    """One component process. `name` is what error messages call it."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._proc is not None, f"{self.name} was never started"
        return self._proc.pid

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,  # own process group: Ctrl-C reaches us, we stop it in order
                preexec_fn=_die_with_parent,
            )
        with _lock:
            _live.add(self)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def check_running(self) -> None:
        """Raise ComponentFailed (naming it, with its log tail) if it has exited."""
        if self._proc is None:
            raise ComponentFailed(f"{self.name} was never started")
        code = self._proc.poll()
        if code is not None:
            raise ComponentFailed(
                f"{self.name} exited early with code {code}; last lines of {self.log_path}:\n"
                f"{log_tail(self.log_path)}"
            )

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the whole process group, SIGKILL it after `grace` seconds."""
        proc = self._proc
        with _lock:
            _live.discard(self)
        if proc is None or proc.returncode is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self._reap_group(proc.pid)

    @staticmethod
    def _reap_group(pgid: int) -> None:
        # Grandchildren that outlived the leader still belong to its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def stop_all() -> None:
    with _lock:
        procs = list(_live)
    for proc in reversed(procs):
        proc.stop(grace=5.0)


class Terminated(KeyboardInterrupt):
    """SIGTERM (or another stop signal) seen as Ctrl-C, so context managers and pytest
    fixtures unwind; `signum` gives the exit code 128 + N."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """128 + N for the signal behind an interrupt (Ctrl-C: 130)."""
    return 128 + getattr(interrupt, "signum", signal.SIGINT)


_installed = False


def install_signal_teardown() -> None:
    """Make SIGTERM behave like Ctrl-C (KeyboardInterrupt unwinds context managers and
    pytest fixtures), and stop anything still running at interpreter exit."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    atexit.register(stop_all)
    # A background job of a non-interactive shell starts with SIGINT ignored and Python keeps
    # it so; a user (or CI) that sends SIGINT means it.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    previous: Callable[[int, FrameType | None], object] | int | None = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        if callable(previous):
            previous(signum, frame)
        raise Terminated(signum)

    signal.signal(signal.SIGTERM, on_sigterm)


def one_line_errors(command: Callable[[], int], prog: str = "dra-harness") -> int:
    """Run a command as the CLI runs its subcommands (the stand-in driver's `main` too):
    a HarnessError or WaitTimeout is one redacted line and exit 1, an interrupt exits 128+N."""
    install_signal_teardown()  # SIGTERM (a CI cancel) unwinds like Ctrl-C: nothing is left running
    try:
        return command()
    except (HarnessError, WaitTimeout) as err:  # a bounded wait's name and last state, no traceback
        # e.g. a server's error body: it may echo the request's credentials back
        print(f"{prog}: {redact(str(err))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as stop:
        print(f"{prog}: interrupted", file=sys.stderr)
        return exit_code(stop)
