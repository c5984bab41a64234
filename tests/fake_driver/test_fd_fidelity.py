"""Fidelity: each personality's rendered slices against the golden inventory of its release.

A drift (a renamed attribute, a changed value format, a device that appears in the wrong mode)
fails here with one line per difference. The inventories and their sources: ``fidelity.py``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from fake_driver.facts.personalities import get_personality
from fake_driver.fleetspec.faultstate import HealthEvent, NodeFaults
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.publishing import installer
from fake_driver.rendering.slices import RenderedPool, render_node
from tests.fake_driver import fidelity as g

Obj = dict[str, Any]
MINOR = (1, 35)
NVIDIA = ("nvidia-v25.3", "nvidia-v25.8", "nvidia-v25.12", "nvidia-v0.4", "nvidia-v0.5")
LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb"]


def _render(personality: str, faults: NodeFaults | None = None, **pool: Any) -> RenderedPool:
    pool.setdefault("profile", "h100-80gb-hbm3")
    pool.setdefault("gpus", 1)
    fleet = fleet_from_dict({"pools": [{"name": "n", "nodes": ["n1"], "personality": personality, **pool}]})
    if faults is None:
        return render_node(fleet.node("n1"), MINOR)
    return render_node(fleet.node("n1"), MINOR, faults=faults)


def _devices(r: RenderedPool) -> dict[str, Obj]:
    return {d["name"]: d for s in r.slices for d in s["spec"].get("devices", ())}


def _full_gpu(p: str) -> list[str]:
    d = _devices(_render(p))["gpu-0"]
    return g.compare_attributes("full GPU", d, g.FULL_GPU[p]) + g.compare_capacity(
        "full GPU", d, {"memory": "81559Mi"}
    )


def _static_mig(p: str) -> list[str]:
    devs = _devices(_render(p, gpus=2, mig={"mode": "static", "layout": LAYOUT, "gpus": [0]}))
    names = sorted(n for n in devs if n.startswith("gpu-0"))
    out = (
        []
        if names == g.STATIC_NAMES[p]
        else [f"static MIG: devices {names}, release has {g.STATIC_NAMES[p]}"]
    )
    mig = devs[g.STATIC_NAMES[p][-1]]  # the 3g.40gb device at slices 0-3
    slices = {f"memorySlice{i}": "1" for i in range(4)}
    out += g.compare_attributes("static MIG", mig, g.STATIC_MIG[p])
    return out + g.compare_capacity("static MIG", mig, {**g._MIG_CAPS, **slices})


def _dynamic_mig(p: str) -> list[str]:
    devs = _devices(_render(p, mig="dynamic"))
    full_caps = {**g._MIG_CAPS, "multiprocessors": "132", "copyEngines": "8", "decoders": "7"}
    full_caps.update(jpegEngines="7", ofaEngines="1", memory="81152Mi")
    out = g.compare_attributes("DynamicMIG full GPU", devs["gpu-0"], g.DYNAMIC_FULL[p])
    out += g.compare_capacity("DynamicMIG full GPU", devs["gpu-0"], full_caps)
    mig = devs["gpu-0-mig-3g40gb-9-0"]
    out += g.compare_attributes("DynamicMIG device", mig, g.DYNAMIC_MIG[p])
    out += g.compare_capacity("DynamicMIG device", mig, g._MIG_CAPS)
    ampere = _devices(_render(p, profile="a100-80gb-pcie", mig={"mode": "dynamic", "enabled": True}))
    if ("gpu-0" in ampere) != g.AMPERE_FULL_WITH_MIG_ON[p]:
        out.append(f"DynamicMIG A100 with MIG on: full GPU announced = {'gpu-0' in ampere}")
    return out


def _taints(p: str) -> list[str]:
    out = []
    for (event, xid), want in g.TAINTS.items():
        faults = NodeFaults(events=(HealthEvent("gpu-0", event or "xid", xid),))
        got = _devices(_render(p, faults))["gpu-0"].get("taints")
        if got != [want]:
            out.append(f"health {event} {xid}: taints {got}, release has [{want}]")
    return out


def _health_refused_with_dynamic_mig(p: str) -> list[str]:
    try:
        _render(p, NodeFaults(unhealthy=("gpu-0",)), mig="dynamic")
    except Exception as e:  # the refusal's type is the fake's business
        if "mutually exclusive with NVMLDeviceHealthCheck" in str(e):
            return []
    return ["health checking with DynamicMIG: accepted, release refuses to start"]


def _chart_guard(p: str) -> list[str]:
    refusal = installer.guard_refusal(get_personality(p), {}, override=False)
    return [] if refusal else ["installer without override and no device plugin: accepted, chart refuses"]


def _example(p: str) -> list[str]:
    d = _devices(_render(p, profile="l4"))["gpu-0"]
    out = g.compare_attributes("example GPU", d, g.EXAMPLE_DEVICE)
    out += g.compare_capacity("example GPU", d, {"memory": "80Gi", "compute": "100"})
    if d.get("allowMultipleAllocations") is not False:
        out.append(
            f"example GPU: allowMultipleAllocations {d.get('allowMultipleAllocations')!r}, release has False"
        )
    shared = _devices(_render(p, profile="l4", consumable_capacity=True))["gpu-0"]
    if shared["capacity"] != g.EXAMPLE_SHARED_CAPACITY:
        out.append(
            f"example shared GPU: capacity {shared['capacity']}, release has {g.EXAMPLE_SHARED_CAPACITY}"
        )
    return out


CHECKS = {
    "nvidia-v25.3": (_full_gpu, _static_mig, _chart_guard),
    "nvidia-v25.8": (_full_gpu, _static_mig, _chart_guard),
    "nvidia-v25.12": (_full_gpu, _static_mig, _dynamic_mig, _chart_guard),
    "nvidia-v0.4": (
        _full_gpu,
        _static_mig,
        _dynamic_mig,
        _taints,
        _health_refused_with_dynamic_mig,
        _chart_guard,
    ),
    "nvidia-v0.5": (
        _full_gpu,
        _static_mig,
        _dynamic_mig,
        _taints,
        _health_refused_with_dynamic_mig,
        _chart_guard,
    ),
    "example-v0.4": (_example,),
}


def mismatches(personality: str) -> list[str]:
    return [
        m for check in CHECKS[personality] for m in g.guarded(check.__name__, partial(check, personality))
    ]


@pytest.mark.parametrize("personality", sorted(CHECKS))
def test_rendered_slices_match_the_release_inventory(personality: str) -> None:
    assert mismatches(personality) == []


def test_every_personality_has_a_golden_inventory() -> None:
    from fake_driver.facts.personalities import PERSONALITIES

    assert sorted(PERSONALITIES) == sorted(CHECKS), (
        "give each personality its checks in CHECKS here and the goldens they read in "
        "tests/fake_driver/fidelity.py (FULL_GPU, STATIC_MIG, DYNAMIC_*, STATIC_NAMES, ...)"
    )


@pytest.mark.parametrize("personality", NVIDIA)
def test_chart_guard_refuses_without_the_override_whatever_the_nodes_run(personality: str) -> None:
    p = get_personality(personality)
    refusal = installer.guard_refusal(p, {}, override=False)
    assert refusal == (
        f"refusing to install {personality} in GPU mode without the override. "
        f"Chart says: {p.device_plugin_guard}"
    )
    assert installer.guard_refusal(p, {}, override=True) == ""
    assert installer.guard_refusal(get_personality("example-v0.4"), {"n1": 2}, override=False) == ""
