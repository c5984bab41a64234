"""In-place control-plane upgrade and back with DRA workloads running (upstream's
test/e2e_dra/upgradedowngrade_test.go and extendedresources_test.go, on kwok nodes): pods of
every kind made before a step keep running with the same claims and devices, a pod deleted
while the step runs loses its claims, fresh pods of every kind allocate after it, and no device
is held twice. The gang's Workload API version changes between 1.36 and 1.37 in both
directions, so the step is refused until the gang is gone (harness.clusters.local.upgrade)."""

from __future__ import annotations

import pytest

from fixtures.upgrade import StartRehearsal
from harness.clusters.local.upgrade import SKEW_POLICY, UpgradeRefused, storage_drops
from harness.upgrade.rehearsal import StepResult, create_workloads, step

KINDS = ["bridged", "template", "mig", "gang"]


def _refusal(before: str, after: str, gang: str) -> str:
    [drop] = storage_drops(before, after)
    gv = drop.group_version
    return (
        f"2 object(s) stored as {gv}, which {after} cannot read ({drop.source}); delete them before the "
        f"step: {gv} workloads rehearsal/{gang}, {gv} podgroups rehearsal/{gang}"
    )


def _assert_step_kept_everything(result: StepResult, refused_for_gang: str) -> None:
    assert result.refused_first == _refusal(result.before, result.after, refused_for_gang)
    assert set(result.survivors.values()) == {"Running"}
    assert result.allocations_kept
    assert result.claims_left == []
    assert result.new_kinds == KINDS
    assert result.doubly_allocated == {}


def test_workloads_keep_running_and_their_devices_from_1_36_to_1_37_and_back(
    rehearsal: StartRehearsal,
) -> None:
    r = rehearsal("1.36", needs=["1.37"])
    with pytest.raises(UpgradeRefused, match=r"^1\.36 -> 1\.34 skips a minor") as refused:
        r.cluster.upgrade("1.34")
    assert str(refused.value).endswith(f"({SKEW_POLICY}); step through each minor")
    made = [create_workloads(r.kube, r.objects, r.fleet, "on-1.36", gang_minor="1.36")]

    up = step(r.cluster, r.kube, r.objects, r.fleet, made, "1.37")
    made.append(up.new)
    down = step(r.cluster, r.kube, r.objects, r.fleet, made, "1.36")

    assert r.kube.git_version() == r.cluster.matrix.minor("1.36").kubernetes
    _assert_step_kept_everything(up, "on-1.36-gang")
    _assert_step_kept_everything(down, "after-1.37-gang")
    # Each step deletes the newest bridged pod and, before it, the gang.
    assert sorted(down.survivors) == [
        "after-1.37-mig",
        "after-1.37-template",
        "on-1.36-mig",
        "on-1.36-template",
    ]
