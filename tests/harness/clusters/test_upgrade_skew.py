"""Upstream's version-skew policy as the upgrade applies it (pure; the steps themselves run
against real control planes in suites/upgrade)."""

from __future__ import annotations

import pytest

from harness.clusters.local.kubelets import nodes_to_swap
from harness.clusters.local.upgrade import SKEW_POLICY, skew_refusal, storage_drops
from harness.core.errors import HarnessError


@pytest.mark.parametrize(
    ("current", "target", "kubelets"),
    [
        ("1.36", "1.37", ()),
        ("1.37", "1.36", ()),
        ("1.36", "1.37", ("1.34", "1.36")),
        ("1.35", "1.36", ("1.35",)),
    ],
)
def test_one_minor_up_or_down_within_kubelet_skew_is_allowed(
    current: str, target: str, kubelets: tuple[str, ...]
) -> None:
    assert skew_refusal(current, target, kubelets) is None


def test_a_skipped_minor_is_refused_citing_the_policy() -> None:
    assert skew_refusal("1.34", "1.37") == (
        f"1.34 -> 1.37 skips a minor: kube-apiserver moves one minor at a time ({SKEW_POLICY}); "
        "step through each minor"
    )


def test_the_same_minor_is_refused() -> None:
    assert skew_refusal("1.37", "1.37") == "the control plane already runs 1.37"


def test_a_downgrade_below_a_kubelet_is_refused() -> None:
    assert skew_refusal("1.37", "1.36", ["1.37", "1.34"]) == (
        "a kubelet of 1.37 would be newer than kube-apiserver 1.36, which the version-skew policy "
        f"forbids ({SKEW_POLICY}); replace those nodes first"
    )


def test_a_kubelet_four_minors_behind_the_target_is_refused() -> None:
    assert skew_refusal("1.36", "1.37", ["1.33"]) == (
        f"a kubelet of 1.33 would be more than 3 minors older than kube-apiserver 1.37 ({SKEW_POLICY}); "
        "upgrade those nodes first"
    )


def test_the_scheduling_alpha_storage_is_stranded_by_1_37_and_its_beta_by_the_way_back() -> None:
    assert [d.group_version for d in storage_drops("1.36", "1.37")] == ["scheduling.k8s.io/v1alpha2"]
    assert [d.group_version for d in storage_drops("1.37", "1.36")] == ["scheduling.k8s.io/v1beta1"]
    assert storage_drops("1.34", "1.35") == []


def test_1_38_strands_only_composite_pod_groups_on_the_way_back_to_1_37() -> None:
    assert storage_drops("1.37", "1.38") == []
    [drop] = storage_drops("1.38", "1.37")
    assert (drop.group_version, drop.resources) == ("scheduling.k8s.io/v1beta1", ("compositepodgroups",))


def test_an_upgrade_swaps_the_kubelets_of_the_old_minor_unless_they_are_kept() -> None:
    kubelets = {"a": "1.36", "b": "1.34", "c": "1.36"}
    assert nodes_to_swap(kubelets, "1.36", "1.37", "drain") == ["a", "c"]
    assert nodes_to_swap(kubelets, "1.36", "1.37", "in-place") == ["a", "c"]
    assert nodes_to_swap(kubelets, "1.36", "1.37", "keep") == []
    assert nodes_to_swap(kubelets, "1.37", "1.36", "drain") == []  # a downgrade swaps none


def test_an_unknown_kubelet_mode_is_one_line() -> None:
    with pytest.raises(HarnessError) as err:
        nodes_to_swap({}, "1.36", "1.37", "rolling")
    assert str(err.value) == "kubelets='rolling': one of drain, in-place, keep"
