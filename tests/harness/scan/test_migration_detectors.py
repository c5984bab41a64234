"""The issue-37 detectors (harness.kit.checks.migration) on crafted API objects."""

from __future__ import annotations

from typing import Any

from harness.kit.checks.detectors import Severity
from harness.kit.checks.migration import (
    detect_served_both_ways,
    detect_time_slicing,
    detect_unmapped_legacy_requests,
)
from harness.scan.checks import Status, check_results, detect_pools
from harness.scan.cluster import run_checks
from harness.scan.state import ClusterState

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.10gb"


def node(name: str, **allocatable: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "8", **allocatable}}}


def pod(name: str, limits: dict[str, str], node_name: str = "", phase: str = "Running") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": limits}}]}
    if node_name:
        spec["nodeName"] = node_name
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def dclass(name: str, resource: str | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"extendedResourceName": resource} if resource else {}}


def test_an_unmapped_name_is_one_blocking_finding_naming_its_pods_and_pools() -> None:
    pods = [
        pod("mig-a", {MIG: "1"}, "dp-0"),
        pod("mig-b", {MIG: "1"}),
        pod("done", {MIG: "1"}, "dp-0", phase="Succeeded"),
        pod("gpu", {GPU: "1"}, "dp-0"),
    ]
    [finding] = detect_unmapped_legacy_requests(
        pods, [dclass("gpu.nvidia.com", GPU)], [node("dp-0", **{MIG: "7"})], {"dp-0": "legacy"}
    )

    assert (finding.check, finding.severity, finding.subject) == (
        "unmapped-legacy-resource",
        Severity.BLOCKING,
        f"extendedresource/{MIG}",
    )
    assert finding.message == (
        "no DeviceClass maps it and only a device plugin serves it (on 1 node(s)): they stay Pending "
        "once it leaves their pool; 2 pod(s) request it: ns/mig-a (pool legacy), ns/mig-b (not scheduled)"
    )
    assert finding.remediation == (
        f"create a DeviceClass with extendedResourceName: {MIG} selecting the devices that serve it "
        "(a MIG profile: one class per profile, selector type == 'mig' && profile == '1g.10gb'; the "
        "driver's chart renders none, dra-driver-nvidia-gpu#939), before the device plugin leaves the pool"
    )


def test_a_name_nothing_serves_says_pending_now_and_implicit_names_count_as_mapped() -> None:
    pods = [
        pod("odd", {"amd.com/gpu": "1"}),
        pod("implicit", {"deviceclass.resource.kubernetes.io/x": "1"}),
    ]
    [finding] = detect_unmapped_legacy_requests(pods, [dclass("x")], [node("n")])

    assert finding.subject == "extendedresource/amd.com/gpu"
    assert "no node advertises it: they cannot schedule now" in finding.message
    assert finding.remediation.endswith(
        "selecting the devices that serve it, before the device plugin leaves the pool"
    )


def test_no_device_class_at_all_still_names_every_requested_name() -> None:
    pods = [pod("a", {GPU: "1"}, "n"), pod("b", {MIG: "2"}, "n")]
    findings = detect_unmapped_legacy_requests(pods, [], [node("n", **{GPU: "8"})])
    assert [f.subject for f in findings] == [f"extendedresource/{GPU}", f"extendedresource/{MIG}"]
    assert detect_unmapped_legacy_requests([], [], []) == []


def shared_node(name: str, advertised: str, replicas: str = "4", count: str = "2") -> dict[str, Any]:
    labels = {"nvidia.com/gpu.replicas": replicas, "nvidia.com/gpu.count": count}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {GPU: advertised}}}


def test_time_slicing_counts_over_advertised_gpus_and_the_pods_that_will_not_fit() -> None:
    pods = [pod(f"p{i}", {GPU: "1"}, "ts") for i in range(5)] + [pod("two", {GPU: "2"}, "ts")]
    pods += [pod("gone", {GPU: "1"}, "ts", phase="Failed"), pod("elsewhere", {GPU: "1"}, "plain")]
    nodes = [shared_node("ts", "8"), node("plain", **{GPU: "8"}), shared_node("left", "0")]

    [finding] = detect_time_slicing(nodes, pods, GPU)

    assert (finding.check, finding.severity, finding.subject) == (
        "time-slicing",
        Severity.BLOCKING,
        "node/ts",
    )
    assert finding.message == (
        f"advertises {GPU}: 8 for 2 GPU(s) (device-plugin time-slicing, 4 replicas): 6 over-advertised; "
        "6 pod(s) use 7 here, 4 will not fit once DRA serves the node (a bridged pod gets whole devices)"
    )
    assert "consumable capacity (DRAConsumableCapacity" in finding.remediation


def test_time_slicing_that_current_pods_fit_is_a_warning_and_a_missing_count_label_is_derived() -> None:
    nodes = [shared_node("ts", "8", count="")]
    [finding] = detect_time_slicing(nodes, [pod("one", {GPU: "1"}, "ts")], GPU)
    assert finding.severity == Severity.WARNING
    assert finding.message.startswith(f"advertises {GPU}: 8 for 2 GPU(s)")


def test_the_scan_of_a_cluster_without_device_plugin_objects_or_device_classes_says_not_applicable() -> None:
    bare = ClusterState((1, 37), "v1.37.2", {}, [node("n")], [], [], [], [], [], [], [])
    pools = detect_pools(bare.nodes)
    findings = run_checks(bare, GPU, pools, [])
    results = {r.check: (r.status, r.why) for r in check_results(bare, findings, GPU, None)}
    assert results["unmapped-legacy-resource"] == (
        Status.NOT_APPLICABLE,
        "no pod requests an extended resource",
    )
    assert results["time-slicing"] == (
        Status.NOT_APPLICABLE,
        f"no node shares {GPU} by a convention it knows",
    )
    # Pods asking for device-plugin names in a cluster with no DeviceClass at all: named, BLOCKING.
    legacy = ClusterState(
        (1, 37), "v1.37.2", {}, [node("n", **{GPU: "8"})], [pod("a", {GPU: "1"}, "n")], [], [], [], [], [], []
    )
    [blocking] = [
        f for f in run_checks(legacy, GPU, detect_pools(legacy.nodes), []) if f.severity == Severity.BLOCKING
    ]
    assert (blocking.check, blocking.subject) == ("unmapped-legacy-resource", f"extendedresource/{GPU}")


def gpu_slice(node_name: str, n: int, driver: str = "gpu.nvidia.com") -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(n)]
    return {
        "spec": {"driver": driver, "nodeName": node_name, "pool": {"name": node_name}, "devices": devices}
    }


def test_a_node_serving_one_name_both_ways_is_named_with_the_minor_s_rule() -> None:
    gpu_class = {
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "extendedResourceName": GPU,
            "selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}],
        },
    }
    nodes = [node("both", **{GPU: "4"}), node("dra", **{GPU: "0"}), node("dp", **{GPU: "4"})]
    slices = [gpu_slice("both", 4), gpu_slice("dra", 4), gpu_slice("dp", 2, driver="nic.example.com")]

    [finding] = detect_served_both_ways(nodes, slices, [gpu_class, dclass("plain")], (1, 37))

    assert (finding.check, finding.severity, finding.subject) == (
        "served-both-ways",
        Severity.WARNING,
        "node/both",
    )
    assert finding.message == (
        f"serves {GPU} both ways: the device plugin advertises 4 and DRA publishes 4 device(s) DeviceClass "
        f"gpu.nvidia.com maps to it; Kubernetes 1.37 gives pods asking for {GPU} here the device plugin's "
        "devices and creates no claim (kubernetes#139141): the DRA devices serve only ResourceClaims"
    )
    assert detect_served_both_ways(nodes, [], [gpu_class], (1, 37)) == []


def test_time_slicing_under_the_renamed_shared_resource_is_counted_too() -> None:
    shared = f"{GPU}.shared"
    nodes = [shared_node("ts", "0") | {"status": {"allocatable": {shared: "8", GPU: "0"}}}]
    pods = [pod(f"p{i}", {shared: "1"}, "ts") for i in range(3)]
    [finding] = detect_time_slicing(nodes, pods, GPU)
    assert finding.message.startswith(
        f"advertises {shared}: 8 for 2 GPU(s) (device-plugin time-slicing, 4 replicas): 6 over-advertised; "
        "3 pod(s) use 3 here, 1 will not fit"
    )
