"""The DRAExtendedResource gate ON -> OFF -> ON on a running control plane (upstream's
test/e2e_dra/featuregatecycle_test.go with extendedResourceGateCycle, on kwok nodes): with the
gate off, bridged pods keep running with their claims, a new DeviceClass loses its
extendedResourceName, a new bridged pod stays Pending without a claim, and deleting a pod still
removes its claim; with the gate on again a fresh pod allocates. 1.37 locks the gate (GA,
LockToDefault: pkg/features/kube_features.go@v1.37.2), so there the cycle runs emulating 1.36,
as upstream's does."""

from __future__ import annotations

import pytest

from fixtures.upgrade import StartRehearsal
from harness.clusters.local.components import Tuning
from harness.clusters.local.upgrade import UpgradeRefused, emulating, set_gates
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import claims_of, recorded_claim_names, wait_claims_gone
from harness.kit.pods import phase, scheduling_message, unschedulable_reasons, wait_unschedulable
from harness.kit.waits import TIMEOUTS, assert_stays
from harness.upgrade.rehearsal import bridged_pod, pod_allocations, wait_running

GATE = "DRAExtendedResource"


@pytest.mark.parametrize(
    ("minor", "tuning"), [("1.36", None), ("1.37", emulating("1.36"))], ids=["1.36", "1.37-as-1.36"]
)
def test_bridged_pods_survive_the_gate_off_and_fresh_ones_allocate_when_it_is_on_again(
    rehearsal: StartRehearsal, minor: str, tuning: Tuning | None
) -> None:
    r = rehearsal(minor, "defaults", tuning=tuning)
    kube, objects, ns = r.kube, r.objects, r.fleet.namespace
    for name in ("survivor", "to-delete"):
        objects.create(bridged_pod(r.fleet, name))
    wait_running(kube, ns, ["survivor", "to-delete"])
    kept = pod_allocations(kube, ns, ["survivor", "to-delete"])

    set_gates(r.cluster, {GATE: False})

    assert wait_running(kube, ns, ["survivor", "to-delete"]) == {
        "survivor": "Running",
        "to-delete": "Running",
    }
    assert pod_allocations(kube, ns, ["survivor", "to-delete"]) == kept
    assert all(devices for claims in kept.values() for _, _, devices in claims)
    mapped = b.device_class("post-off", selectors=["true"], extended_resource_name="example.com/post-off")
    assert "extendedResourceName" not in objects.create(mapped)["spec"]
    objects.create(bridged_pod(r.fleet, "probe-off"))
    stuck = wait_unschedulable(kube, ns, "probe-off")
    assert unschedulable_reasons(scheduling_message(stuck)) == {
        f"Insufficient {r.fleet.extended_resource}": 2,
        "node(s) didn't match Pod's node affinity/selector": 1,
    }
    assert_stays(
        lambda: kube.get(*kinds.POD, "probe-off", ns),
        lambda p: (
            phase(p) == "Pending" and recorded_claim_names(p) == [] and not claims_of(kube, ns, "probe-off")
        ),
        duration=TIMEOUTS.stays_pending,
        describe="probe pod Pending without a claim",
    )
    [(doomed, _, _)] = kept["to-delete"]
    kube.delete(*kinds.POD, "to-delete", ns)
    wait_claims_gone(kube, ns, [doomed])
    kube.delete(*kinds.POD, "probe-off", ns)

    set_gates(r.cluster, {})

    assert pod_allocations(kube, ns, ["survivor"]) == {"survivor": kept["survivor"]}
    objects.create(bridged_pod(r.fleet, "fresh"))
    wait_running(kube, ns, ["survivor", "fresh"])
    [(_, _, devices)] = pod_allocations(kube, ns, ["fresh"])["fresh"]
    assert len(devices) == 1
    assert devices[0] not in kept["survivor"][0][2]


def test_1_37_refuses_the_gate_off_without_emulating_an_earlier_minor(rehearsal: StartRehearsal) -> None:
    r = rehearsal("1.37", "defaults")
    with pytest.raises(UpgradeRefused) as refused:
        set_gates(r.cluster, {GATE: False})
    assert str(refused.value) == (
        f"{GATE} is locked to true in 1.37 (GA); "
        "start the cluster with --emulated-version of an earlier minor"
    )
    assert r.cluster.known_gates[GATE].locked
