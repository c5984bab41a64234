"""A failed wait on a pod shows its story first (pure): conditions with reasons, containers
that are not running, and its events, newest last."""

from __future__ import annotations

from harness.kit.kube import Obj
from harness.kit.pods import pod_story

POD: Obj = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"nodeName": "ex-0"},
    "status": {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "not ready: [c]"},
        ],
        "containerStatuses": [
            {"name": "c", "state": {"waiting": {"reason": "CreateContainerError", "message": "CDI device"}}},
            {"name": "d", "state": {"running": {"startedAt": "t"}}},
        ],
    },
}


def _event(reason: str, message: str, at: str, count: int = 1) -> Obj:
    return {"type": "Warning", "reason": reason, "message": message, "lastTimestamp": at, "count": count}


def test_the_story_has_conditions_waiting_containers_and_events_in_order() -> None:
    events = [
        _event(
            "FailedPrepareDynamicResources",
            "NodePrepareResources: plugin not found",
            "2026-12-05T10:00:02Z",
            3,
        ),
        _event(
            "FailedScheduling",
            "0/2 nodes are available: 2 cannot allocate all claims.",
            "2026-12-05T10:00:01Z",
        ),
    ]
    assert pod_story(POD, events).splitlines() == [
        "phase Pending, node ex-0",
        "  PodScheduled=True",
        "  Ready=False: ContainersNotReady not ready: [c]",
        "  container c waiting: CreateContainerError CDI device",
        "events:",
        "  Warning FailedScheduling (1x): 0/2 nodes are available: 2 cannot allocate all claims.",
        "  Warning FailedPrepareDynamicResources (3x): NodePrepareResources: plugin not found",
    ]


def test_a_pod_without_status_or_events_says_so() -> None:
    assert pod_story({"metadata": {"name": "p"}, "spec": {}}, []) == "phase -, node -\nevents: none"
