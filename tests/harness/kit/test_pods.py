"""Parsing the scheduler's FitError message."""

from __future__ import annotations

import pytest

from harness.kit.pods import unschedulable_reasons


def test_one_reason() -> None:
    message = (
        "0/1 nodes are available: 1 cannot allocate all claims. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert unschedulable_reasons(message) == {"cannot allocate all claims": 1}


def test_several_reasons_with_counts() -> None:
    message = (
        "0/5 nodes are available: 2 Insufficient nvidia.com/gpu, "
        "3 node(s) didn't match Pod's node affinity/selector. preemption: not helpful."
    )
    assert unschedulable_reasons(message) == {
        "Insufficient nvidia.com/gpu": 2,
        "node(s) didn't match Pod's node affinity/selector": 3,
    }


def test_text_after_the_reasons_differs_by_minor() -> None:
    message = (  # 1.36.3: the DRA PostFilter adds its own words before "preemption:"
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert unschedulable_reasons(message) == {"cannot allocate all claims": 1}


def test_other_text_is_refused() -> None:
    with pytest.raises(ValueError, match="not a scheduler FitError message"):
        unschedulable_reasons("pod has unbound immediate PersistentVolumeClaims")


def test_a_verdict_keeps_the_pods_own_reasons_and_drops_other_tests_nodes() -> None:
    from harness.kit.pods import own_reasons, verdict

    before = (
        "0/3 nodes are available: 1 cannot allocate all claims, "
        "2 node(s) didn't match Pod's node affinity/selector. preemption: not helpful"
    )
    after = (
        "0/6 nodes are available: 1 cannot allocate all claims, 1 node(s) were unschedulable, "
        "1 node(s) had untolerated taint(s), 3 node(s) didn't match Pod's node affinity/selector."
    )
    assert own_reasons(before) == own_reasons(after) == {"cannot allocate all claims": 1}
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": before}
    assert verdict(cond) == verdict({**cond, "message": after})
    assert verdict(cond) != verdict({**cond, "message": after.replace("1 cannot", "2 cannot")})
    error = {**cond, "reason": "SchedulerError", "message": "CEL runtime error: no such key: index"}
    assert verdict(error) == error
    assert verdict(None) is None
