"""Test bodies shared by NVIDIA's real plugin (test_nvidia_device_health.py, faults in the NVML
stand-in) and the fake driver's nvidia-v0.5/v0.4 personalities on kwok nodes
(test_fake_device_health.py, faults with the fake driver's fault API): the same taints, the
same scheduler and eviction behaviour, asserted against the real control plane. Each body
reads the node's taints before it starts, so it holds on a node earlier tests left sick.
"""

from __future__ import annotations

from fixtures.devicehealth import NV, HealthTarget, Taint
from harness.clusters.realnodes import nvidiafaults as nf
from harness.core.expectations import device_taint_rule_api, no_execute_evicts_bridged_pods
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.pods import phase, scheduling_message, unschedulable_reasons, wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, wait_for

XID = nf.TAINT_KEYS["xid"]
FATAL, NON_FATAL = 79, 13  # 79: fallen off the bus; 13: a graphics engine exception (skipped)
EXTENDED = "nvidia.com/gpu"  # the chart's gpu.nvidia.com class maps it (versions.toml)


def taint(fault: str, code: int | None = None) -> Taint:
    t = nf.expected_taint(fault, code)
    return (t["key"], t.get("value", ""), t["effect"])


def with_taint(before: dict[str, list[Taint]], device: str, new: Taint) -> dict[str, list[Taint]]:
    """`before` after `new` on `device`: one taint per key, the newest value wins
    (cmd/gpu-kubelet-plugin/allocatable.go AddOrUpdateTaint @ v0.4.1:328, v0.5.0:354)."""
    kept = [t for t in before[device] if t[0] != new[0]]
    return before | {device: sorted([*kept, new])}


def wait_device(h: HealthTarget, device: str, want: Taint) -> None:
    wait_for(
        h.taints,
        lambda got: want in got.get(device, []),
        timeout=TIMEOUTS.api_object,
        describe=f"{device} of {h.node} published with taint {want}",
    )


def uuid_request(
    h: HealthTarget, device: str, tolerations: list[dict[str, str]] | None = None
) -> dict[str, object]:
    cel = f"device.attributes['{NV}'].uuid == '{h.uuid(device)}'"
    return b.exact_request("gpu", h.gpu_class, selectors=[cel], tolerations=tolerations or [])


def device_of(h: HealthTarget, ns: str, pod: str) -> str:
    [claim] = claims_of(h.kube, ns, pod)
    [result] = allocated_devices(claim)
    return str(result["device"])


def xid_taints_exactly_the_sick_device(h: HealthTarget) -> None:
    before = h.taints()
    h.inject("xid", "gpu-1", FATAL)
    h.inject("xid", "gpu-2", NON_FATAL)
    want = with_taint(with_taint(before, "gpu-1", taint("xid", FATAL)), "gpu-2", taint("xid", NON_FATAL))
    assert want["gpu-1"] == [(XID, "79", "NoSchedule")]
    assert want["gpu-2"] == [(XID, "13", "None")]
    assert h.wait_taints(want, "fatal Xid 79 on gpu-1, non-fatal Xid 13 on gpu-2") == want


def two_devices_sick_with_different_events_at_once(h: HealthTarget) -> None:
    """Xid 79 on gpu-0 and Xid 13 on gpu-1 at once, then Xid 48 on gpu-0: gpu-0's value
    changes, gpu-1 keeps its own, gpu-2 and gpu-3 stay as they were."""
    before = h.taints()
    h.inject("xid", "gpu-0", FATAL)
    h.inject("xid", "gpu-1", NON_FATAL)
    both = with_taint(with_taint(before, "gpu-0", taint("xid", FATAL)), "gpu-1", taint("xid", NON_FATAL))
    assert h.wait_taints(both, "Xid 79 on gpu-0 and Xid 13 on gpu-1") == both
    h.inject("xid", "gpu-0", 48)
    later = with_taint(both, "gpu-0", taint("xid", 48))
    assert (later["gpu-0"], later["gpu-1"]) == ([(XID, "48", "NoSchedule")], [(XID, "13", "None")])
    assert h.wait_taints(later, "Xid 48 replaces gpu-0's 79, gpu-1 keeps 13") == later


def no_schedule_keeps_new_claims_off_and_a_toleration_gets_the_device(h: HealthTarget, ns: str) -> None:
    h.inject("xid", "gpu-1", FATAL)  # on a node that has it already: no change, no publish
    h.inject("xid", "gpu-2", NON_FATAL)
    wait_device(h, "gpu-1", taint("xid", FATAL))
    wait_device(h, "gpu-2", taint("xid", NON_FATAL))

    h.claim_pod(ns, "plain", uuid_request(h, "gpu-1"))
    tolerate = b.device_toleration(XID, "NoSchedule")
    h.claim_pod(ns, "tolerant", uuid_request(h, "gpu-1", [tolerate]))
    h.claim_pod(ns, "non-fatal", uuid_request(h, "gpu-2"))  # effect None keeps no one off
    pending = wait_unschedulable(h.kube, ns, "plain")
    for name in ("tolerant", "non-fatal"):
        wait_phase(h.kube, ns, name, "Running")

    assert unschedulable_reasons(scheduling_message(pending)).get("cannot allocate all claims") == 1
    assert (device_of(h, ns, "tolerant"), device_of(h, ns, "non-fatal")) == ("gpu-1", "gpu-2")


def no_execute_rule_evicts_a_claim_pod_and_a_bridged_pod_per_minor(h: HealthTarget, ns: str) -> None:
    version = h.minor
    h.claim_pod(ns, "claim", uuid_request(h, "gpu-3"))
    wait_phase(h.kube, ns, "claim", "Running")  # before the bridged pod, which takes any device
    h.bridged_pod(ns, "bridged", EXTENDED)
    wait_phase(h.kube, ns, "bridged", "Running")
    bridged = device_of(h, ns, "bridged")
    # The plugin's own NoSchedule taint keeps running pods where they are.
    for device in (bridged, "gpu-3"):
        h.inject("xid", device, FATAL)
        wait_device(h, device, taint("xid", FATAL))
    assert [phase(h.kube.get(*kinds.POD, n, ns)) for n in ("claim", "bridged")] == ["Running", "Running"]

    # The platform team's rules, the bridged pod's first: when the claim pod is gone, the
    # controller has seen both.
    api = device_taint_rule_api(version)
    rules = [f"{ns}-{d}" for d in (bridged, "gpu-3")]
    for rule, device in zip(rules, (bridged, "gpu-3"), strict=True):
        h.kube.create(
            b.device_taint_rule(rule, api, driver=NV, pool=h.node, device=device, key=XID, effect="NoExecute")
        )
    try:
        left = wait_for(
            lambda: sorted(p["metadata"]["name"] for p in h.kube.list(*kinds.POD, ns)),
            lambda names: "claim" not in names,
            timeout=TIMEOUTS.deletion,
            describe="claim pod evicted by the NoExecute DeviceTaintRule",
        )
        evicted = ["bridged", "claim"] if no_execute_evicts_bridged_pods(version) else ["claim"]
        # The taint eviction controller's own word, not a kubelet's (kwok nodes have none).
        said = wait_for(
            lambda: eviction_events(h, ns),
            lambda got: got == evicted,
            timeout=TIMEOUTS.api_object,
            describe=f"DeviceTaintManagerEviction events for {evicted}",
        )
        assert said == evicted
        if no_execute_evicts_bridged_pods(version):
            left = wait_for(
                lambda: sorted(p["metadata"]["name"] for p in h.kube.list(*kinds.POD, ns)),
                lambda names: names == [],
                timeout=TIMEOUTS.deletion,
                describe="bridged pod evicted by the NoExecute DeviceTaintRule",
            )
            assert left == []
        else:
            assert left == ["bridged"]
            assert phase(h.kube.get(*kinds.POD, "bridged", ns)) == "Running"
    finally:
        for rule in rules:
            h.kube.delete(api, "DeviceTaintRule", rule)


def eviction_events(h: HealthTarget, ns: str) -> list[str]:
    """Pods the device taint eviction controller marked for deletion: its event
    (pkg/controller/devicetainteviction/device_taint_eviction.go emitPodDeletionEvent,
    "DeviceTaintManagerEviction" "Marking for deletion" @ v1.36.3:1658, v1.37.2:1649,
    v1.38.0-beta.0:1660)."""
    return sorted(
        {
            e["involvedObject"]["name"]
            for e in h.kube.list(*kinds.EVENT, ns)
            if e.get("reason") == "DeviceTaintManagerEviction" and e.get("message") == "Marking for deletion"
        }
    )


def taints_stay_after_the_device_recovers_until_the_plugin_restarts(h: HealthTarget) -> None:
    h.inject("xid", "gpu-1", FATAL)
    wait_device(h, "gpu-1", taint("xid", FATAL))
    # No NVML event says a GPU recovered; a later event republishes every device, gpu-1 still tainted.
    h.inject("xid", "gpu-1", 94)
    wait_device(h, "gpu-1", taint("xid", 94))
    assert h.taints()["gpu-1"] == [taint("xid", 94)]  # one taint per key: the newest Xid wins
    h.restart_plugin()  # taints live in the plugin's memory only
    want: dict[str, list[Taint]] = {f"gpu-{i}": [] for i in range(4)}
    assert h.wait_taints(want, "every taint gone after the plugin's restart") == want


def a_lost_gpu_taints_every_device_of_the_node(h: HealthTarget) -> None:
    before = h.taints()
    h.inject("gpu-lost", "gpu-3")
    lost = taint("gpu-lost")
    want = {d: sorted([*taints, lost]) for d, taints in before.items()}
    assert h.wait_taints(want, "gpu-lost on every device of the node") == want
