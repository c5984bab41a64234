"""wait_for / assert_stays: bounded, and on failure they show the last observed state."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from harness.core.errors import HarnessError, WaitTimeout
from harness.kit.waits import assert_stays, wait_for


def test_wait_for_returns_the_first_value_that_satisfies() -> None:
    counter = itertools.count()
    assert wait_for(lambda: next(counter), lambda v: v >= 3, timeout=5, describe="count", interval=0.001) == 3


def test_wait_for_timeout_names_the_wait_and_shows_the_last_state() -> None:
    with pytest.raises(WaitTimeout) as err:
        wait_for(
            lambda: {"phase": "Pending"},
            lambda p: False,
            timeout=0.2,
            describe="pod x Running",
            interval=0.05,
        )
    assert (
        str(err.value)
        == "timed out after 0.2s waiting for pod x Running; last observed:\n{'phase': 'Pending'}"
    )


def test_the_shown_state_leaves_out_managed_fields_so_the_status_is_seen() -> None:
    pod: dict[str, Any] = {
        "metadata": {
            "name": "a-0",
            "managedFields": [{"manager": "k8slocal", "fieldsV1": {"x": "y" * 5000}}],
        },
        "status": {"conditions": [{"type": "PodScheduled", "reason": "Unschedulable"}]},
    }
    with pytest.raises(WaitTimeout) as err:
        wait_for(lambda: pod, lambda p: False, timeout=0.1, describe="pod a-0 Running", interval=0.02)
    assert str(err.value).endswith(
        "last observed:\n{'metadata': {'name': 'a-0'},\n"
        " 'status': {'conditions': [{'reason': 'Unschedulable', 'type': 'PodScheduled'}]}}"
    )
    assert "managedFields" in pod["metadata"]  # the caller's object is left as it was


def test_wait_for_shows_the_last_error_when_observing_failed() -> None:
    def boom() -> int:
        raise KeyError("gone")

    with pytest.raises(WaitTimeout, match=r"last observed:\nKeyError: 'gone'$"):
        wait_for(boom, timeout=0.1, describe="thing", interval=0.02)


def test_wait_for_stops_at_once_on_a_harness_error() -> None:
    calls = itertools.count()

    def failing() -> int:
        next(calls)
        raise HarnessError("etcd exited early")

    with pytest.raises(HarnessError, match="etcd exited early"):
        wait_for(failing, timeout=5, describe="etcd healthy", interval=0.01)
    assert next(calls) == 1


def test_assert_stays_passes_when_the_condition_holds_throughout() -> None:
    assert (
        assert_stays(
            lambda: "Pending", lambda p: p == "Pending", duration=0.2, describe="Pending", interval=0.02
        )
        == "Pending"
    )


def test_assert_stays_fails_at_the_first_violation_with_the_state() -> None:
    states = iter(["Pending", "Pending", "Running"])
    with pytest.raises(AssertionError, match=r"^expected pod Pending for 5s, but it broke:\nRunning$"):
        assert_stays(
            lambda: next(states), lambda p: p == "Pending", duration=5, describe="pod Pending", interval=0.01
        )
