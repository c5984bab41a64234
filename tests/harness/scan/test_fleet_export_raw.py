"""fleet export's raw-slice passthrough (pure): nodes no personality describes are replayed
from their own slices; nodes of one structure share a pool; their drivers' classes come along;
names the user marks are redacted; the fleet format refuses bad raw pools with one line."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from fake_driver.core.errors import FakeDriverError, FleetError
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.fleetspec.rawpools import node_slices
from harness.kit.kube import Obj
from harness.scan.checks import detect_pools
from harness.scan.fleetexport import (
    RawSlices,
    Shape,
    build_fleet,
    gather_slices,
    node_shape,
    replayed_raw,
    structure_digest,
)

RESOURCE = "nvidia.com/gpu"
DRIVER = "neuron.example.org"


def _device(k: int, uuid: str) -> Obj:
    return {
        "name": f"nd-{k}",
        "attributes": {"uuid": {"string": uuid}, "cores": {"int": 8}},
        "capacity": {"memory": {"value": "96Gi"}},
    }


def _slice(node: str, devices: list[Obj], driver: str = DRIVER) -> Obj:
    return {"spec": {"driver": driver, "nodeName": node, "pool": {"name": node}, "devices": devices}}


def _node(name: str, pool: str) -> Obj:
    return {"metadata": {"name": name, "labels": {"eks.amazonaws.com/nodegroup": pool}}, "status": {}}


CLASS: Obj = {
    "metadata": {"name": "neuron", "uid": "u-1", "resourceVersion": "7", "creationTimestamp": "t"},
    "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
}


def _export(nodes: list[Obj], slices: list[Obj], classes: list[Obj], **kw: Any) -> Any:
    raw = RawSlices()
    devices = gather_slices(slices, ("gpu.nvidia.com",), raw)
    pools = detect_pools(nodes)
    counts: Counter[tuple[str, Shape]] = Counter()
    for n in nodes:
        name = n["metadata"]["name"]
        shape = node_shape(n, devices.get(name), RESOURCE, "h100-80gb-hbm3")
        counts[(pools.of[name], replayed_raw(shape, raw.key(name), classes, RESOURCE))] += 1
    return build_fleet(counts, classes, RESOURCE, kw.get("rename_pools", False), raw, kw.get("redact", ()))


def test_nodes_of_a_driver_no_personality_has_are_replayed_from_their_slices() -> None:
    nodes = [_node("ip-1", "trn"), _node("ip-2", "trn"), _node("ip-3", "trn-small")]
    slices = [
        _slice("ip-1", [_device(0, "u-a"), _device(1, "u-b")]),
        _slice("ip-2", [_device(0, "u-c"), _device(1, "u-d")]),  # same structure, other UUIDs
        _slice("ip-3", [_device(0, "u-e")]),
    ]
    exported = _export(nodes, slices, [CLASS])
    assert exported.fleet["pools"] == []
    assert exported.notes == []
    trn, small = exported.fleet["raw_pools"]
    assert (trn["name"], trn["count"], small["name"], small["count"]) == ("trn", 2, "trn-small", 1)
    # the first node's values stand for the pool
    assert trn["slices"] == [{"driver": DRIVER, "devices": [_device(0, "u-a"), _device(1, "u-b")]}]
    assert exported.fleet["device_classes"] == [{"metadata": {"name": "neuron"}, "spec": CLASS["spec"]}]

    replay = fleet_from_dict(exported.fleet)
    assert replay.raw_node_names == ("trn-0", "trn-1", "trn-small-0")
    (body,) = node_slices(replay.raw_pools[0], "trn-1", "uid-9")
    assert body["metadata"]["name"] == "trn-1-neuron-example-org-raw-0"
    assert body["metadata"]["labels"]["dra-harness.io/managed-by"] == "dra-harness"
    assert body["metadata"]["ownerReferences"][0] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "trn-1",
        "uid": "uid-9",
        "controller": True,
    }
    assert body["spec"] == {
        "driver": DRIVER,
        "nodeName": "trn-1",
        "pool": {"name": "trn-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [_device(0, "u-a"), _device(1, "u-b")],
    }


def test_a_gpu_of_an_unknown_product_is_replayed_and_a_known_one_keeps_its_personality() -> None:
    def gpu(k: int, product: str) -> Obj:
        return {
            "name": f"gpu-{k}",
            "attributes": {"productName": {"string": product}, "type": {"string": "gpu"}},
        }

    nodes = [_node("a", "h100"), _node("b", "mystery")]
    slices = [
        _slice("a", [gpu(0, "NVIDIA H100 80GB HBM3")], "gpu.nvidia.com"),
        _slice("a", [_device(0, "u-x")]),  # beside a personality's GPUs: not replayed
        _slice("b", [gpu(0, "NVIDIA Z9000")], "gpu.nvidia.com"),
    ]
    exported = _export(nodes, slices, [])
    assert [(p["name"], p["profile"], p["gpus"]) for p in exported.fleet["pools"]] == [
        ("h100", "h100-80gb-hbm3", 1)
    ]
    assert [(p["name"], [s["driver"] for s in p["slices"]]) for p in exported.fleet["raw_pools"]] == [
        ("mystery", ["gpu.nvidia.com"])
    ]


def test_structure_ignores_values_but_not_names_attributes_or_counters() -> None:
    base = _slice("n", [_device(0, "u-1")])["spec"]
    assert structure_digest(base) == structure_digest(_slice("m", [_device(0, "u-2")])["spec"])
    renamed = _slice("n", [{**_device(0, "u-1"), "name": "other"}])["spec"]
    extra = _slice("n", [{**_device(0, "u-1"), "attributes": {"uuid": {"string": "u"}}}])["spec"]
    counters = {**base, "sharedCounters": [{"name": "cs", "counters": {"mem": {"value": "1"}}}]}
    digests = {structure_digest(s) for s in (base, renamed, extra, counters)}
    assert len(digests) == 4


def test_names_the_user_marks_are_redacted_in_every_value_and_note() -> None:
    nodes = [_node("ip-1", "acme-training")]
    exported = _export(nodes, [_slice("ip-1", [_device(0, "acme-serial-1")])], [CLASS], redact=("acme",))
    text = exported.text("a cluster")
    assert "acme" not in text
    (pool,) = exported.fleet["raw_pools"]
    assert pool["name"] == "redacted-1-training"
    assert pool["slices"][0]["devices"][0]["attributes"]["uuid"] == {"string": "redacted-1-serial-1"}
    fleet_from_dict(exported.fleet)


@pytest.mark.parametrize(
    ("raw_pool", "message"),
    [
        ({"name": "x", "count": 1}, r"raw pool 'x': 'slices' must be a non-empty list"),
        (
            {"name": "x", "slices": [{"driver": "Bad_Driver", "devices": [{"name": "d"}]}]},
            r"not a DNS subdomain",
        ),
        ({"name": "x", "slices": [{"driver": "a.b", "devices": [{"name": "d"}, {"name": "d"}]}]}, r"unique"),
        ({"name": "x", "slices": [{"driver": "a.b", "devices": []}]}, r"needs devices or sharedCounters"),
        ({"name": "x", "slices": [{"driver": "a.b", "devices": "d"}]}, r"devices must be a list"),
        (
            {"name": "x", "slices": [{"driver": "a.b", "devices": [{"name": "d"}], "nodeName": "n"}]},
            r"slice field",
        ),
        (
            {"name": "x", "profile": "h100", "slices": [{"driver": "a.b"}]},
            r"unknown raw pool field 'profile'",
        ),
        (
            {"name": "x", "slices": [{"driver": "a.b", "devices": [{"name": f"d{i}"} for i in range(129)]}]},
            r"129 devices in one slice; at most 128",
        ),
    ],
)
def test_a_bad_raw_pool_is_one_line(raw_pool: Obj, message: str) -> None:
    with pytest.raises(FakeDriverError, match=message) as err:
        fleet_from_dict({"raw_pools": [raw_pool]}, "f.yaml")
    assert "\n" not in str(err.value)


def test_raw_and_personality_pools_share_the_node_name_space() -> None:
    with pytest.raises(FleetError, match=r"node 'x-0' is in pools 'x' and 'x'"):
        fleet_from_dict(
            {
                "pools": [{"name": "x", "count": 1, "profile": "h100-80gb-hbm3", "gpus": 1}],
                "raw_pools": [
                    {"name": "x", "count": 1, "slices": [{"driver": "a.b", "devices": [{"name": "d"}]}]}
                ],
            }
        )
