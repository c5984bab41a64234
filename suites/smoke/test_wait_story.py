"""A pod wait that times out on the real scheduler shows what a vendor needs first: the
PodScheduled condition with the scheduler's reason and the FailedScheduling event."""

from __future__ import annotations

import re

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
    # The scheduler's FitError ("0/N nodes are available: ...", or no nodes at all), in the
    # condition and in its events; their texts may differ (N changes on a shared cluster, and the
    # event of the latest attempt may not be written yet), so the form is what is asserted.
    fit_error = r"(0/\d+ nodes are available: |no nodes available to schedule pods)"
    assert re.match(rf"  PodScheduled=False: Unschedulable {fit_error}", lines[2]), lines
    assert lines[3] == "events:"
    events = [
        line for line in lines[4:] if re.match(rf"  Warning FailedScheduling \(\d+x\): {fit_error}", line)
    ]
    assert events, lines
