"""Per-device health state of the fake driver: its annotation form and the taints the nvidia
v0.4/v0.5 personalities render from it, checked against NV's plugin (cmd/gpu-kubelet-plugin
device_health.go and allocatable.go @ v0.4.1 and v0.5.0; cited in fake_driver.rendering.slices)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fake_driver.core.errors import FakeDriverError, UnknownChoiceError
from fake_driver.fleetspec.faultstate import NO_FAULTS, HealthEvent, NodeFaults, add_event
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import render_node

XID79 = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
XID13 = {"key": "gpu.nvidia.com/xid", "value": "13", "effect": "None"}
XID94 = {"key": "gpu.nvidia.com/xid", "value": "94", "effect": "NoSchedule"}
LOST = {"key": "gpu.nvidia.com/gpu-lost", "effect": "NoSchedule"}
UNMON = {"key": "gpu.nvidia.com/unmonitored", "effect": "None"}
MIG_LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


def _taints(faults: NodeFaults, personality: str = "nvidia-v0.5", **pool: Any) -> dict[str, list[Any]]:
    spec = {"name": "p", "nodes": ["n1"], "profile": "h100-80gb-hbm3", "gpus": 3, "personality": personality}
    fleet = fleet_from_dict({"pools": [{**spec, **pool}]})
    r = render_node(fleet.node("n1"), (1, 36), faults=faults)
    return {d["name"]: d.get("taints", []) for s in r.slices for d in s["spec"].get("devices", ())}


def _events(*events: HealthEvent) -> NodeFaults:
    got: tuple[HealthEvent, ...] = ()
    for e in events:
        got = add_event(got, e)
    return NodeFaults(unhealthy=tuple(sorted({e.device for e in events})), events=got)


@pytest.mark.parametrize("personality", ["nvidia-v0.4", "nvidia-v0.5"])
def test_two_devices_carry_different_xids_at_once(personality: str) -> None:
    faults = _events(HealthEvent("gpu-0", "xid", 79), HealthEvent("gpu-1", "xid", 13))
    assert _taints(faults, personality) == {"gpu-0": [XID79], "gpu-1": [XID13], "gpu-2": []}


def test_a_later_xid_on_the_same_device_replaces_the_value() -> None:
    faults = _events(HealthEvent("gpu-1", "xid", 79), HealthEvent("gpu-1", "xid", 94))
    assert faults.events == (HealthEvent("gpu-1", "xid", 94),)
    assert _taints(faults) == {"gpu-0": [], "gpu-1": [XID94], "gpu-2": []}


def test_a_lost_gpu_taints_every_device_beside_their_own_xids() -> None:
    faults = _events(HealthEvent("gpu-0", "xid", 79), HealthEvent("gpu-2", "gpu-lost"))
    assert _taints(faults) == {"gpu-0": [XID79, LOST], "gpu-1": [LOST], "gpu-2": [LOST]}


def test_a_key_keeps_its_place_when_its_value_changes() -> None:
    # AddOrUpdateTaint updates in place: xid first, then gpu-lost, whatever Xid came last.
    faults = _events(
        HealthEvent("gpu-0", "xid", 79), HealthEvent("gpu-1", "gpu-lost"), HealthEvent("gpu-0", "xid", 13)
    )
    assert _taints(faults)["gpu-0"] == [XID13, LOST]


def test_unmonitored_taints_its_gpus_devices_with_effect_none() -> None:
    faults = _events(HealthEvent("gpu-1", "unmonitored"), HealthEvent("gpu-2", "xid", 79))
    assert _taints(faults) == {"gpu-0": [], "gpu-1": [UNMON], "gpu-2": [XID79]}


def test_an_xid_on_a_static_mig_device_taints_that_mig_device_only() -> None:
    mig = {"mode": "static", "layout": MIG_LAYOUT, "gpus": [0]}
    sick = "gpu-0-mig-1g10gb-19-3"
    got = _taints(_events(HealthEvent(sick, "xid", 79)), gpus=1, profile="a100-80gb-pcie", mig=mig)
    assert got == {
        "gpu-0-mig-1g10gb-19-2": [],
        "gpu-0-mig-2g20gb-14-0": [],
        "gpu-0-mig-3g40gb-9-4": [],
        sick: [XID79],
    }
    # Unmonitored is per parent GPU: all its MIG devices.
    unmon = _taints(_events(HealthEvent(sick, "unmonitored")), gpus=1, profile="a100-80gb-pcie", mig=mig)
    assert unmon == {name: [UNMON] for name in got}


def test_an_unhealthy_device_without_its_own_event_is_xid_79() -> None:
    assert _taints(NodeFaults(unhealthy=("gpu-2",))) == {"gpu-0": [], "gpu-1": [], "gpu-2": [XID79]}


def test_v25_12_removes_every_sick_device_and_the_example_personality_ignores_them() -> None:
    faults = _events(HealthEvent("gpu-0", "xid", 79), HealthEvent("gpu-2", "xid", 13))
    assert _taints(faults, "nvidia-v25.12") == {"gpu-1": []}
    example = _taints(_events(HealthEvent("gpu-0")), "example-v0.4", profile="l4")
    assert example == {"gpu-0": [], "gpu-1": [], "gpu-2": []}


def test_the_annotation_round_trips_per_device_events() -> None:
    faults = _events(
        HealthEvent("gpu-0", "xid", 79), HealthEvent("gpu-1", "xid", 13), HealthEvent("gpu-2", "gpu-lost")
    )
    text = faults.to_json()
    assert json.loads(text) == {
        "unhealthy": ["gpu-0", "gpu-1", "gpu-2"],
        "events": [
            {"device": "gpu-0", "event": "xid", "xid": 79},
            {"device": "gpu-1", "event": "xid", "xid": 13},
            {"device": "gpu-2", "event": "gpu-lost"},
        ],
    }
    assert NodeFaults.from_json(text) == faults
    assert NodeFaults.from_json(NO_FAULTS.to_json()) == NO_FAULTS


def test_the_one_event_per_node_annotation_still_reads() -> None:
    old = '{"unhealthy": ["gpu-0", "gpu-1"], "health_event": "unmonitored"}'
    assert NodeFaults.from_json(old).events == (
        HealthEvent("gpu-0", "unmonitored"),
        HealthEvent("gpu-1", "unmonitored"),
    )
    assert NodeFaults.from_json('{"unhealthy": ["gpu-0"], "xid": 13}').events == (
        HealthEvent("gpu-0", "xid", 13),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"events": [{"device": "gpu-0", "event": "melted"}]}', "unknown health event 'melted'"),
        ('{"events": [{"event": "xid"}]}', "an event needs a device name"),
        ('{"events": [{"device": "gpu-0", "xid": -1}]}', "xid must be a non-negative integer"),
        ('{"events": {"device": "gpu-0"}}', "events must be a list of objects"),
    ],
)
def test_a_bad_event_in_the_annotation_is_one_line(text: str, message: str) -> None:
    with pytest.raises((FakeDriverError, UnknownChoiceError)) as err:
        NodeFaults.from_json(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
