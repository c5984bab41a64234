"""The scan's reading of device taints and DeviceTaintRules (pure functions)."""

from __future__ import annotations

from harness.kit import builders as b
from harness.kit.checks.detectors import Severity
from harness.scan.taints import matched_devices, rule_findings, slice_taint_findings

NV = "gpu.nvidia.com"


def _slice(pool: str, *devices: dict[str, object]) -> dict[str, object]:
    return b.resource_slice(f"{pool}-s", driver=NV, node_name=pool, devices=list(devices))


def _tainted(name: str, effect: str, value: str | None = "79") -> dict[str, object]:
    taint = {"key": f"{NV}/xid", "effect": effect} | ({"value": value} if value else {})
    return b.device(name) | {"taints": [taint]}


def test_taints_are_counted_per_driver_and_none_effects_are_only_info() -> None:
    slices = [
        _slice("n0", _tainted("gpu-0", "NoSchedule"), b.device("gpu-1")),
        _slice("n1", _tainted("gpu-0", "None")),
    ]

    [finding] = slice_taint_findings(slices)

    assert (finding.check, finding.subject, finding.severity) == (
        "device-taints",
        f"driver/{NV}",
        Severity.WARNING,
    )
    assert finding.message == f"2 device(s) carry taints: 1 x {NV}/xid=79:NoSchedule, 1 x {NV}/xid=79:None"
    [info] = slice_taint_findings([_slice("n1", _tainted("gpu-0", "None", value=None))])
    assert (info.severity, info.message) == (Severity.INFO, f"1 device(s) carry taints: 1 x {NV}/xid:None")


def test_a_rule_matches_on_driver_pool_and_device_and_names_what_it_cannot_evaluate() -> None:
    slices = [_slice("n0", b.device("gpu-0"), b.device("gpu-1")), _slice("n1", b.device("gpu-0"))]
    whole_pool = b.device_taint_rule(
        "r", "resource.k8s.io/v1", driver=NV, pool="n0", device="x", key="k", effect="NoExecute"
    )
    del whole_pool["spec"]["deviceSelector"]["device"]
    whole_pool["spec"]["deviceSelector"]["selectors"] = [{"cel": {"expression": "true"}}]

    assert matched_devices(whole_pool, slices) == [(NV, "n0", "gpu-0"), (NV, "n0", "gpu-1")]
    [finding] = rule_findings([whole_pool], slices)
    assert (finding.subject, finding.severity) == ("devicetaintrule/r", Severity.WARNING)
    assert (
        finding.message
        == "taints 2 published device(s) with k:NoExecute (its selectors not evaluated by the scan)"
    )
