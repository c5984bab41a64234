"""The scan's ambiguous-mapping detector, its pools from cloud providers' node labels, the list
of every check with its status, and the JUnit file, on crafted API objects."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from harness.kit.checks.detectors import Severity, detect_ambiguous_mappings, mapping_claimants
from harness.kit.kube import Obj
from harness.scan.checks import (
    NO_POOL,
    Status,
    bridging_statements,
    check_results,
    detect_pools,
    gates_statement,
    render_junit,
)
from harness.scan.cluster import ScanResult, run_checks
from harness.scan.render import render_markdown
from harness.scan.state import ClusterState
from harness.scan.target import newer_kubelets

GPU = "nvidia.com/gpu"
DRIVER = "gpu.nvidia.com"


def dclass(name: str, created: str, resource: str | None = None, driver: str = DRIVER) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if resource:
        spec["extendedResourceName"] = resource
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def pod(name: str, phase: str = "Pending", resource: str = GPU) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "resources": {"limits": {resource: "1"}}}]}
    meta = {"name": name, "namespace": "team", "uid": f"uid-{name}"}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": "8"}}}


def slice_(node_name: str, driver: str = DRIVER) -> dict[str, Any]:
    devices = [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}]
    return {
        "spec": {"driver": driver, "nodeName": node_name, "pool": {"name": node_name}, "devices": devices}
    }


GPU_CLASS = dclass("gpu.nvidia.com", "2026-01-01T00:00:00Z", GPU)
STANDIN = dclass("standin", "2026-01-02T00:00:00Z", GPU, driver="standin.example.com")


def state(**kw: Any) -> ClusterState:
    fields: dict[str, Any] = {
        "version": (1, 37),
        "git_version": "v1.37.2",
        "gates": {"DRAExtendedResource": True},
        "nodes": [],
        "pods": [],
        "daemonsets": [],
        "classes": [],
        "slices": [],
        "claims": [],
        "templates": [],
        "quotas": [],
    }
    return ClusterState(**(fields | kw))


def test_two_classes_on_one_name_block_and_name_the_pending_pods() -> None:
    pods = [pod("waiting"), pod("done", phase="Succeeded"), pod("other", resource="example.com/nic")]
    [finding] = detect_ambiguous_mappings(
        [STANDIN, GPU_CLASS, dclass("plain", "2026-01-03T00:00:00Z")], pods, (1, 37)
    )
    assert (finding.check, finding.severity, finding.subject) == (
        "ambiguous-mapping",
        Severity.BLOCKING,
        f"extendedresource/{GPU}",
    )
    assert finding.message == (
        "mapped by 2 DeviceClasses (gpu.nvidia.com, standin): kube-scheduler maps it to the newest, "
        "standin, and drops the name when any of them is deleted until it restarts; "
        "1 Pending pod(s) request it: team/waiting"
    )


def test_classes_created_in_one_second_prefer_the_lower_name_and_1_34_is_unstable() -> None:
    same = [dclass("b", "2026-01-01T00:00:00Z", GPU), dclass("a", "2026-01-01T00:00:00Z", GPU)]
    assert mapping_claimants(same)[GPU] == ["b", "a"]  # the preferred one last
    [finding] = detect_ambiguous_mappings(same, [], (1, 34))
    assert finding.message == (
        "mapped by 2 DeviceClasses (b, a): kube-scheduler uses whichever the informer lists last, "
        "not always the same one; no Pending pod requests it"
    )


def test_an_explicit_name_equal_to_another_class_implicit_name_is_ambiguous() -> None:
    clash = dclass("clash", "2026-01-02T00:00:00Z", "deviceclass.resource.kubernetes.io/gpu.nvidia.com")
    [finding] = detect_ambiguous_mappings([GPU_CLASS, clash], [], (1, 37))
    assert finding.subject == "extendedresource/deviceclass.resource.kubernetes.io/gpu.nvidia.com"


def test_pools_come_from_gke_and_eks_labels_and_unlabelled_nodes_are_named() -> None:
    nodes = [
        node("gke-a", {"cloud.google.com/gke-nodepool": "h100-pool", "dra-harness.io/pool": "x"}),
        node("eks-a", {"eks.amazonaws.com/nodegroup": "gpu-ng"}),
        node("karp-a", {"karpenter.sh/nodepool": "gpu-ng"}),
        node("cp-0", {}),
    ]
    pools = detect_pools(nodes)
    assert pools.of == {
        "gke-a": "h100-pool",
        "eks-a": "gpu-ng (eks.amazonaws.com/nodegroup)",
        "karp-a": "gpu-ng (karpenter.sh/nodepool)",
        "cp-0": NO_POOL,
    }
    assert pools.lines() == [
        "pools (detected): by cloud.google.com/gke-nodepool, eks.amazonaws.com/nodegroup, "
        "karpenter.sh/nodepool",
        "  (no pool label): 1 node(s): cp-0",
        "  gpu-ng (eks.amazonaws.com/nodegroup): 1 node(s): eks-a",
        "  gpu-ng (karpenter.sh/nodepool): 1 node(s): karp-a",
        "  h100-pool: 1 node(s): gke-a",
    ]
    override = detect_pools(nodes, "dra-harness.io/pool")
    assert override.of == {"gke-a": "x", "eks-a": NO_POOL, "karp-a": NO_POOL, "cp-0": NO_POOL}
    assert override.lines()[0] == "pools (--pool-label dra-harness.io/pool): by dra-harness.io/pool"


def test_bridging_names_the_pools_whose_devices_the_class_selects() -> None:
    nodes = [
        node("a", {"cloud.google.com/gke-nodepool": "h100"}),
        node("b", {"cloud.google.com/gke-nodepool": "cpu"}),
    ]
    s = state(nodes=nodes, classes=[GPU_CLASS], slices=[slice_("a"), slice_("b", driver="nic.example.com")])
    assert bridging_statements(s, detect_pools(nodes), True) == [
        f"bridging: {GPU} -> DeviceClass gpu.nvidia.com on pools h100"
    ]
    s2 = state(nodes=nodes, classes=[GPU_CLASS, STANDIN], slices=[slice_("a")])
    assert bridging_statements(s2, detect_pools(nodes), True) == [
        f"bridging: {GPU}: not reliable, 2 DeviceClasses map it (ambiguous-mapping)"
    ]


def test_every_check_is_listed_and_the_junit_file_has_one_case_each() -> None:
    nodes = [node("a", {"eks.amazonaws.com/nodegroup": "gpu"})]
    s = state(nodes=nodes, classes=[GPU_CLASS, STANDIN], slices=[slice_("a")], pods=[pod("waiting")])
    pools = detect_pools(nodes)
    findings = run_checks(s, GPU, pools, [DRIVER])
    results = {r.check: r for r in check_results(s, findings, GPU, None)}
    assert results["ambiguous-mapping"].status is Status.BLOCKING
    assert results["bridge-support"].status is Status.PASS
    assert results["bridge-support"].why == "DRAExtendedResource is on (the API server's metrics)"
    assert results["double-stack"].status is Status.PASS
    assert (results["device-plugin-leftover"].status, results["device-plugin-leftover"].why) == (
        Status.NOT_APPLICABLE,
        "Kubernetes 1.37 bridges pods to nodes a device plugin left",
    )
    assert (results["api-removal"].status, results["api-removal"].why) == (
        Status.NOT_APPLICABLE,
        "no --target given",
    )
    junit = ET.fromstring(render_junit(list(results.values()), "v1.37.2"))
    cases = {c.get("name"): c for c in junit.iter("testcase")}
    assert len(cases) == len(results) == int(junit.get("tests", "0"))
    failure = cases["ambiguous-mapping"].find("failure")
    assert failure is not None
    assert failure.get("type") == "BLOCKING"
    assert cases["api-removal"].find("skipped") is not None
    assert cases["bridge-support"].find("failure") is None


def test_a_downgrade_target_names_kubelets_newer_than_it() -> None:
    def node(name: str, version: str) -> Obj:
        return {"metadata": {"name": name}, "status": {"nodeInfo": {"kubeletVersion": version}}}

    found = newer_kubelets([node("a", "v1.37.2"), node("b", "v1.36.3"), node("c", "fake")], "1.36")
    assert [(f.check, f.severity, f.subject, f.message) for f in found] == [
        (
            "kubelet-newer",
            Severity.BLOCKING,
            "node/a",
            "kubelet v1.37.2 would be newer than kube-apiserver 1.36",
        )
    ]


def _result(st: ClusterState) -> ScanResult:
    pools = detect_pools(st.nodes)
    findings = run_checks(st, GPU, pools, [DRIVER])
    return ScanResult(
        st, findings, pools, check_results(st, findings, GPU, None), bridging_statements(st, pools, True)
    )


def test_the_gates_statement_lists_dra_gates_on_and_off_or_says_none_are_visible() -> None:
    gates = {
        "DRAExtendedResource": True,
        "DRAPartitionableDevices": False,
        "GenericWorkload": True,
        "Other": True,
    }
    assert gates_statement(state(gates=gates)) == (
        "DRA gates (kube-apiserver): on: DRAExtendedResource, GenericWorkload; off: DRAPartitionableDevices"
    )
    assert gates_statement(state(gates={})).startswith("DRA gates: not visible")


def test_markdown_has_the_verdict_every_check_and_the_findings_with_their_fixes() -> None:
    st = state(
        nodes=[node("gke-a", {"cloud.google.com/gke-nodepool": "gpu-pool"})],
        slices=[slice_("gke-a")],
        classes=[GPU_CLASS, STANDIN],
        pods=[pod("waiting")],
    )
    result = _result(st)
    md = render_markdown(result)
    lines = md.splitlines()
    assert lines[0] == "### dra-harness scan: NOT READY"
    assert "- DRA gates (kube-apiserver): on: DRAExtendedResource; off: none" in lines
    checks_at, findings_at = (
        lines.index("| status | check | why |"),
        lines.index("| severity | check | subject | finding | fix |"),
    )
    check_rows = [line for line in lines[checks_at + 2 : findings_at] if line.startswith("| ")]
    assert [r.split(" | ")[1] for r in check_rows] == [c.check for c in result.checks]
    rows = lines[findings_at + 2 :]
    [ambiguous] = [r for r in rows if r.startswith("| BLOCKING | ambiguous-mapping | extendedresource/")]
    assert ambiguous.count(" | ") == 4  # severity, check, subject, finding, fix: no unescaped pipe
    assert lines[-1].startswith("_not checked: the nodes' side (driver roots, containerd's CDI set-up")
