"""Stopping a long-running fake_driver command on SIGINT/SIGTERM without a race.

The usual `signal.signal(sig, lambda *_: event.set())` has two holes. `Event.set` takes the
event's lock, which the interrupted main thread may be holding inside `Event.wait` (a
deadlock); and a signal the kernel delivers to one of gRPC's threads runs the Python handler
only when the main thread next executes bytecode, never while it blocks on a lock with no
timeout. So the handler here only flips a flag, and waits poll it in short slices.
"""

from __future__ import annotations

import signal
import threading
import time

# How late a stop is noticed at most; short against every caller's patience.
SLICE_SECONDS = 0.25


class StopSignal:
    """Set by SIGINT/SIGTERM once `install`ed, or by the caller's `event` (in-process runs)."""

    def __init__(self, event: threading.Event | None = None) -> None:
        self._event = event or threading.Event()
        self._signalled = False

    def install(self) -> StopSignal:
        """Main thread only (Python's rule for signal handlers)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signalled = True  # no lock taken: see the module's docstring

    def is_set(self) -> bool:
        return self._signalled or self._event.is_set()

    def set(self) -> None:
        self._event.set()

    def wait(self, timeout: float | None) -> bool:
        """True once stopped; False if `timeout` seconds passed first (None: no timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = SLICE_SECONDS if deadline is None else min(SLICE_SECONDS, deadline - time.monotonic())
            if left <= 0:
                return False
            self._event.wait(left)
        return True


# gRPC's `server.stop(grace)` event fires once in-flight calls ended or were cancelled at
# `grace`; waiting this much longer bounds a shutdown that wedges instead of hanging on it.
STOP_BOUND_SECONDS = 10.0
