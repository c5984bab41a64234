"""Invariants (harness/kit/checks/invariants.py) on crafted API objects, and the pure rendering parts
of the rollout (harness/rollout.py): device-plugin DaemonSet affinity and the DeviceClass."""

from __future__ import annotations

from typing import Any

from fake_driver.api import apilimits
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.ledger import Ledger
from harness.kit.checks.invariants import (
    EXTENDED_RESOURCE_CLAIM,
    Snapshot,
    check,
    double_allocations,
    legacy_in_use,
    not_running,
    orphaned_claims,
    over_promises,
    stale_reservations,
)
from harness.rollout import device_plugin_affinity, gpu_device_class

DRIVER = "gpu.nvidia.com"
GPU = "nvidia.com/gpu"


def claim(
    name: str,
    devices: list[tuple[str, str]] = (),  # type: ignore[assignment]
    reserved: list[tuple[str, str]] = (),  # type: ignore[assignment]
    owner: tuple[str, str] | None = None,
    scheduler_created: bool = False,
    ns: str = "ns",
    admin: bool = False,
    share: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner[0], "uid": owner[1], "controller": True}
        ]
    if scheduler_created:
        meta["annotations"] = {EXTENDED_RESOURCE_CLAIM: "true"}
    status: dict[str, Any] = {}
    if devices:
        results = [
            {"request": "r", "driver": DRIVER, "pool": p, "device": d}
            | ({"adminAccess": True} if admin else {})
            | ({"shareID": f"{share}-{name}"} if share else {})
            for p, d in devices
        ]
        status["allocation"] = {"devices": {"results": results}}
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": n, "uid": u} for n, u in reserved]
    return {"metadata": meta, "spec": {}, "status": status}


def pod(
    name: str,
    uid: str,
    phase: str = "Running",
    node: str | None = "n0",
    gpus: int = 0,
    bridged_claim: str | None = None,
    ns: str = "ns",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main"}]}
    if gpus:
        spec["containers"][0]["resources"] = {"limits": {GPU: str(gpus)}}
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": phase}
    if bridged_claim:
        status["extendedResourceClaimStatus"] = {
            "resourceClaimName": bridged_claim,
            "requestMappings": [{"containerName": "main", "resourceName": GPU, "requestName": "r"}],
        }
    return {"metadata": {"name": name, "namespace": ns, "uid": uid}, "spec": spec, "status": status}


def slice_(pool: str, devices: int, shareable: bool = False) -> dict[str, Any]:
    return {
        "spec": {
            "driver": DRIVER,
            "nodeName": pool,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{i}"} | ({"allowMultipleAllocations": True} if shareable else {})
                for i in range(devices)
            ],
        }
    }


# -- double allocation ----------------------------------------------------------------------


def test_distinct_devices_are_fine() -> None:
    claims = [claim("a", [("n0", "gpu-0")]), claim("b", [("n0", "gpu-1")]), claim("c", [("n1", "gpu-0")])]
    assert double_allocations(claims, [slice_("n0", 2), slice_("n1", 2)]) == []


def test_same_device_in_two_claims_is_named_with_both_holders() -> None:
    claims = [claim("b", [("n0", "gpu-0")]), claim("a", [("n0", "gpu-0"), ("n0", "gpu-1")])]
    assert double_allocations(claims, [slice_("n0", 2)]) == [
        f"device {DRIVER}/n0/gpu-0 allocated 2 times: ns/a, ns/b"
    ]


def test_same_device_twice_in_one_claim_is_a_double_allocation() -> None:
    assert double_allocations([claim("a", [("n0", "gpu-0"), ("n0", "gpu-0")])], [slice_("n0", 1)]) == [
        f"device {DRIVER}/n0/gpu-0 allocated 2 times: ns/a, ns/a"
    ]


def test_shareable_device_and_admin_access_may_be_held_twice() -> None:
    shared = [claim("a", [("n0", "gpu-0")]), claim("b", [("n0", "gpu-0")])]
    assert double_allocations(shared, [slice_("n0", 1, shareable=True)]) == []
    admin = [claim("a", [("n0", "gpu-0")]), claim("b", [("n0", "gpu-0")], admin=True)]
    assert double_allocations(admin, [slice_("n0", 1)]) == []


def test_shares_are_not_double_allocations_even_once_their_slice_is_gone() -> None:
    # Another test's cleanup may delete the slice between the claims' and the slices' list.
    shares = [claim("a", [("n0", "gpu-0")], share="s"), claim("b", [("n0", "gpu-0")], share="s")]
    assert double_allocations(shares, []) == []
    mixed = [claim("a", [("n0", "gpu-0")], share="s"), claim("b", [("n0", "gpu-0")])]
    assert double_allocations(mixed, []) == [f"device {DRIVER}/n0/gpu-0 allocated 2 times: ns/a, ns/b"]


def test_unallocated_claims_hold_nothing() -> None:
    assert double_allocations([claim("a"), claim("b")], []) == []


# -- reservations -------------------------------------------------------------------------------


def test_reservation_for_a_live_pod_with_the_same_uid_is_fine() -> None:
    assert stale_reservations([claim("c", reserved=[("p", "u1")])], [pod("p", "u1")]) == []


def test_reservation_for_a_gone_pod_a_recreated_pod_and_a_done_pod() -> None:
    claims = [
        claim("gone", reserved=[("ghost", "u0")]),
        claim("recreated", reserved=[("p", "old")]),
        claim("done", reserved=[("q", "u2")]),
    ]
    pods = [pod("p", "new"), pod("q", "u2", phase="Succeeded")]
    assert stale_reservations(claims, pods) == [
        "claim ns/gone is reserved for pod ns/ghost, which does not exist",
        "claim ns/recreated is reserved for pod ns/p, which has uid new, not old",
        "claim ns/done is reserved for pod ns/q, which is Succeeded",
    ]


def test_reservation_matches_pods_by_namespace() -> None:
    assert stale_reservations([claim("c", reserved=[("p", "u1")], ns="a")], [pod("p", "u1", ns="b")]) == [
        "claim a/c is reserved for pod a/p, which does not exist"
    ]


def test_non_pod_consumers_are_not_judged() -> None:
    c = claim("c")
    c["status"]["reservedFor"] = [{"apiGroup": "example.com", "resource": "things", "name": "t", "uid": "x"}]
    assert stale_reservations([c], []) == []


# -- orphaned scheduler-created claims ---------------------------------------------------------


def test_scheduler_created_claim_recorded_by_its_live_owner_is_fine() -> None:
    c = claim("p-extended-resources-x", owner=("p", "u1"), scheduler_created=True)
    assert orphaned_claims([c], [pod("p", "u1", bridged_claim="p-extended-resources-x")]) == []


def test_unbound_owner_may_not_record_its_claim_yet() -> None:
    c = claim("p-extended-resources-x", owner=("p", "u1"), scheduler_created=True)
    assert orphaned_claims([c], [pod("p", "u1", phase="Pending", node=None)]) == []


def test_orphans_gone_owner_no_owner_and_a_duplicate() -> None:
    claims = [
        claim("gone", owner=("ghost", "u0"), scheduler_created=True),
        claim("ownerless", scheduler_created=True),
        claim("recreated", owner=("p", "old"), scheduler_created=True),
        claim("dup", owner=("q", "u2"), scheduler_created=True),
        claim("kept", owner=("q", "u2"), scheduler_created=True),
    ]
    pods = [pod("p", "new"), pod("q", "u2", bridged_claim="kept")]
    assert orphaned_claims(claims, pods) == [
        "scheduler-created claim ns/gone is owned by pod ghost, which is gone",
        "scheduler-created claim ns/ownerless has no owner pod",
        "scheduler-created claim ns/recreated is owned by pod p, which is gone",
        "scheduler-created claim ns/dup is owned by bound pod q, which records 'kept' instead",
    ]


def test_other_claims_and_deleting_claims_are_not_orphans() -> None:
    template_claim = claim("from-template", owner=("ghost", "u0"))
    deleting = claim("deleting", owner=("ghost", "u0"), scheduler_created=True)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert orphaned_claims([template_claim, deleting], []) == []


# -- running -----------------------------------------------------------------------------------


def test_not_running_names_missing_and_pending_pods() -> None:
    pods = [pod("a", "1"), pod("b", "2", phase="Pending", node=None), pod("c", "3", phase="")]
    assert not_running(pods, [("ns", "a"), ("ns", "b"), ("ns", "c"), ("ns", "d")]) == [
        "pod ns/b should be Running but is Pending",
        "pod ns/c should be Running but is without phase",
        "pod ns/d should be Running but does not exist",
    ]


def test_check_combines_every_invariant() -> None:
    snap = Snapshot(
        pods=[pod("p", "u1")],
        claims=[claim("c", [("n0", "gpu-0")], reserved=[("gone", "u0")])],
        slices=[slice_("n0", 1)],
        all_claims=[claim("c", [("n0", "gpu-0")]), claim("d", [("n0", "gpu-0")], ns="other")],
    )
    assert check(snap, running=[("ns", "p"), ("ns", "q")]) == [
        f"device {DRIVER}/n0/gpu-0 allocated 2 times: ns/c, other/d",
        "claim ns/c is reserved for pod ns/gone, which does not exist",
        "pod ns/q should be Running but does not exist",
    ]


# -- ledger over-promise -------------------------------------------------------------------------


def _ledger(gpus: int = 2) -> Ledger:
    fleet = fleet_from_dict(
        {"pools": [{"name": "a", "nodes": ["n0"], "profile": "h100-80gb-hbm3", "gpus": gpus}]}
    )
    return Ledger.for_fleet(fleet, apilimits.parse_minor("1.37"))


def test_legacy_in_use_skips_bridged_done_and_unbound_pods() -> None:
    pods = [
        pod("legacy", "1", gpus=1),
        pod("legacy2", "2", gpus=2, node="n1"),
        pod("bridged", "3", gpus=1, bridged_claim="c"),
        pod("done", "4", gpus=1, phase="Succeeded"),
        pod("pending", "5", gpus=1, phase="Pending", node=None),
    ]
    assert legacy_in_use(pods, GPU) == {"n0": 1, "n1": 2}


def test_legacy_and_dra_within_the_node_is_not_an_over_promise() -> None:
    ledger = _ledger(2)
    claims = [claim("c", [("n0", "gpu-1")])]
    assert over_promises(ledger, ["n0"], [pod("legacy", "1", gpus=1)], claims, GPU) == []


def test_legacy_plus_dra_beyond_the_node_is_an_over_promise() -> None:
    ledger = _ledger(2)
    claims = [claim("c", [("n0", "gpu-0")])]
    assert over_promises(ledger, ["n0"], [pod("legacy", "1", gpus=2)], claims, GPU) == [
        f"node n0 over-promised by 1 GPU(s): 2 legacy {GPU} in use"
        " + 1 GPU(s) allocated through DRA > 2 physical"
    ]


def test_one_gpu_in_two_claims_is_a_ledger_conflict() -> None:
    ledger = _ledger(2)
    claims = [claim("a", [("n0", "gpu-0")]), claim("b", [("n0", "gpu-0")])]
    [problem] = over_promises(ledger, ["n0"], [], claims, GPU)
    uuid = ledger.dra(DRIVER, "n0", "gpu-0").gpu_uuid
    assert problem == f"GPU {uuid} on n0 held by claim ns/a, claim ns/b"


def test_devices_of_other_nodes_and_drivers_are_ignored() -> None:
    other = claim("x", [("elsewhere", "gpu-0")])
    foreign = claim("y", [("n0", "gpu-0")])
    foreign["status"]["allocation"]["devices"]["results"][0]["driver"] = "gpu.example.com"
    assert over_promises(_ledger(1), ["n0"], [pod("legacy", "1", gpus=1)], [other, foreign], GPU) == []


# -- rollout rendering ---------------------------------------------------------------------------

EXCLUDE = {"key": "dra-harness.io/gpu-stack", "operator": "NotIn", "values": ["dra"]}


def test_affinity_from_nothing_is_one_term_with_the_exclusion() -> None:
    assert device_plugin_affinity(None) == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [EXCLUDE]}]
            }
        }
    }


def test_affinity_exclusion_goes_into_every_ored_term_and_keeps_the_rest() -> None:
    nvidia = {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}
    preferred = [{"weight": 1, "preference": {"matchExpressions": [nvidia]}}]
    current = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [nvidia]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]},
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        },
        "podAntiAffinity": {"x": 1},
    }
    out = device_plugin_affinity(current)
    assert out == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [nvidia, EXCLUDE]},
                    {
                        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}],
                        "matchExpressions": [EXCLUDE],
                    },
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        },
        "podAntiAffinity": {"x": 1},
    }
    assert current["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][  # type: ignore[index]
        "nodeSelectorTerms"
    ][0] == {"matchExpressions": [nvidia]}, "input left unmodified"


def test_affinity_is_idempotent_and_merges_values_of_an_existing_notin() -> None:
    once = device_plugin_affinity(None)
    assert device_plugin_affinity(once) == once
    merged = device_plugin_affinity(once, values=["retired", "dra"])
    assert merged["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{**EXCLUDE, "values": ["dra", "retired"]}]}
    ]


def test_gpu_device_class_maps_the_legacy_name() -> None:
    assert gpu_device_class("gpu.nvidia.com", DRIVER, GPU) == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
            "extendedResourceName": GPU,
        },
    }
