"""Failure-mode detectors on crafted API objects."""

from __future__ import annotations

from typing import Any

from harness.kit.checks.detectors import (
    PoolAccount,
    Severity,
    account,
    class_mappings,
    detect_accounting_gaps,
    detect_bridge_unavailable,
    detect_double_stack,
    detect_selectors_matching_nothing,
    requested_extended_resources,
)

GPU = "nvidia.com/gpu"
DRIVER = "gpu.nvidia.com"


def node(name: str, gpus: int | None = None, pool: str = "a") -> dict[str, Any]:
    alloc = {"cpu": "8"} | ({GPU: str(gpus)} if gpus is not None else {})
    return {"metadata": {"name": name, "labels": {"pool": pool}}, "status": {"allocatable": alloc}}


def slice_(
    node_name: str, devices: int, driver: str = DRIVER, product: str = "NVIDIA H100 80GB HBM3"
) -> dict[str, Any]:
    return {
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"type": {"string": "gpu"}, "productName": {"string": product}},
                }
                for i in range(devices)
            ],
        }
    }


def dclass(name: str, expr: str, resource: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expr}}]}
    if resource:
        spec["extendedResourceName"] = resource
    return {"metadata": {"name": name}, "spec": spec}


def pod(
    name: str, limits: dict[str, str], phase: str = "Pending", init: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": limits}}]}
    if init:
        spec["initContainers"] = [{"name": "i", "resources": {"limits": init}}]
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec, "status": {"phase": phase}}


GPU_CLASS = dclass("gpu.nvidia.com", f'device.driver == "{DRIVER}"', GPU)


def test_double_stack_names_only_nodes_with_both_stacks() -> None:
    nodes = [node("both", 8), node("dp-only", 8), node("dra-only", 0)]
    slices = [slice_("both", 8), slice_("dra-only", 8)]
    findings = detect_double_stack(nodes, slices, [GPU_CLASS], GPU)
    assert [(f.check, f.severity, f.subject) for f in findings] == [
        ("double-stack", Severity.BLOCKING, "node/both")
    ]
    assert findings[0].message.startswith(
        f"advertises {GPU}: 8 through the device plugin and DRA driver {DRIVER}"
    )


def test_double_stack_without_a_mapping_class_uses_the_known_gpu_drivers() -> None:
    nodes, slices = [node("both", 4)], [slice_("both", 4)]
    assert detect_double_stack(nodes, slices, [], GPU) == []
    assert [f.subject for f in detect_double_stack(nodes, slices, [], GPU, gpu_drivers=[DRIVER])] == [
        "node/both"
    ]


def test_class_mappings_include_implicit_names() -> None:
    assert class_mappings([GPU_CLASS, dclass("plain", "true")]) == {
        "deviceclass.resource.kubernetes.io/gpu.nvidia.com": "gpu.nvidia.com",
        GPU: "gpu.nvidia.com",
        "deviceclass.resource.kubernetes.io/plain": "plain",
    }


def test_requested_extended_resources_sum_containers_and_max_init() -> None:
    p = pod("p", {GPU: "2", "cpu": "1"}, init={GPU: "3", "example.com/nic": "1"})
    assert requested_extended_resources(p) == {GPU: 3, "example.com/nic": 1}


def test_bridge_support_by_version_and_gate() -> None:
    assert [f.check for f in detect_bridge_unavailable((1, 35), {"DRAExtendedResource": False})] == [
        "bridge-support"
    ]
    assert [f.check for f in detect_bridge_unavailable((1, 34), {})] == ["bridge-support"]
    assert detect_bridge_unavailable((1, 36), {}) == []
    assert detect_bridge_unavailable((1, 35), {"DRAExtendedResource": True}) == []
    assert detect_bridge_unavailable((1, 37), {"DRAExtendedResource": True}) == []


def test_selectors_that_match_nothing_or_fail_at_runtime() -> None:
    slices = [slice_("n", 2)]
    classes = [
        GPU_CLASS,
        dclass("typo", f'device.attributes["{DRIVER}"].productName == "NVIDIA H100"', GPU),
        dclass("index", f'device.attributes["{DRIVER}"].index == 0'),
        dclass("exotic", 'device.attributes["x"].y.someExtension()'),
    ]
    found = {f.subject: (f.check, f.severity) for f in detect_selectors_matching_nothing(classes, slices)}
    assert found == {
        "deviceclass/typo": ("selector-matches-nothing", Severity.BLOCKING),
        "deviceclass/index": ("selector-runtime-error", Severity.BLOCKING),
        "deviceclass/exotic": ("selector-runtime-error", Severity.BLOCKING),
    }


def test_a_selector_over_the_cost_limit_is_not_judged() -> None:
    ten = "[" + ",".join(str(i) for i in range(10)) + "]"
    slow = "".join(f"{ten}.exists(v{i}, " for i in range(6)) + "false" + ")" * 6  # 10**6 bodies
    (found,) = detect_selectors_matching_nothing([dclass("slow", slow)], [slice_("n", 4)])
    assert (found.check, found.severity, found.subject) == (
        "selector-not-evaluated",
        Severity.WARNING,
        "deviceclass/slow",
    )
    assert found.message == (
        "its selector was not evaluated: over the cost limit: more than 1 s; not judged "
        '(kube-scheduler stops a selector at 1,000,000 cost units: "actual cost limit exceeded")'
    )


def test_accounting_per_pool() -> None:
    nodes = [node("a0", 8, "legacy"), node("b0", 0, "migrated"), node("b1", None, "migrated")]
    slices = [slice_("b0", 8), slice_("b1", 8)]
    claims = [
        {
            "status": {
                "allocation": {
                    "devices": {
                        "results": [{"pool": "b0", "device": "gpu-0"}, {"pool": "b1", "device": "gpu-3"}]
                    }
                }
            }
        }
    ]
    accounts = account(nodes, slices, claims, GPU, "pool")
    assert accounts == [PoolAccount("legacy", 1, 8, 0, 0), PoolAccount("migrated", 2, 0, 16, 2)]
    quotas = [{"metadata": {"name": "q", "namespace": "ns"}, "spec": {"hard": {f"requests.{GPU}": "4"}}}]
    gaps = detect_accounting_gaps(accounts, quotas, GPU, (1, 37))
    assert [(f.check, f.subject, f.severity) for f in gaps] == [
        ("accounting", "pool/migrated", Severity.INFO),
        ("quota-legacy-name", "resourcequota/ns/q", Severity.INFO),
    ]
    assert gaps[0].message.startswith(
        f"node allocatable {GPU} is 0 on 2 node(s) while ResourceSlices hold 16 devices (2 allocated)"
    )
    assert detect_accounting_gaps([], quotas, GPU, (1, 34))[0].severity is Severity.WARNING
