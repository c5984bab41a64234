"""`scan --target 1.38`'s pure parts (harness.scan.shapes): each 1.38 rule found on a planted
slice, template and claim with its field, upstream's message and source line; --feature-gates
naming a removed gate or a locked one at another value; nothing for a target the cluster already
runs or an older one. The live version: suites/scan/test_target_1_38_shapes.py."""

from __future__ import annotations

from typing import Any

from fake_driver.rendering.apirules import DRIVER_PREFIX, NODE_SELECTOR_TERMS, SLASHES, VERSION_DIGITS
from harness.controlplane.gates import KnownGate
from harness.core.upgrade_facts import GATE_REMOVALS
from harness.kit.checks.detectors import Severity
from harness.kit.checks.migration import Workload
from harness.scan.checks import TARGET_CHECKS, Status, check_results
from harness.scan.shapes import (
    client_findings,
    deprecated_requests,
    feature_gate_flags,
    gate_flag_findings,
    shape_findings,
)
from harness.scan.state import ClusterState

DRIVER = "gpu.example.com"
TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}


def _slice(name: str, device: dict[str, Any], per_device: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": DRIVER, "devices": [{"name": "gpu-0", **device}]}
    if per_device:
        spec["perDeviceNodeSelection"] = True
    return {"metadata": {"name": name}, "spec": spec}


SLICES = [
    _slice("slashes", {"attributes": {"a.example.com/b/c": {"int": 1}}}),
    _slice("terms", {"nodeSelector": {"nodeSelectorTerms": [TERM, TERM]}}, per_device=True),
    _slice("digits", {"attributes": {"fw": {"version": "1234567890123456789.0.0"}}}),
    _slice("prefixed", {"capacity": {f"{DRIVER}/memory": {"value": "1Gi"}}}),
    _slice("fine", {"attributes": {"fw": {"version": "1.2.3"}}, "capacity": {"memory": {"value": "1Gi"}}}),
]
CLAIM_SPEC = {"devices": {"requests": [], "constraints": [{"matchAttribute": "a.example.com/b/c"}]}}
TEMPLATE = {"metadata": {"name": "t", "namespace": "ns"}, "spec": {"spec": CLAIM_SPEC}}
CLAIM = {"metadata": {"name": "c", "namespace": "ns"}, "spec": CLAIM_SPEC}


def test_each_1_38_rule_is_one_finding_on_its_planted_object() -> None:
    found = shape_findings(SLICES, [TEMPLATE], [CLAIM], "1.37", "1.38")

    assert [(f.severity, f.subject, f.message) for f in found] == [
        (
            Severity.BLOCKING,
            "resourceslice/slashes",
            "spec.devices[0].attributes = 'a.example.com/b/c': 1.38 rejects it, "
            f'"must not contain more than one slash" ({SLASHES.source})',
        ),
        (
            Severity.BLOCKING,
            "resourceslice/terms",
            "spec.devices[0].nodeSelector.nodeSelectorTerms = '2': 1.38 rejects it, "
            f'"must have exactly one node selector term" ({NODE_SELECTOR_TERMS.source})',
        ),
        (
            Severity.BLOCKING,
            "resourceslice/digits",
            "spec.devices[0].attributes[fw].version = '1234567890123456789.0.0': 1.38 rejects it, "
            '"must be a string compatible with semver.org spec 2.0.0, with at most 18 digits in numbers" '
            f"({VERSION_DIGITS.source})",
        ),
        (
            Severity.WARNING,
            "resourceslice/prefixed",
            f"spec.devices[0].capacity = '{DRIVER}/memory': 1.38 helper refuses it, "
            f'"use unqualified "memory", the driver name is added implicitly" ({DRIVER_PREFIX.source})',
        ),
        (
            Severity.BLOCKING,
            "resourceclaimtemplate/ns/t",
            "spec.spec.devices.constraints[0].matchAttribute = 'a.example.com/b/c': 1.38 rejects it, "
            f'"must not contain more than one slash" ({SLASHES.source})',
        ),
        (
            Severity.WARNING,
            "resourceclaim/ns/c",
            "spec.devices.constraints[0].matchAttribute = 'a.example.com/b/c': 1.38 rejects it, "
            f'"must not contain more than one slash" ({SLASHES.source})',
        ),
    ]
    assert {f.check for f in found} == {"rejected-shape"}
    assert "validation.go:1701-1702 @v1.38.0-beta.0" in SLASHES.source


def test_no_shape_finding_without_an_upgrade_across_1_38() -> None:
    assert shape_findings(SLICES, [TEMPLATE], [CLAIM], "1.38", "1.38") == []
    assert shape_findings(SLICES, [TEMPLATE], [CLAIM], "1.36", "1.37") == []
    assert len(shape_findings(SLICES, [TEMPLATE], [CLAIM], "1.36", "1.38")) == 6


def test_feature_gate_flags_in_both_spellings() -> None:
    c = {
        "command": ["kube-scheduler", "--feature-gates=A=true, B=False"],
        "args": ["--feature-gates", "C=false"],
    }
    assert feature_gate_flags(c) == {"A": "true", "B": "false", "C": "false"}


def _component(flags: str) -> dict[str, Any]:
    return {"containers": [{"name": "scheduler", "command": ["kube-scheduler", f"--feature-gates={flags}"]}]}


TABLE = {
    "DRADeviceBindingConditions": KnownGate("DRADeviceBindingConditions", True, "GA", True),
    "DRAConsumableCapacity": KnownGate("DRAConsumableCapacity", True, "GA", False),
}


def test_a_removed_gate_and_a_locked_one_in_component_flags() -> None:
    flags = "DynamicResourceAllocation=true,DRADeviceBindingConditions=false,DRAConsumableCapacity=false"
    mirror = {
        "metadata": {
            "name": "kube-scheduler-cp",
            "namespace": "kube-system",
            "ownerReferences": [{"kind": "Node", "name": "cp", "controller": True}],
        },
        "spec": _component(flags),
    }
    owned = {  # its Deployment is judged instead
        "metadata": {
            "name": "s-1",
            "namespace": "x",
            "ownerReferences": [{"kind": "ReplicaSet", "controller": True}],
        },
        "spec": _component(flags),
    }
    deployment = Workload("deployment", "x", "s", {"spec": _component("DynamicResourceAllocation=true")})

    found = gate_flag_findings([mirror, owned], [deployment], "1.37", "1.38", TABLE)

    [removal] = GATE_REMOVALS
    where = "pod/kube-system/kube-scheduler-cp container scheduler: --feature-gates"
    assert [(f.check, f.severity, f.subject, f.message) for f in found] == [
        (
            "gate-flag",
            Severity.BLOCKING,
            "pod/kube-system/kube-scheduler-cp",
            f"{where} DRADeviceBindingConditions=false: 1.38 locks it, the component exits with "
            '"cannot set feature gate DRADeviceBindingConditions to false, feature is locked to true" '
            "(k8s.io/component-base featuregate/feature_gate.go:426 @v0.38.0-beta.0)",
        ),
        (
            "gate-flag",
            Severity.BLOCKING,
            "pod/kube-system/kube-scheduler-cp",
            f"{where} DynamicResourceAllocation=true: 1.38 has no such gate, the component exits with "
            '"unrecognized feature gate: DynamicResourceAllocation" '
            f"(k8s.io/component-base featuregate/feature_gate.go:421 @v0.38.0-beta.0; {removal.source})",
        ),
        (
            "gate-flag",
            Severity.BLOCKING,
            "deployment/x/s",
            "deployment/x/s container scheduler: --feature-gates DynamicResourceAllocation=true: 1.38 has "
            'no such gate, the component exits with "unrecognized feature gate: DynamicResourceAllocation" '
            f"(k8s.io/component-base featuregate/feature_gate.go:421 @v0.38.0-beta.0; {removal.source})",
        ),
    ]
    # Without the target's gate table: the recorded removal still, no lock judged.
    assert [f.subject for f in gate_flag_findings([mirror], [], "1.37", "1.38", None)] == [
        "pod/kube-system/kube-scheduler-cp"
    ]
    assert gate_flag_findings([mirror], [deployment], "1.38", "1.38", TABLE) == []


def test_both_checks_are_target_checks_and_pass_when_nothing_is_found() -> None:
    assert {"gate-flag", "rejected-shape"} <= set(TARGET_CHECKS)
    state = ClusterState((1, 37), "v1.37.2", {}, [], [], [], [], [], [], [], [])
    results = {r.check: r for r in check_results(state, [], "nvidia.com/gpu", "1.38")}
    assert (results["rejected-shape"].status, results["rejected-shape"].why) == (
        Status.PASS,
        "nothing found for the step to 1.38",
    )


_G = "apiserver_requested_deprecated_apis"
METRICS = "\n".join(
    [
        f"# TYPE {_G} gauge",
        f'{_G}{{group="resource.k8s.io",removed_release="1.38",resource="resourceslices",subresource="",'
        'version="v1beta1"} 1',
        f'{_G}{{group="resource.k8s.io",removed_release="1.39",resource="deviceclasses",subresource="",'
        'version="v1beta2"} 1',
        f'{_G}{{group="flowcontrol.apiserver.k8s.io",removed_release="1.29",resource="flowschemas",'
        'subresource="status",version="v1beta2"} 1',
        'apiserver_request_total{code="200",group="",resource="pods",verb="LIST",version="v1"} 4',
    ]
)


def test_clients_of_deprecated_versions_from_the_api_servers_gauge() -> None:
    requests = deprecated_requests(METRICS)
    assert [r["version"] + "/" + r["resource"] for r in requests] == [
        "v1beta1/resourceslices",
        "v1beta2/deviceclasses",
        "v1beta2/flowschemas",
    ]

    found = client_findings(requests, "1.37", "1.38")

    source = f"{_G}, k8s.io/apiserver pkg/endpoints/metrics/metrics.go:64-72,589 @v0.37.2"
    assert [(f.check, f.severity, f.subject, f.message) for f in found] == [
        (
            "api-client",
            Severity.BLOCKING,
            "resource.k8s.io/v1beta1/resourceslices",
            "a client requested resource.k8s.io/v1beta1 resourceslices since the API server started; "
            f"1.38 no longer serves it ({source})",
        ),
        (
            "api-client",
            Severity.WARNING,
            "resource.k8s.io/v1beta2/deviceclasses",
            "a client requested resource.k8s.io/v1beta2 deviceclasses since the API server started; "
            f"1.39 no longer serves it ({source})",
        ),
    ]
    assert client_findings(requests, "1.38", "1.39")[0].severity == Severity.BLOCKING
    assert len(client_findings(requests, "1.38", "1.39")) == 1
