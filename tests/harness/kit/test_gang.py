"""Rendering of the version-hiding gang builder (harness/kit/gang.py)."""

from __future__ import annotations

import pytest

from harness.core.errors import HarnessError
from harness.kit import builders as b
from harness.kit.gang import gang_api, gang_objects, join_gang, pod_group_kind


def test_1_35_is_one_v1alpha1_workload_and_pod_workload_ref() -> None:
    api = gang_api("1.35")
    assert gang_objects(api, "train", "ns", min_count=4) == [
        {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "train", "namespace": "ns"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}}]},
        }
    ]
    pod = join_gang(b.pod("p", "ns"), api, "train")
    assert pod["spec"]["workloadRef"] == {"name": "train", "podGroup": "workers"}
    assert "schedulingGroup" not in pod["spec"]
    assert api.scheduled_condition is None
    with pytest.raises(HarnessError, match=r"1\.35 has no PodGroup kind"):
        pod_group_kind(api)


def test_1_36_is_v1alpha2_workload_and_pod_group_with_template_ref() -> None:
    api = gang_api("1.36")
    workload, pod_group = gang_objects(api, "train", "ns", min_count=2)
    assert workload == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
    }
    assert pod_group == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}},
            "schedulingPolicy": {"gang": {"minCount": 2}},
        },
    }
    pod = join_gang(b.pod("p", "ns"), api, "train")
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "train"}
    assert "workloadRef" not in pod["spec"]
    assert (api.scheduled_condition, pod_group_kind(api)) == (
        "PodGroupScheduled",
        ("scheduling.k8s.io/v1alpha2", "PodGroup"),
    )


def test_1_37_is_v1beta1_with_workload_ref_and_initially_scheduled() -> None:
    api = gang_api("1.37")
    workload, pod_group = gang_objects(api, "train", "ns", min_count=5)
    assert workload["apiVersion"] == pod_group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert workload["spec"] == {
        "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 5}}}]
    }
    assert pod_group["spec"] == {
        "workloadRef": {"workloadName": "train", "templateName": "workers"},
        "schedulingPolicy": {"gang": {"minCount": 5}},
    }
    pod = join_gang(b.pod("p", "ns"), api, "train")
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "train"}
    assert api.scheduled_condition == "PodGroupInitiallyScheduled"


def test_join_gang_leaves_the_original_pod_alone() -> None:
    original = b.pod("p", "ns")
    join_gang(original, gang_api("1.37"), "train")
    assert "schedulingGroup" not in original["spec"]


def test_minors_without_a_gang_api_and_bad_min_count_are_refused() -> None:
    with pytest.raises(HarnessError, match=r"Kubernetes 1\.34 has no gang scheduling API"):
        gang_api("1.34")
    with pytest.raises(HarnessError, match="minCount must be >= 1, got 0"):
        gang_objects(gang_api("1.36"), "train", "ns", min_count=0)
