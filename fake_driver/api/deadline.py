"""Whole-request deadlines for urllib3, which bounds each socket read but never a request.

urllib3's timeouts (its `total` too) apply to every read on its own: a server that answers
one byte at a time, each within the read timeout, holds a client for as long as it likes.
Here a request runs under a `Deadline`: the connection that carries it is registered with
it, and when the deadline passes one watchdog thread shuts that connection's socket down,
which ends any read blocked on it at once. The caller sees its request fail and asks
`expired` whether it was the deadline. A request that timed out is never sent again.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from urllib3 import HTTPConnectionPool, HTTPSConnectionPool, PoolManager
from urllib3.connection import HTTPConnection, HTTPSConnection


class Deadline:
    """A bound on one request, connection set-up to the last byte of its answer."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._done = False
        self._conn: HTTPConnection | None = None
        self._lock = threading.Lock()

    def attach(self, conn: HTTPConnection) -> None:
        """The connection this request is sent on (cut at once if the deadline has passed)."""
        with self._lock:
            self._conn = conn
            if self.expired:
                _cut(conn)

    def expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            if self._conn is not None:
                _cut(self._conn)

    def finish(self) -> None:
        with self._lock:
            self._done = True


def _cut(conn: HTTPConnection) -> None:
    sock = getattr(conn, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            # The plain socket's shutdown, also under TLS: it wakes a blocked read at once and
            # leaves the TLS object (in use by the reading thread) alone.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watchdog:
    """One daemon thread that expires deadlines in order."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: Deadline) -> None:
        with self._cv:
            heapq.heappush(self._heap, (time.monotonic() + deadline.seconds, next(self._order), deadline))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="request-deadlines", daemon=True)
                self._thread.start()
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._heap:
                    self._cv.wait()
                at, _, deadline = self._heap[0]
                if deadline._done:
                    heapq.heappop(self._heap)
                    continue
                delay = at - time.monotonic()
                if delay > 0:
                    self._cv.wait(delay)
                    continue
                heapq.heappop(self._heap)
            deadline.expire()


_WATCHDOG = _Watchdog()
_current = threading.local()


def current() -> Deadline | None:
    """The deadline of the request this thread is making, if any."""
    return getattr(_current, "deadline", None)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[Deadline]:
    """Run one request (on connections of `bounded_pools`) within `seconds` in all."""
    bound = Deadline(seconds)
    outer = current()
    _current.deadline = bound
    _WATCHDOG.arm(bound)
    try:
        yield bound
    finally:
        bound.finish()
        _current.deadline = outer


class _Registered:
    """A connection that registers itself with the deadline of the request it carries."""

    def request(self, *args: Any, **kwargs: Any) -> None:
        bound = current()
        if bound is not None:
            bound.attach(self)  # type: ignore[arg-type]
        super().request(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_Registered, HTTPConnection):
    pass


class _HTTPSConnection(_Registered, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


def bounded_pools(manager: PoolManager) -> None:
    """Make the connections of `manager` (a plain or HTTP proxy manager) obey deadlines."""
    if manager.pool_classes_by_scheme == {"http": HTTPConnectionPool, "https": HTTPSConnectionPool}:
        manager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
