"""A pod wait that times out on the real scheduler shows what a vendor needs first: the
PodScheduled condition with the scheduler's reason and the FailedScheduling event."""

from __future__ import annotations

import pytest

from harness.core.errors import WaitTimeout
from harness.kit import builders as b
from harness.kit.kube import Kube
from harness.kit.pods import wait_phase


def test_a_pod_that_never_runs_times_out_with_its_condition_and_events(kube: Kube, namespace: str) -> None:
    kube.create(b.pod("nowhere", namespace, node_selector={"dra-harness.io/no-such-pool": "x"}))

    with pytest.raises(WaitTimeout) as err:
        wait_phase(kube, namespace, "nowhere", "Running", timeout=5)

    lines = str(err.value).splitlines()
    assert lines[0] == f"timed out after 5s waiting for pod {namespace}/nowhere Running:"
    assert lines[1] == "phase Pending, node -"
    condition = "  PodScheduled=False: Unschedulable "
    assert lines[2].startswith(condition), lines
    why = lines[2].removeprefix(condition)  # the scheduler's FitError ("0/N nodes ...", or no nodes)
    assert lines[3] == "events:"
    assert any(
        line.startswith("  Warning FailedScheduling (") and line.endswith(why) for line in lines[4:]
    ), lines
