"""Sick GPUs on NVIDIA's real kubelet plugin (fixtures/devicehealth.py: gate NVMLDeviceHealthCheck
on, faults made in the NVML stand-in while it runs). What the plugin does is read from
sigs.k8s.io/dra-driver-nvidia-gpu@v0.4.1 cmd/gpu-kubelet-plugin/device_health.go (same in
v0.5.0): an Xid event -> taint gpu.nvidia.com/xid=<code> (NoSchedule, None for the Xids
xidsToSkip names), GPU_IS_LOST from the event wait -> gpu.nvidia.com/gpu-lost NoSchedule on every
device (sendHealthEventForAllDevices), a GPU whose events cannot be registered ->
gpu.nvidia.com/unmonitored None on its devices, at start only (registerEventsForDevices); taints
are only ever added while it runs (allocatable.go AddOrUpdateTaint, driver.go
deviceHealthEvents). What Kubernetes then does: scheduling honours NoSchedule and tolerations,
a NoExecute DeviceTaintRule evicts (harness.core.expectations no_execute_evicts_bridged_pods for
pods that got the device through nvidia.com/gpu).
"""

from __future__ import annotations

import pytest

from fixtures.devicehealth import NV, HealthCluster, Taint
from harness.clusters.realnodes import nvidiafaults as nf
from harness.clusters.realnodes.nvidiaroot import nvml_calls
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.errors import HarnessError
from harness.core.expectations import device_taint_rule_api, no_execute_evicts_bridged_pods
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.nodepods import env_pod
from harness.kit.pods import phase, scheduling_message, unschedulable_reasons, wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, wait_for

# Its own cluster runs gate profile dra-all (fixtures/devicehealth.py): no feature_gate markers,
# which would read the gates of the real_nodes cluster.
pytestmark = [pytest.mark.real_node, pytest.mark.older_kubelet_ok]

XID = nf.TAINT_KEYS["xid"]
FATAL, NON_FATAL = 79, 13  # 79: fallen off the bus; 13: a graphics engine exception (skipped)
EXTENDED = "nvidia.com/gpu"  # the chart's gpu.nvidia.com class maps it (versions.toml)


def _taint(fault: str, code: int | None = None) -> Taint:
    t = nf.expected_taint(fault, code)
    return (t["key"], t.get("value", ""), t["effect"])


def _wait_device(h: HealthCluster, device: str, taint: Taint) -> None:
    wait_for(
        h.taints,
        lambda got: taint in got.get(device, []),
        timeout=TIMEOUTS.api_object,
        describe=f"{device} of {h.node} published with taint {taint}",
    )


def _uuid_request(
    h: HealthCluster, device: str, tolerations: list[dict[str, str]] | None = None
) -> dict[str, object]:
    cel = f"device.attributes['{NV}'].uuid == '{h.uuid(device)}'"
    return b.exact_request("gpu", NV, selectors=[cel], tolerations=tolerations or [])


def _claim_pod(h: HealthCluster, ns: str, name: str, request: dict[str, object]) -> None:
    h.kube.create(b.claim_template(name, ns, [request]))
    h.kube.create(env_pod(name, ns, h.image, h.node, claim_templates={"gpu": name}))


def _device_of(h: HealthCluster, ns: str, pod: str) -> str:
    [claim] = claims_of(h.kube, ns, pod)
    [result] = allocated_devices(claim)
    return str(result["device"])


def test_a_fault_on_a_node_with_the_gate_off_says_the_gate_is_off(nvidia_health: HealthCluster) -> None:
    h = nvidia_health
    with pytest.raises(HarnessError) as err:
        h.inject("xid", "gpu-0", FATAL, node=h.off_node)
    assert str(err.value) == nf.gate_off_line(h.off_node)
    # The running plugins agree: only the gated one made an event set and waits on it.
    events = {"nvmlEventSetCreate", "nvmlDeviceRegisterEvents", "nvmlEventSetWait_v2"}
    assert events & set(nvml_calls(h.root(h.off_node))) == set()
    assert events <= set(nvml_calls(h.root(h.node)))


def test_a_fault_for_a_device_that_does_not_exist_names_the_nodes_devices(
    nvidia_health: HealthCluster,
) -> None:
    with pytest.raises(HarnessError) as err:
        nvidia_health.inject("xid", "gpu-9", FATAL)
    assert str(err.value) == "node health-0 has no device gpu-9 (its devices: gpu-0, gpu-1, gpu-2, gpu-3)"


def test_an_xid_taints_exactly_the_sick_device(nvidia_health: HealthCluster) -> None:
    h = nvidia_health
    h.inject("xid", "gpu-1", FATAL)
    h.inject("xid", "gpu-2", NON_FATAL)
    want = {"gpu-0": [], "gpu-1": [(XID, "79", "NoSchedule")], "gpu-2": [(XID, "13", "None")], "gpu-3": []}
    assert h.wait_taints(want, "fatal Xid 79 on gpu-1, non-fatal Xid 13 on gpu-2") == want


def test_a_no_schedule_taint_keeps_new_claims_off_and_a_toleration_gets_the_device(
    nvidia_health: HealthCluster, health_namespace: str
) -> None:
    h, ns = nvidia_health, health_namespace
    h.inject("xid", "gpu-1", FATAL)  # already there after the test above: no change, no publish
    h.inject("xid", "gpu-2", NON_FATAL)
    _wait_device(h, "gpu-1", _taint("xid", FATAL))
    _wait_device(h, "gpu-2", _taint("xid", NON_FATAL))

    _claim_pod(h, ns, "plain", _uuid_request(h, "gpu-1"))
    tolerate = b.device_toleration(XID, "NoSchedule")
    _claim_pod(h, ns, "tolerant", _uuid_request(h, "gpu-1", [tolerate]))
    _claim_pod(h, ns, "non-fatal", _uuid_request(h, "gpu-2"))  # effect None keeps no one off
    pending = wait_unschedulable(h.kube, ns, "plain")
    for name in ("tolerant", "non-fatal"):
        wait_phase(h.kube, ns, name, "Running")

    assert unschedulable_reasons(scheduling_message(pending)).get("cannot allocate all claims") == 1
    assert (_device_of(h, ns, "tolerant"), _device_of(h, ns, "non-fatal")) == ("gpu-1", "gpu-2")


def test_a_no_execute_rule_over_the_xid_key_evicts_a_claim_pod_and_a_bridged_pod_per_minor(
    nvidia_health: HealthCluster, health_namespace: str
) -> None:
    h, ns = nvidia_health, health_namespace
    version = h.cluster.minor.number
    _claim_pod(h, ns, "claim", _uuid_request(h, "gpu-3"))
    wait_phase(h.kube, ns, "claim", "Running")  # before the bridged pod, which takes any device
    h.kube.create(env_pod("bridged", ns, h.image, h.node, limits={EXTENDED: "1"}))
    wait_phase(h.kube, ns, "bridged", "Running")
    bridged = _device_of(h, ns, "bridged")
    # The plugin's own NoSchedule taint keeps running pods where they are.
    for device in (bridged, "gpu-3"):
        h.inject("xid", device, FATAL)
        _wait_device(h, device, _taint("xid", FATAL))
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


def test_a_malformed_control_line_is_one_log_line_and_the_plugin_keeps_serving(
    nvidia_health: HealthCluster,
) -> None:
    h = nvidia_health
    with (h.root(h.node) / nf.FAULTS_FILE).open("a") as f:
        f.write("xid GPU-not-a-number x\n")
    h.inject("xid", "gpu-0", 48)  # after it: the plugin still waits for events and publishes
    _wait_device(h, "gpu-0", _taint("xid", 48))
    [line] = nf.stub_log(h.root(h.node))
    assert line.endswith('"xid GPU-not-a-number x": xid code "x" is not a number'), line


def test_taints_stay_after_the_device_recovers_until_the_plugin_restarts(
    nvidia_health: HealthCluster,
) -> None:
    h = nvidia_health
    h.inject("xid", "gpu-1", FATAL)
    _wait_device(h, "gpu-1", _taint("xid", FATAL))
    # No NVML event says a GPU recovered; a later event republishes every device, gpu-1 still tainted.
    h.inject("xid", "gpu-1", 94)
    _wait_device(h, "gpu-1", _taint("xid", 94))
    assert h.taints()["gpu-1"] == [_taint("xid", 94)]  # one taint per key: the newest Xid wins
    h.restart_plugin()  # taints live in the plugin's memory only
    want: dict[str, list[Taint]] = {f"gpu-{i}": [] for i in range(4)}
    assert h.wait_taints(want, "every taint gone after the plugin's restart") == want


def test_a_lost_gpu_taints_every_device_of_the_node(nvidia_health: HealthCluster) -> None:
    h = nvidia_health
    before = h.taints()
    h.inject("gpu-lost", "gpu-3")
    lost = _taint("gpu-lost")
    want = {d: sorted([*taints, lost]) for d, taints in before.items()}
    assert h.wait_taints(want, "gpu-lost on every device of the node") == want


def test_an_unmonitored_gpu_is_tainted_from_the_plugins_first_event_after_its_start(
    nvidia_health: HealthCluster,
) -> None:
    """The plugin registers events at its start only (registerEventsForDevices), and queues the
    unmonitored taint then; its start's own publish (driver.go publishResources, GetDevice()
    without taints) can overwrite the slice the taint went into, so the taint shows for sure
    once a later event republishes the devices with their taints (deviceHealthEvents)."""
    h = nvidia_health
    h.inject("gpu-lost", "gpu-3")  # every device tainted: the restarted plugin's publish clears it
    _wait_device(h, "gpu-0", _taint("gpu-lost"))
    h.inject("unmonitored", "gpu-2")
    h.restart_plugin()
    lost = _taint("gpu-lost")
    wait_for(
        h.taints,
        lambda got: all(lost not in t for t in got.values()),
        timeout=TIMEOUTS.api_object,
        describe="the restarted plugin's first publish (no gpu-lost left)",
    )
    h.inject("xid", "gpu-0", FATAL)
    clean: dict[str, list[Taint]] = {f"gpu-{i}": [] for i in range(4)}
    want = clean | {"gpu-0": [_taint("xid", FATAL)], "gpu-2": [_taint("unmonitored")]}
    assert h.wait_taints(want, "unmonitored on gpu-2, Xid on gpu-0") == want
    h.inject("recovered", "gpu-2")
    h.restart_plugin()
    assert h.wait_taints(clean, "no taint after gpu-2 recovered and a restart") == clean


def test_an_xid_on_a_static_mig_device_taints_that_mig_device_only(nvidia_health: HealthCluster) -> None:
    """NVML names a MIG device's event by its parent GPU with the GPU and compute instance ids;
    the plugin maps them back to the MIG device (device_health.go getDevicePlacementMap)."""
    h = nvidia_health
    assert h.cluster.real is not None
    ref = f"nvidia@{h.version}"
    mig = {"mode": "static", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "gpus": [0]}
    settings = {nf.HEALTH_SETTING: True}
    pool = RealPoolSpec(
        "healthmig",
        count=1,
        minor=h.kubelet,
        gpus=1,
        profile="a100-80gb-pcie",
        driver=ref,
        mig=mig,
        settings=settings,
    )
    node = pool.node_names()[0]
    try:
        h.cluster.real.add_pool(pool)
        sick = "gpu-0-mig-1g10gb-19-3"
        h.inject("xid", sick, FATAL, node=node)
        want: dict[str, list[Taint]] = {
            d: [] for d in ("gpu-0-mig-1g10gb-19-2", "gpu-0-mig-2g20gb-14-0", "gpu-0-mig-3g40gb-9-4")
        } | {sick: [_taint("xid", FATAL)]}
        got = wait_for(
            lambda: h.taints(node),
            lambda t: t == want,
            timeout=TIMEOUTS.api_object,
            describe=f"Xid 79 on {sick} of {node} only",
        )
        assert got == want
    finally:
        h.cluster.real.remove_pool(pool.name)  # and the driver's slices
        h.kube.delete(*kinds.NODE, node)
