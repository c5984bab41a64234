"""The scan's reading of device taints and DeviceTaintRules (pure functions)."""

from __future__ import annotations

import json

from harness.kit import builders as b
from harness.kit.checks.detectors import Severity
from harness.scan.cluster import evaluate, render_json, render_text
from harness.scan.render import render_markdown
from harness.scan.state import ClusterState
from harness.scan.taints import (
    health_label,
    matched_devices,
    rule_findings,
    slice_taint_findings,
    tainted_pool_findings,
    taints_by_pool,
    view_json,
    view_lines,
    view_markdown,
)

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


def _rule(name: str, pool: str, device: str | None, key: str, effect: str) -> dict[str, object]:
    rule = b.device_taint_rule(
        name, "resource.k8s.io/v1", driver=NV, pool=pool, device=device or "x", key=key, effect=effect
    )
    if device is None:
        del rule["spec"]["deviceSelector"]["device"]
    return rule


def test_tainted_devices_are_listed_by_pool_with_each_taint_its_source_and_meaning() -> None:
    lost = {"key": f"{NV}/gpu-lost", "effect": "NoSchedule", "timeAdded": "2026-12-07T19:00:00Z"}
    slices = [
        _slice("n0", _tainted("gpu-0", "NoSchedule"), _tainted("gpu-1", "None", "13"), b.device("gpu-2")),
        _slice("n1", b.device("gpu-0") | {"taints": [lost]}, b.device("gpu-1") | {"taints": [lost]}),
        _slice("n2", b.device("gpu-0")),
    ]
    # gpu-0 of n0 already carries the driver's taint: the rule adds a second, not a device.
    rules = [_rule("drain", "n0", "gpu-0", "maint.example.com/drain", "NoExecute")]

    view = taints_by_pool(slices, rules)

    assert [(p.pool, p.node, p.devices, len(p.tainted), p.kept_off) for p in view] == [
        ("n0", "n0", 3, 2, 1),
        ("n1", "n1", 2, 2, 2),
    ]
    assert view_lines(view) == [
        f"tainted devices in {NV} pool n0 (node n0): 2 of 3 devices tainted, 1 kept off new claims",
        f"  gpu-0: {NV}/xid=79:NoSchedule [NVIDIA device health: Xid 79 (fatal)] from the driver's "
        "ResourceSlice n0-s: new claims do not get it unless they tolerate the taint",
        "  gpu-0: maint.example.com/drain:NoExecute from DeviceTaintRule drain: pods using it are "
        "evicted; new claims do not get it unless they tolerate the taint",
        f"  gpu-1: {NV}/xid=13:None [NVIDIA device health: Xid 13 (not fatal, an application error "
        "the plugin skips by default)] from the driver's ResourceSlice n0-s: informational: "
        "scheduling is unaffected",
        f"tainted devices in {NV} pool n1 (node n1): 2 of 2 devices tainted, 2 kept off new claims",
        f"  gpu-0: {NV}/gpu-lost:NoSchedule [NVIDIA device health: GPU lost (NVML lost the GPU; the plugin "
        "taints every device of the node)] from the driver's ResourceSlice n1-s, added 2026-12-07T19:00:00Z: "
        "new claims do not get it unless they tolerate the taint",
        f"  gpu-1: {NV}/gpu-lost:NoSchedule [NVIDIA device health: GPU lost (NVML lost the GPU; the plugin "
        "taints every device of the node)] from the driver's ResourceSlice n1-s, added 2026-12-07T19:00:00Z: "
        "new claims do not get it unless they tolerate the taint",
    ]
    [n0, _] = view_json(view)
    assert (n0["devices"], n0["tainted"], n0["kept_off"]) == (3, 2, 1)
    assert n0["tainted_devices"][0]["taints"][1] == {
        "key": "maint.example.com/drain",
        "value": None,
        "effect": "NoExecute",
        "time_added": None,
        "from": "DeviceTaintRule",
        "name": "drain",
        "label": None,
        "meaning": "pods using it are evicted; new claims do not get it unless they tolerate the taint",
    }
    md = view_markdown(view)
    assert md[:2] == ["#### Tainted devices by pool", ""]
    assert md[5] == (
        f"| {NV}/n0 | n0 | 2 of 3 devices tainted, 1 kept off new claims | gpu-0 | "
        "maint.example.com/drain:NoExecute | DeviceTaintRule drain | - | pods using it are evicted; "
        "new claims do not get it unless they tolerate the taint |"
    )
    assert len(md) == 4 + 5


def test_only_the_newest_generation_counts_and_unknown_keys_show_raw() -> None:
    old = _slice("n0", _tainted("gpu-0", "NoSchedule"), _tainted("gpu-1", "NoSchedule"))
    new = b.resource_slice(
        "n0-t",
        driver=NV,
        node_name="n0",
        generation=2,
        devices=[
            b.device("gpu-0")
            | {"taints": [{"key": "vendor.example.com/hot", "value": "1", "effect": "None"}]},
            b.device("gpu-1"),
        ],
    )

    [pool] = taints_by_pool([old, new], [])

    assert (pool.devices, len(pool.tainted), pool.kept_off) == (2, 1, 0)
    assert view_lines([pool])[1] == (
        "  gpu-0: vendor.example.com/hot=1:None from the driver's ResourceSlice n0-t: "
        "informational: scheduling is unaffected"
    )
    assert health_label(f"{NV}/unmonitored", None, "None") == (
        "NVIDIA device health: not monitored (the plugin could not register health events)"
    )
    assert taints_by_pool([_slice("n0", b.device("gpu-0"))], []) == []


def test_a_pool_out_of_service_warns_and_a_driver_out_of_service_blocks() -> None:
    slices = [
        _slice("n0", _tainted("gpu-0", "NoSchedule"), _tainted("gpu-1", "None")),
        _slice("n1", b.device("gpu-0")),
    ]
    whole_n1 = _rule("drain", "n1", None, "maint.example.com/drain", "NoExecute")

    # n0 has a None-tainted device that still takes claims: no finding at all.
    assert tainted_pool_findings(taints_by_pool(slices, []), slices, "nvidia.com/gpu") == []
    [pool] = tainted_pool_findings(taints_by_pool(slices, [whole_n1]), slices, "nvidia.com/gpu")
    assert (pool.check, pool.severity, pool.subject) == ("tainted-pool", Severity.WARNING, f"pool/{NV}/n1")
    assert pool.message == (
        f"all 1 devices of {NV} pool n1 (node n1) are tainted NoSchedule or NoExecute: claims and "
        "bridged nvidia.com/gpu pods get none of them unless they tolerate the taints"
    )
    every = [_rule("drain", "n1", None, "k", "NoExecute"), _rule("n0", "n0", "gpu-1", "k", "NoSchedule")]
    found = tainted_pool_findings(taints_by_pool(slices, every), slices, "nvidia.com/gpu")
    assert [(f.severity, f.subject) for f in found] == [
        (Severity.WARNING, f"pool/{NV}/n0"),
        (Severity.WARNING, f"pool/{NV}/n1"),
        (Severity.BLOCKING, f"driver/{NV}"),
    ]
    assert found[2].message == (
        f"every one of the 3 devices {NV} publishes is tainted NoSchedule or NoExecute: no claim or "
        "bridged pod without a toleration can get one"
    )


def _state(slices: list[dict[str, object]], gates: dict[str, bool]) -> ClusterState:
    return ClusterState((1, 37), "v1.37.2", gates, [], [], [], [], slices, [], [], [])


def test_the_view_is_in_every_output_and_the_check_says_when_the_gate_hides_taints() -> None:
    slices = [_slice("n0", _tainted("gpu-0", "NoSchedule"), b.device("gpu-1"))]
    result = evaluate(_state(slices, {"DRADeviceTaints": True}), "nvidia.com/gpu", None, [NV])

    text = render_text(result).splitlines()
    head = f"tainted devices in {NV} pool n0 (node n0): 1 of 2 devices tainted, 1 kept off new claims"
    assert text[text.index(head) + 1].startswith(f"  gpu-0: {NV}/xid=79:NoSchedule [NVIDIA device health")
    assert [p["pool"] for p in json.loads(render_json(result))["tainted_devices"]] == ["n0"]
    assert "#### Tainted devices by pool" in render_markdown(result).splitlines()
    [check] = [c for c in result.checks if c.check == "device-taints"]
    assert (check.status.value, check.why) == (
        "WARN",
        f"1 finding(s); driver/{NV}: 1 device(s) carry taints: 1 x {NV}/xid=79:NoSchedule",
    )

    off = evaluate(
        _state([_slice("n0", b.device("gpu-0"))], {"DRADeviceTaints": False}), "nvidia.com/gpu", None, [NV]
    )
    [check] = [c for c in off.checks if c.check == "device-taints"]
    assert (check.status.value, check.why) == (
        "NOT APPLICABLE",
        "DRADeviceTaints is off on kube-apiserver: it drops the taints drivers publish",
    )
    assert "Tainted devices" not in render_markdown(off)
    assert json.loads(render_json(off))["tainted_devices"] == []
