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

from fixtures.devicehealth import HealthCluster, Taint
from harness.clusters.realnodes import nvidiafaults as nf
from harness.clusters.realnodes.nvidiaroot import nvml_calls
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.errors import HarnessError
from harness.kit import kinds
from harness.kit.waits import TIMEOUTS, wait_for
from suites.device_health import checks
from suites.device_health.checks import FATAL, taint, wait_device

# Its own cluster runs gate profile dra-all (fixtures/devicehealth.py): no feature_gate markers,
# which would read the gates of the real_nodes cluster.
pytestmark = [pytest.mark.real_node, pytest.mark.older_kubelet_ok]


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
    checks.xid_taints_exactly_the_sick_device(nvidia_health)


def test_a_no_schedule_taint_keeps_new_claims_off_and_a_toleration_gets_the_device(
    nvidia_health: HealthCluster, health_namespace: str
) -> None:
    checks.no_schedule_keeps_new_claims_off_and_a_toleration_gets_the_device(nvidia_health, health_namespace)


def test_a_no_execute_rule_over_the_xid_key_evicts_a_claim_pod_and_a_bridged_pod_per_minor(
    nvidia_health: HealthCluster, health_namespace: str
) -> None:
    checks.no_execute_rule_evicts_a_claim_pod_and_a_bridged_pod_per_minor(nvidia_health, health_namespace)


def test_a_malformed_control_line_is_one_log_line_and_the_plugin_keeps_serving(
    nvidia_health: HealthCluster,
) -> None:
    h = nvidia_health
    with (h.root(h.node) / nf.FAULTS_FILE).open("a") as f:
        f.write("xid GPU-not-a-number x\n")
    h.inject("xid", "gpu-0", 48)  # after it: the plugin still waits for events and publishes
    wait_device(h, "gpu-0", taint("xid", 48))
    [line] = nf.stub_log(h.root(h.node))
    assert line.endswith('"xid GPU-not-a-number x": xid code "x" is not a number'), line


def test_two_devices_sick_with_different_events_at_once(nvidia_health: HealthCluster) -> None:
    checks.two_devices_sick_with_different_events_at_once(nvidia_health)


def test_taints_stay_after_the_device_recovers_until_the_plugin_restarts(
    nvidia_health: HealthCluster,
) -> None:
    checks.taints_stay_after_the_device_recovers_until_the_plugin_restarts(nvidia_health)


def test_a_lost_gpu_taints_every_device_of_the_node(nvidia_health: HealthCluster) -> None:
    checks.a_lost_gpu_taints_every_device_of_the_node(nvidia_health)


def test_an_unmonitored_gpu_is_tainted_from_the_plugins_first_event_after_its_start(
    nvidia_health: HealthCluster,
) -> None:
    """The plugin registers events at its start only (registerEventsForDevices), and queues the
    unmonitored taint then; its start's own publish (driver.go publishResources, GetDevice()
    without taints) can overwrite the slice the taint went into, so the taint shows for sure
    once a later event republishes the devices with their taints (deviceHealthEvents)."""
    h = nvidia_health
    h.inject("gpu-lost", "gpu-3")  # every device tainted: the restarted plugin's publish clears it
    wait_device(h, "gpu-0", taint("gpu-lost"))
    h.inject("unmonitored", "gpu-2")
    h.restart_plugin()
    lost = taint("gpu-lost")
    wait_for(
        h.taints,
        lambda got: all(lost not in t for t in got.values()),
        timeout=TIMEOUTS.api_object,
        describe="the restarted plugin's first publish (no gpu-lost left)",
    )
    h.inject("xid", "gpu-0", FATAL)
    clean: dict[str, list[Taint]] = {f"gpu-{i}": [] for i in range(4)}
    want = clean | {"gpu-0": [taint("xid", FATAL)], "gpu-2": [taint("unmonitored")]}
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
        } | {sick: [taint("xid", FATAL)]}
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
