"""DynamicMIG counters, slice layouts by server minor, per-slice limits, shared devices, faults."""

from __future__ import annotations

from typing import Any

import pytest

from fake_driver.core.errors import FleetError, UnknownChoiceError
from fake_driver.fleetspec.faultstate import NodeFaults
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import RenderedPool, render_node
from tests.fake_driver import fidelity

COUNTERS_H100 = {  # the 7g.80gb profile's (fake_driver.facts.profiles _H100_MIG)
    "multiprocessors": {"value": "132"},
    "copy-engines": {"value": "8"},
    "decoders": {"value": "7"},
    "encoders": {"value": "0"},
    "jpeg-engines": {"value": "7"},
    "ofa-engines": {"value": "1"},
    "memory": {"value": "81152Mi"},
    **{f"memory-slice-{i}": {"value": "1"} for i in range(8)},
}
# H100: 7 + 7 (+me) + 4 + 3 + 2 + 1 + 1 placements, plus the full GPU.
H100_DYNMIG_DEVICES = 26


def _render(minor: tuple[int, int], faults: NodeFaults | None = None, **pool: Any) -> RenderedPool:
    spec = {
        "name": "p",
        "nodes": ["n1"],
        "profile": "h100-80gb-hbm3",
        "gpus": 2,
        "personality": "nvidia-v0.4",
    }
    fleet = fleet_from_dict({"pools": [{**spec, **pool}]})
    return render_node(fleet.node("n1"), minor, faults=faults or NodeFaults())


def _devices(r: RenderedPool) -> list[dict[str, Any]]:
    return [d for s in r.slices for d in s["spec"].get("devices", ())]


def test_split_layout_from_1_35() -> None:
    r = _render((1, 35), gpus=8, mig="dynamic")
    specs = [s["spec"] for s in r.slices]
    assert len(specs) == 9
    assert all(s["pool"]["resourceSliceCount"] == 9 for s in specs)
    assert "devices" not in specs[0]
    assert [cs["name"] for cs in specs[0]["sharedCounters"]] == [f"gpu-{i}-counter-set" for i in range(8)]
    for i, s in enumerate(specs[1:]):
        assert "sharedCounters" not in s
        names = [d["name"] for d in s["devices"]]
        assert len(names) == H100_DYNMIG_DEVICES
        assert names == sorted(names)
        assert names[0] == f"gpu-{i}"


def test_combined_layout_before_1_35() -> None:
    r = _render((1, 34), mig="dynamic")
    specs = [s["spec"] for s in r.slices]
    assert len(specs) == 2
    for i, s in enumerate(specs):
        assert s["pool"]["resourceSliceCount"] == 2
        assert [cs["name"] for cs in s["sharedCounters"]] == [f"gpu-{i}-counter-set"]
        assert {c["counterSet"] for d in s["devices"] for c in d["consumesCounters"]} == {
            f"gpu-{i}-counter-set"
        }


def test_counter_set_values_and_full_gpu_consumes_everything() -> None:
    r = _render((1, 36), gpus=1, mig="dynamic")
    (cs,) = r.slices[0]["spec"]["sharedCounters"]
    assert cs["counters"] == COUNTERS_H100
    full = next(d for d in _devices(r) if d["name"] == "gpu-0")
    assert full["consumesCounters"] == [{"counterSet": "gpu-0-counter-set", "counters": COUNTERS_H100}]
    assert "uuid" in full["attributes"]
    # Full GPU memory in DynamicMIG = the largest profile's memory.
    assert full["capacity"]["memory"] == {"value": "81152Mi"}
    assert set(full["capacity"]) == {
        "multiprocessors",
        "copyEngines",
        "decoders",
        "encoders",
        "jpegEngines",
        "ofaEngines",
        "memory",
    }


def test_mig_consumption_and_mutual_exclusion_with_full_gpu() -> None:
    r = _render((1, 36), gpus=1, mig="dynamic")
    devices = {d["name"]: d for d in _devices(r)}
    d = devices["gpu-0-mig-2g20gb-14-2"]
    assert "uuid" not in d["attributes"]
    assert not any(k.startswith("memorySlice") for k in d["capacity"])
    (c,) = d["consumesCounters"]
    assert c["counters"] == {
        "multiprocessors": {"value": "32"},
        "copy-engines": {"value": "2"},
        "decoders": {"value": "2"},
        "encoders": {"value": "0"},
        "jpeg-engines": {"value": "2"},
        "ofa-engines": {"value": "0"},
        "memory": {"value": "20096Mi"},
        "memory-slice-2": {"value": "1"},
        "memory-slice-3": {"value": "1"},
    }
    # Every MIG device takes at least one memory slice, each of capacity 1, and the full GPU
    # takes them all: a full GPU and any MIG device cannot both be allocated.
    for name, dev in devices.items():
        slices = {k for k in dev["consumesCounters"][0]["counters"] if k.startswith("memory-slice-")}
        assert slices, name
        assert slices <= {k for k in COUNTERS_H100 if k.startswith("memory-slice-")}


def test_ampere_dynamic_mig_has_no_full_gpu_but_counters() -> None:
    r = _render((1, 35), profile="a100-40gb", gpus=1, mig="dynamic")
    names = [d["name"] for d in _devices(r)]
    assert "gpu-0" not in names
    assert len(names) == 25
    assert r.slices[0]["spec"]["sharedCounters"][0]["name"] == "gpu-0-counter-set"


def test_ampere_dynamic_mig_with_mig_off_is_a_legacy_gpu() -> None:
    r = _render((1, 35), profile="a100-40gb", gpus=1, mig={"mode": "dynamic", "enabled": False})
    (s,) = r.slices
    assert "sharedCounters" not in s["spec"]
    assert [d["name"] for d in s["spec"]["devices"]] == ["gpu-0"]
    assert "consumesCounters" not in s["spec"]["devices"][0]
    assert s["spec"]["devices"][0]["capacity"] == {"memory": {"value": "40Gi"}}


def test_dynamic_mig_needs_v25_12_or_later() -> None:
    with pytest.raises(FleetError, match=r"nvidia-v25\.8 has no DynamicMIG"):
        _render((1, 35), personality="nvidia-v25.8", mig="dynamic")


def test_more_than_128_devices_are_split_into_more_slices() -> None:
    layout = ["1g.10gb"] * 7
    r = _render((1, 35), gpus=32, mig={"mode": "static", "layout": layout})
    counts = [len(s["spec"]["devices"]) for s in r.slices]
    assert counts == [128, 96]
    assert [s["spec"]["pool"]["resourceSliceCount"] for s in r.slices] == [2, 2]
    assert [s["metadata"]["generateName"] for s in r.slices] == [
        "00000-gpu.nvidia.com-n1-",
        "00001-gpu.nvidia.com-n1-",
    ]


def test_taints_lower_the_limit_to_64_from_1_35_only() -> None:
    faults = NodeFaults(unhealthy=("gpu-0-mig-1g10gb-19-0",))  # an Xid taints one MIG device
    new = _render((1, 35), faults=faults, gpus=32, mig={"mode": "static", "layout": ["1g.10gb"] * 7})
    old = _render((1, 34), faults=faults, gpus=32, mig={"mode": "static", "layout": ["1g.10gb"] * 7})
    assert [len(s["spec"]["devices"]) for s in new.slices] == [64, 64, 64, 32]
    assert [len(s["spec"]["devices"]) for s in old.slices] == [128, 96]


def test_static_layout_that_does_not_fit_is_refused() -> None:
    with pytest.raises(FleetError, match=r"does not fit on one h100-80gb-hbm3"):
        _render((1, 35), mig={"mode": "static", "layout": ["4g.40gb", "4g.40gb"]})


def test_static_layout_uses_any_valid_placement() -> None:
    r = _render(
        (1, 35), gpus=1, mig={"mode": "static", "layout": ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]}
    )
    assert sorted(d["name"] for d in _devices(r)) == [
        "gpu-0-mig-1g10gb-19-2",
        "gpu-0-mig-1g10gb-19-3",
        "gpu-0-mig-2g20gb-14-0",
        "gpu-0-mig-3g40gb-9-4",
    ]


def test_unknown_mig_profile_lists_choices() -> None:
    with pytest.raises(UnknownChoiceError) as e:
        _render((1, 35), mig={"mode": "static", "layout": ["9g.99gb"]})
    assert "valid choices: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb" in str(e.value)


def test_shared_devices_consumable_capacity() -> None:
    r = _render((1, 34), personality="example-v0.4", profile="l4", gpus=1, consumable_capacity=True)
    (d,) = _devices(r)
    assert d["allowMultipleAllocations"] is True
    assert d["capacity"] == fidelity.EXAMPLE_SHARED_CAPACITY
    assert r.devices[0].shareable is True


def test_shared_devices_refused_for_nvidia() -> None:
    with pytest.raises(
        FleetError, match=r"shared devices \(consumable_capacity\); personalities that do: example-v0\.4"
    ):
        _render((1, 35), consumable_capacity=True)


def test_drop_attribute_fault() -> None:
    r = _render((1, 35), faults=NodeFaults(drop_attributes=("productName",)))
    assert all("productName" not in d["attributes"] for d in _devices(r))
    assert all("brand" in d["attributes"] for d in _devices(r))


def test_unhealthy_taint_at_v0_4_and_removal_at_v25_12() -> None:
    faults = NodeFaults(unhealthy=("gpu-1",))
    tainted = _devices(_render((1, 35), faults=faults))
    assert "taints" not in tainted[0]
    assert tainted[1]["taints"] == [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]
    removed = _devices(_render((1, 35), faults=faults, personality="nvidia-v25.12"))
    assert [d["name"] for d in removed] == ["gpu-0"]
    untouched = _devices(_render((1, 35), faults=faults, personality="nvidia-v25.8"))
    assert [d["name"] for d in untouched] == ["gpu-0", "gpu-1"]
    assert all("taints" not in d for d in untouched)


def test_unhealthy_gpu_covers_its_mig_devices() -> None:
    r = _render((1, 35), faults=NodeFaults(unhealthy=("gpu-0",)), personality="nvidia-v25.12", mig="dynamic")
    assert [d["name"] for d in _devices(r) if d["name"].startswith("gpu-0")] == []
    assert len([d for d in _devices(r) if d["name"].startswith("gpu-1")]) == H100_DYNMIG_DEVICES


def test_stale_generation_fault() -> None:
    r = render_node(
        fleet_from_dict(
            {
                "pools": [
                    {
                        "name": "p",
                        "nodes": ["n1"],
                        "profile": "h100-80gb-hbm3",
                        "gpus": 2,
                        "personality": "nvidia-v0.4",
                        "mig": "dynamic",
                    }
                ]
            }
        ).node("n1"),
        (1, 35),
        faults=NodeFaults(stale_generation=True),
        generation=5,
    )
    assert [s["spec"]["pool"]["generation"] for s in r.slices] == [4, 5, 5]


def test_ledger_records_map_devices_to_physical_gpus() -> None:
    r = _render((1, 35), gpus=2, mig="dynamic")
    rec = {d.name: d for d in r.devices}
    assert rec["gpu-1"].gpu_uuid == r.gpus[1].uuid
    assert rec["gpu-1"].memory_slices == frozenset(range(8))
    assert rec["gpu-0-mig-3g40gb-9-4"].gpu_uuid == r.gpus[0].uuid
    assert rec["gpu-0-mig-3g40gb-9-4"].memory_slices == frozenset({4, 5, 6, 7})


# What the real dra-example-driver v0.4.0 published for node plain-0 with --num-devices=4
# (tests/fake_driver/test_fd_real_fidelity.py compares whole pools on real nodes).
REAL_EXAMPLE_UUIDS_PLAIN_0 = (
    "gpu-f1979a04-c735-e6cd-7bd4-53566467a71e",
    "gpu-9758548c-5dfd-3bf2-da37-8d2d91393301",
    "gpu-0fa3e379-0cc9-a0de-d140-fb3e2857129b",
    "gpu-39365a40-2b25-7b7f-e026-7bcac030b547",
)


def test_example_uuids_are_the_real_drivers_for_the_node_name() -> None:
    pool = {"name": "plain", "nodes": ["plain-0"], "profile": "l4", "gpus": 4, "personality": "example-v0.4"}
    r = render_node(fleet_from_dict({"pools": [pool]}).node("plain-0"), (1, 35))
    assert [d["attributes"]["uuid"]["string"] for d in _devices(r)] == list(REAL_EXAMPLE_UUIDS_PLAIN_0)


def test_example_partitions_counter_slice_then_one_devices_slice() -> None:
    r = _render((1, 35), personality="example-v0.4", profile="l4", gpus=2, partitions=2)
    counters, devices = (s["spec"] for s in r.slices)
    assert counters["sharedCounters"] == [
        {"name": f"gpu-{i}-counters", "counters": {"memory": {"value": "80Gi"}, "compute": {"value": "100"}}}
        for i in range(2)
    ]
    assert "devices" not in counters
    names = [d["name"] for d in devices["devices"]]
    assert names == [f"gpu-{i}-{s}" for i in range(2) for s in ("partition-0", "partition-1", "full")]
    half, full = devices["devices"][1], devices["devices"][2]
    assert half["capacity"] == {"memory": {"value": "40Gi"}, "compute": {"value": "50"}}
    assert half["consumesCounters"] == [
        {
            "counterSet": "gpu-0-counters",
            "counters": {"memory": {"value": "40Gi"}, "compute": {"value": "50"}},
        }
    ]
    assert half["attributes"]["partition"] == {"int": 1}
    assert full["attributes"]["full"] == full["attributes"]["partitionable"] == {"bool": True}
    assert "partition" not in full["attributes"]
    assert [sorted(rec.memory_slices) for rec in r.devices[:3]] == [[0], [1], [0, 1]]


def test_example_partitions_before_1_35_share_a_slice_with_their_counters() -> None:
    r = _render((1, 34), personality="example-v0.4", profile="l4", gpus=2, partitions=3)
    assert [len(s["spec"]["devices"]) for s in r.slices] == [4, 4]
    # 80Gi / 3 and 100 / 3 as the driver divides them (resource.NewQuantity(value / N)).
    assert _devices(r)[0]["capacity"]["memory"] == {"value": "28633115306"}
    assert _devices(r)[0]["capacity"]["compute"] == {"value": "33"}


def test_example_partitions_with_multiple_allocations_bound_the_request_to_the_partition() -> None:
    r = _render(
        (1, 35), personality="example-v0.4", profile="l4", gpus=1, partitions=2, consumable_capacity=True
    )
    policy = _devices(r)[0]["capacity"]["memory"]["requestPolicy"]
    assert policy == {"default": "40Gi", "validRange": {"min": "1Gi", "step": "1Gi", "max": "40Gi"}}


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        (
            {"partitions": 2},
            r"personality nvidia-v0\.4 has no GPU partitions; personalities that do: example",
        ),
        ({"partitions": 81, "personality": "example-v0.4"}, r"partitions must be an integer in \[0, 80\]"),
        (
            {
                "partitions": 2,
                "personality": "example-v0.4",
                "mig": {"mode": "static", "layout": ["7g.80gb"]},
            },
            r"partitions cannot be combined with MIG",
        ),
    ],
)
def test_bad_partitions_are_refused(pool: dict[str, Any], message: str) -> None:
    with pytest.raises(FleetError, match=message):
        _render((1, 35), **pool)
