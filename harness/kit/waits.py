"""Bounded, named waits: the only way tests and the harness wait for anything.

`wait_for` polls `observe` until `until(observation)` holds; on timeout it raises
WaitTimeout naming the wait and showing the last observed state (or the last error),
so a failed run says what the cluster looked like, not just "timed out".
`assert_stays` is the converse for "stays Pending" cases: it fails the moment the
condition breaks and passes once it has held for the whole period.
"""

from __future__ import annotations

import pprint
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_exception, retry_if_result, stop_after_delay
from tenacity.wait import wait_fixed

from harness.core.errors import HarnessError, WaitTimeout

T = TypeVar("T")

_MAX_STATE_CHARS = 4000


@dataclass(frozen=True)
class Timeouts:
    """Named bounds for every wait. One place, so a slow machine can scale them together."""

    component_ready: float = 60.0
    api_object: float = 30.0
    node_ready: float = 60.0
    pod_scheduled: float = 60.0
    pod_running: float = 60.0
    claim_allocated: float = 60.0
    deletion: float = 60.0
    # A device made sick until its driver taints or withdraws it: the driver's health monitor
    # notices (NVIDIA's waits on NVML events in 5 s rounds, device_health.go @ v0.4.1) and its
    # slices are republished.
    device_sick: float = 90.0
    # "Stays Pending" after the scheduler has reported the pod Unschedulable for the expected
    # reason (the evidence): a confirmation window covering the first retries (backoff 1s, 2s).
    stays_pending: float = 3.0
    # "Stays unbound" with no scheduler verdict to wait for (a gang held before its quorum):
    # several retry cycles (backoff 1s..10s) are the evidence.
    stays_unbound: float = 8.0
    # Every API request, connecting (TCP and TLS) and then waiting for the answer, each: far
    # above what a healthy API server takes, well below the 30 s in which a CLI must fail.
    # A watch waits its timeoutSeconds on top (fake_driver.api.apiclient.request_timeout).
    api_request: float = 15.0
    # A pod only the scheduler's unschedulable-queue flush retries: kept there at most
    # DefaultPodMaxInUnschedulablePodsDuration (5 min), flushed every 30 s (kubernetes
    # v1.34.4 pkg/scheduler/backend/queue/scheduling_queue.go), then scheduled.
    unschedulable_flush: float = 5 * 60.0 + 30.0
    # xdist workers sharing one session cluster: another worker starting it (control plane,
    # and real nodes with --real-nodes) ...
    shared_cluster_start: float = 600.0
    # ... and, before its owner stops it, the other workers finishing their last test (the
    # longest suites test, a real-node one, takes about a minute alone; more under load).
    workers_detach: float = 900.0
    # A quiet-host test waiting for the real-node modules another xdist worker of its run is
    # running (fixtures.parallel.scheduling: the longest takes about two minutes alone).
    sibling_real_nodes: float = 900.0


TIMEOUTS = Timeouts()


def _without_managed_fields(state: object) -> object:
    """An object's managedFields say who wrote which field, and fill the shown state before its
    status (what a timeout needs) is reached."""
    if isinstance(state, dict):
        return {k: _without_managed_fields(v) for k, v in state.items() if k != "managedFields"}
    if isinstance(state, list):
        return [_without_managed_fields(v) for v in state]
    return state


def _show(state: object) -> str:
    shown = _without_managed_fields(state)
    text = shown if isinstance(shown, str) else pprint.pformat(shown, width=100, compact=True)
    return text if len(text) <= _MAX_STATE_CHARS else text[:_MAX_STATE_CHARS] + " ...(truncated)"


def _transient(err: BaseException) -> bool:
    # A HarnessError (e.g. a component that exited) will not get better by waiting.
    return isinstance(err, Exception) and not isinstance(err, HarnessError)


def wait_for(
    observe: Callable[[], T],
    until: Callable[[T], bool] = bool,
    *,
    timeout: float,
    describe: str,
    interval: float = 0.2,
) -> T:
    """Poll `observe` until `until(value)`; return that value.

    Exceptions from `observe` count as "not yet", except HarnessError, which ends the wait.
    """
    last: list[object] = ["<nothing observed>"]

    def attempt() -> tuple[bool, T | None]:
        try:
            value = observe()
        except Exception as err:
            last[0] = f"{type(err).__name__}: {err}"
            raise
        last[0] = value
        return until(value), value

    retrying = Retrying(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(interval),
        retry=retry_if_exception(_transient) | retry_if_result(lambda r: not r[0]),
        reraise=False,
    )
    try:
        done, value = retrying(attempt)
    except RetryError:
        raise WaitTimeout(
            f"timed out after {timeout:g}s waiting for {describe}; last observed:\n{_show(last[0])}"
        ) from None
    assert done
    return value  # type: ignore[return-value]


def assert_stays(
    observe: Callable[[], T],
    holds: Callable[[T], bool],
    *,
    duration: float,
    describe: str,
    interval: float = 0.25,
) -> T:
    """Assert `holds(observe())` for the whole `duration`; fail at the first violation."""
    last: list[T] = []

    def attempt() -> bool:
        value = observe()
        last[:] = [value]
        if not holds(value):
            raise AssertionError(f"expected {describe} for {duration:g}s, but it broke:\n{_show(value)}")
        return True

    # Keep observing while it holds; running out of time is the success case.
    retrying = Retrying(
        stop=stop_after_delay(duration), wait=wait_fixed(interval), retry=retry_if_result(bool)
    )
    try:
        retrying(attempt)
    except RetryError:
        return last[0]
    raise AssertionError(f"assert_stays({describe}) ended without observing")  # unreachable by design
