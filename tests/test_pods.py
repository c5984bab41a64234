"""Parsing the scheduler's FitError message."""

from __future__ import annotations

import pytest

from harness.pods import unschedulable_reasons


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
