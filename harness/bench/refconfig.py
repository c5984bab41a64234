"""The benchmark's workload as a performance-config for upstream's scheduler_perf
(k8s.io/kubernetes test/integration/scheduler_perf, config format in its scheduler_perf.go
and operations.go): the same nodes, the ResourceSlices as the fake driver renders them,
the same DeviceClass, claim template and pods, one test case per mode.

Objects come from the functions the benchmark itself creates them with (modes.py), so the
two cannot drift apart; only what scheduler_perf sets itself goes: names become
`{{.Index}}` templates or generateName, namespaces are the op's. Every file is JSON, which
is YAML, with Go text/template placeholders inside strings only.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

from fake_driver.api.apilimits import parse_minor
from fake_driver.rendering.slices import render_node
from harness.bench.modes import (
    GPU,
    GPUS_PER_NODE,
    NAMESPACE,
    POOL,
    bench_fleet,
    claim_template,
    device_class,
    pod,
)
from harness.clusters.nodes import KwokPoolSpec, node_manifest
from harness.core import expectations
from harness.kit.kube import Obj

INDEX = "{{.Index}}"
# A node name no real node has: it marks where the index goes in the rendered slices.
_SENTINEL = f"{POOL}-987654"
TEST_CASE_PREFIX = "DRAHarness"


@dataclass(frozen=True)
class RefConfig:
    files: dict[str, str]  # file name -> content, all in one directory
    test_cases: dict[str, str]  # mode -> test case name
    workload: str

    def bench_filter(self, mode: str) -> str:
        """The -test.bench pattern that runs exactly `mode`'s workload."""
        return f"^BenchmarkPerfScheduling$/^{self.test_cases[mode]}$/^{self.workload}$"


def _dump(obj: object) -> str:
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"


def _node(legacy: bool, gpus: int) -> Obj:
    pool = KwokPoolSpec(POOL, 1, extended_resources={GPU: str(gpus)} if legacy else {})
    node = node_manifest(pool, f"{POOL}-{INDEX}")
    node["metadata"]["labels"]["kubernetes.io/hostname"] = f"{POOL}-{INDEX}"
    # kwok reports the node Ready in the benchmark; scheduler_perf's nodes say so themselves.
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    node["status"]["phase"] = "Running"
    return node


def _slices(minor: str, gpus: int) -> list[str]:
    """One template per slice of a node, with the node's name made `bench-{{.Index}}`."""
    spec = bench_fleet([_SENTINEL], gpus).node(_SENTINEL)
    rendered = render_node(spec, parse_minor(minor))
    return [_dump(s).replace(_SENTINEL, f"{POOL}-{INDEX}") for s in rendered.slices]


def _unnamed(obj: Obj, generate: str | None = None) -> Obj:
    """Without name and namespace (scheduler_perf creates it in the op's namespace)."""
    out = copy.deepcopy(obj)
    out["metadata"].pop("namespace", None)
    if generate is not None:
        out["metadata"].pop("name")
        out["metadata"]["generateName"] = generate
    return out


def render(
    modes: tuple[str, ...], nodes: int, pods: int, minor: str, api: str, gpus: int = GPUS_PER_NODE
) -> RefConfig:
    """The performance-config and its templates for `modes` on `nodes` nodes, `pods` pods."""
    workload = f"{nodes}nodes_{pods}pods"
    slices = _slices(minor, gpus)
    files = {
        "node.yaml": _dump(_node(legacy=False, gpus=gpus)),
        "node-legacy.yaml": _dump(_node(legacy=True, gpus=gpus)),
        "deviceclass.yaml": _dump(device_class(api)),
        "deviceclass-bridged.yaml": _dump(device_class(api, bridged=True)),
        "claimtemplate.yaml": _dump(_unnamed(claim_template(api))),
        **{f"slice-{k}.yaml": text for k, text in enumerate(slices)},
    }
    cases, names = [], {}
    for mode in modes:
        files[f"pod-{mode}.yaml"] = _dump(_unnamed(pod(mode, "unused"), generate=f"{mode}-"))
        ops: list[Obj] = [
            {"opcode": "createNodes", "countParam": "$nodes", "nodeTemplatePath": _node_file(mode)},
            *(
                {"opcode": "createAny", "countParam": "$nodes", "templatePath": f"slice-{k}.yaml"}
                for k in range(len(slices))
            ),
            {"opcode": "createAny", "templatePath": _class_file(mode)},
        ]
        if mode == "claims":
            ops.append({"opcode": "createAny", "templatePath": "claimtemplate.yaml", "namespace": NAMESPACE})
        ops.append(
            {
                "opcode": "createPods",
                "countParam": "$pods",
                "namespace": NAMESPACE,
                "podTemplatePath": f"pod-{mode}.yaml",
                "collectMetrics": True,
            }
        )
        names[mode] = f"{TEST_CASE_PREFIX}_{mode}"
        cases.append(
            {
                "name": names[mode],
                # Named, not left to its default, where the gate exists: the framework starts
                # the resourceclaim controller (claims from templates) and serves
                # resource.k8s.io only when a test case enables it (scheduler_perf util.go
                # mustSetupCluster); 1.38 has no such gate and always does both.
                "featureGates": _feature_gates(minor),
                "workloadTemplate": ops,
                "workloads": [{"name": workload, "params": {"nodes": nodes, "pods": pods}}],
            }
        )
    files["performance-config.yaml"] = _dump(cases)
    return RefConfig(files, names, workload)


def _feature_gates(minor: str) -> dict[str, bool]:
    if expectations.dynamic_resource_allocation_gate(parse_minor(minor)):
        return {"DynamicResourceAllocation": True}
    return {}


def _node_file(mode: str) -> str:
    return "node-legacy.yaml" if mode == "legacy" else "node.yaml"


def _class_file(mode: str) -> str:
    return "deviceclass-bridged.yaml" if mode == "bridged" else "deviceclass.yaml"
