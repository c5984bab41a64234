"""The cleanup behind the `objects` fixture: newest first, and every step runs even when one fails."""

from __future__ import annotations

from functools import partial

import pytest

from harness.kit.objects import Cleanup


def test_undo_steps_run_newest_first() -> None:
    ran: list[str] = []
    cleanup = Cleanup()
    for name in ("class", "claim", "pod"):
        cleanup.defer(f"delete {name}", partial(ran.append, name))
    cleanup.cleanup()
    assert ran == ["pod", "claim", "class"]


def test_a_failing_step_does_not_stop_the_others_and_is_raised_naming_the_step() -> None:
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("server gone")

    cleanup = Cleanup()
    cleanup.defer("delete class", lambda: ran.append("class"))
    cleanup.defer("delete pod", broken)
    with pytest.raises(RuntimeError, match="server gone") as err:
        cleanup.cleanup()
    assert ran == ["class"]
    assert err.value.__notes__ == ["while cleaning up: delete pod"]
    cleanup.cleanup()  # nothing left to run twice
    assert ran == ["class"]
