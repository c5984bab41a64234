"""Pure code the publisher tests used to cover next to the fake API: DeviceClass rendering,
the ledger, and the dropped-field check (API behaviour is in suites/fake_driver/)."""

from __future__ import annotations

import pytest

from fake_driver.core.errors import FleetError
from fake_driver.facts.personalities import get_personality
from fake_driver.facts.profiles import get_profile
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.publishing.publisher import dropped_fields
from fake_driver.rendering.deviceclasses import render_device_classes
from fake_driver.rendering.ledger import Ledger, Usage


@pytest.mark.parametrize(
    ("personality", "ext"),
    [
        ("nvidia-v25.3", None),
        ("nvidia-v25.8", None),
        ("nvidia-v25.12", "nvidia.com/gpu"),
        ("nvidia-v0.4", "nvidia.com/gpu"),
    ],
)
def test_gpu_class_extended_resource_only_from_v25_12(personality: str, ext: str | None) -> None:
    classes = {c["metadata"]["name"]: c for c in render_device_classes(get_personality(personality))}
    gpu = classes["gpu.nvidia.com"]["spec"]
    assert gpu.get("extendedResourceName") == ext
    assert gpu["selectors"] == [
        {
            "cel": {
                "expression": "device.driver == 'gpu.nvidia.com' && "
                "device.attributes['gpu.nvidia.com'].type == 'gpu'"
            }
        }
    ]
    assert "extendedResourceName" not in classes["mig.nvidia.com"]["spec"]
    assert ("vfio.gpu.nvidia.com" in classes) == (ext is not None)


def test_per_mig_profile_classes() -> None:
    classes = render_device_classes(
        get_personality("nvidia-v0.4"),
        compute_domains=False,
        mig_profile_classes=get_profile("h100-80gb-hbm3"),
    )
    by_name = {c["metadata"]["name"]: c["spec"] for c in classes}
    spec = by_name["mig-1g-10gb.gpu.nvidia.com"]
    assert spec["extendedResourceName"] == "nvidia.com/mig-1g.10gb"
    assert spec["selectors"][0]["cel"]["expression"].endswith(
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
    )
    assert by_name["mig-1g-10gb-me.gpu.nvidia.com"]["extendedResourceName"] == "nvidia.com/mig-1g.10gb-me"
    assert len(classes) == 3 + 7  # gpu, mig, vfio + one per H100 MIG profile


def test_ledger_double_advertising_and_over_promise() -> None:
    fleet = fleet_from_dict(
        {
            "pools": [
                {
                    "name": "a",
                    "nodes": ["n1"],
                    "profile": "h100-80gb-hbm3",
                    "gpus": 2,
                    "device_plugin": True,
                    "mig": "dynamic",
                },
                {"name": "b", "nodes": ["n2"], "profile": "l4", "gpus": 2},
            ]
        }
    )
    led = Ledger.for_fleet(fleet, (1, 35))
    units = led.legacy_units("n1")
    assert units == tuple(g.uuid for g in led.gpus("n1"))
    assert led.double_advertised() == {"n1": units}
    assert led.legacy_units("n2") == ()

    mig = led.dra("gpu.nvidia.com", "n1", "gpu-0-mig-1g10gb-19-0")
    other_mig = led.dra("gpu.nvidia.com", "n1", "gpu-0-mig-1g10gb-19-1")
    unit0 = led.legacy("n1", 0)
    conflicts = Ledger.conflicts([Usage("pod-a", mig), Usage("pod-b", other_mig), Usage("pod-legacy", unit0)])
    assert [(c.gpu_uuid, c.owners) for c in conflicts] == [(units[0], ("pod-a", "pod-b", "pod-legacy"))]
    assert Ledger.conflicts([Usage("pod-a", mig), Usage("pod-b", other_mig)]) == []
    assert led.overcommit("n1", legacy_in_use=2, dra_shares=[mig]) == 1
    assert led.overcommit("n1", legacy_in_use=1, dra_shares=[mig]) == 0


def test_dropped_fields_name_the_gate_once() -> None:
    counters = [{"counterSet": "gpu-0-counter-set", "counters": {"memory": {"value": "1"}}}]
    sent = {
        "sharedCounters": [{"name": "gpu-0-counter-set"}],
        "devices": [{"name": "a", "consumesCounters": counters}, {"name": "b", "consumesCounters": counters}],
    }
    got = {"devices": [{"name": "a"}, {"name": "b"}]}
    assert dropped_fields(sent, got) == [
        ("spec.sharedCounters", "DRAPartitionableDevices"),
        ("spec.devices[0].consumesCounters", "DRAPartitionableDevices"),
    ]
    assert dropped_fields(sent, sent) == []


def test_a_device_plugin_pool_has_gpus_but_no_dra_device_and_is_not_double_advertised() -> None:
    legacy = {"name": "legacy", "nodes": ["l1"], "profile": "h100-80gb-hbm3", "gpus": 4}
    legacy["device_plugin"] = True
    led = Ledger.for_fleet(fleet_from_dict({"pools": [{**legacy, "dra": False}]}), (1, 37))
    assert len(led.gpus("l1")) == 4
    assert len(led.legacy_units("l1")) == 4
    assert led.double_advertised() == {}
    with pytest.raises(KeyError):
        led.dra("gpu.nvidia.com", "l1", "gpu-0")
    both = Ledger.for_fleet(fleet_from_dict({"pools": [legacy]}), (1, 37))
    assert list(both.double_advertised()) == ["l1"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"dra": False}, "dra: false is a device-plugin pool: it needs device_plugin: true, no mig"),
        ({"dra": "no", "device_plugin": True}, "dra must be true or false, got 'no'"),
        ({"device_plugin": 1}, "device_plugin must be true or false, got 1"),
        (
            {"time_slicing_replicas": 4},
            "time_slicing_replicas is the device plugin's: it needs device_plugin: true",
        ),
        (
            {"time_slicing_replicas": 0, "device_plugin": True},
            "time_slicing_replicas must be an integer in [1, 64], got 0",
        ),
    ],
)
def test_dra_false_is_only_a_device_plugin_pool(fields: dict[str, object], message: str) -> None:
    with pytest.raises(FleetError) as err:
        fleet_from_dict({"pools": [{"name": "p", "nodes": ["n"], "profile": "l4", "gpus": 1, **fields}]})
    assert str(err.value) == f"<fleet>: pool 'p': {message}"
