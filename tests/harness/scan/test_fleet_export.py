"""fleet export from what a cluster returns (pure): the demo fleet's own slices and nodes,
exported, replay the same slices node by node; what no fleet field can say is a note."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from fake_driver.facts.personalities import get_personality
from fake_driver.fleetspec.fleet import Fleet, fleet_from_dict, load_fleet
from fake_driver.publishing.legacy import device_plugin_nodes
from fake_driver.rendering.deviceclasses import render_device_classes
from fake_driver.rendering.slices import render_node
from harness.clusters.named.gpufleet import DEMO_FLEET
from harness.core.errors import HarnessError
from harness.kit.kube import Obj
from harness.scan.checks import detect_pools
from harness.scan.fleetexport import Export, Shape, build_fleet, gather_slices, node_shape, profile_for

MINOR = (1, 37)
RESOURCE = "nvidia.com/gpu"


def _cluster(fleet: Fleet, labels: dict[str, dict[str, str]] | None = None) -> tuple[list[Obj], list[Obj]]:
    """The nodes and slices a cluster running `fleet` returns (kwok nodes, the fake publisher)."""
    legacy = device_plugin_nodes(fleet)
    nodes = [
        {
            "metadata": {
                "name": n.name,
                "labels": {"dra-harness.io/pool": n.pool.name, **(labels or {}).get(n.name, {})},
            },
            "status": {"allocatable": {RESOURCE: str(legacy[n.name])} if n.name in legacy else {}},
        }
        for n in fleet.nodes
    ]
    slices = [s for n in fleet.nodes if n.pool.dra for s in render_node(n, MINOR).slices]
    return nodes, slices


def _export(fleet: Fleet, labels: dict[str, dict[str, str]] | None = None, **kw: bool) -> Export:
    nodes, slices = _cluster(fleet, labels)
    devices = gather_slices(slices, ("gpu.nvidia.com",))
    pools = detect_pools(nodes)
    counts = Counter(
        (
            pools.of[n["metadata"]["name"]],
            node_shape(n, devices.get(n["metadata"]["name"]), RESOURCE, "h100-80gb-hbm3"),
        )
        for n in nodes
    )
    classes = render_device_classes(get_personality("nvidia-v25.12"))
    return build_fleet(counts, classes, RESOURCE, kw.get("rename_pools", False))


def test_the_demo_fleet_exported_replays_the_same_slices_on_every_node() -> None:
    demo = load_fleet(DEMO_FLEET)
    exported = _export(demo)
    replay = fleet_from_dict(exported.fleet)
    assert exported.notes == []
    assert exported.nodes == 5
    assert [(p["name"], p["count"], p["profile"], p["gpus"]) for p in exported.fleet["pools"]] == [
        ("a100-mig", 1, "a100-80gb-pcie", 4),
        ("h100", 2, "h100-80gb-hbm3", 8),
        ("legacy", 2, "h100-80gb-hbm3", 8),
    ]
    assert exported.fleet["pools"][0]["mig"] == {
        "mode": "static",
        "layout": ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"],
    }
    assert (exported.fleet["pools"][2]["device_plugin"], exported.fleet["pools"][2]["dra"]) == (True, False)
    assert sorted(replay.node_names) == sorted(demo.node_names)
    for node in demo.nodes:
        if node.pool.dra:
            assert render_node(replay.node(node.name), MINOR).slices == render_node(node, MINOR).slices, (
                node.name
            )
    assert device_plugin_nodes(replay) == device_plugin_nodes(demo)


def test_the_file_says_where_it_came_from_and_loads() -> None:
    text = _export(load_fleet(DEMO_FLEET)).text("a cluster running v1.37.2")
    head = text.splitlines()[:2]
    assert head[0].startswith("# Exported by `dra-harness fleet export` from a cluster running v1.37.2 on ")
    assert head[0].endswith(": 5 node(s).")
    assert head[1] == "# Replay it: dra-harness cluster up --fleet <this file>"
    fleet_from_dict(yaml.safe_load(text))


def test_a_pool_with_two_shapes_is_split_and_pools_can_be_renamed() -> None:
    fleet = fleet_from_dict(
        {
            "personality": "nvidia-v25.12",
            "pools": [
                {"name": "gke-a", "count": 1, "profile": "h100-80gb-hbm3", "gpus": 8},
                {"name": "gke-b", "count": 1, "profile": "h100-80gb-hbm3", "gpus": 4},
            ],
        }
    )
    one_pool = {
        "gke-a-0": {"cloud.google.com/gke-nodepool": "prod-gpu"},
        "gke-b-0": {"cloud.google.com/gke-nodepool": "prod-gpu"},
    }
    exported = _export(fleet, one_pool)
    assert [(p["name"], p["gpus"]) for p in exported.fleet["pools"]] == [("prod-gpu", 8), ("prod-gpu-2", 4)]
    renamed = _export(fleet, one_pool, rename_pools=True)
    assert [p["name"] for p in renamed.fleet["pools"]] == ["pool-0", "pool-0-2"]


def test_a_driver_no_personality_publishes_is_left_out_with_a_note() -> None:
    counts = Counter(
        {
            ("h100", Shape("gpu.nvidia.com", "h100-80gb-hbm3", 8, dra=True)): 2,
            ("acme", Shape("gpu.acme.example", "h100-80gb-hbm3", 4, dra=True)): 3,
            ("cpu", Shape("", "", 0)): 10,
        }
    )
    exported = build_fleet(counts, [], RESOURCE, False)
    assert [p["name"] for p in exported.fleet["pools"]] == ["h100"]
    # no class maps nvidia.com/gpu here: the first personality whose class does not map it
    assert exported.fleet["pools"][0]["personality"] == "nvidia-v25.3"
    assert exported.notes == [
        "left out: 3 node(s) of pool acme: driver gpu.acme.example: no fake personality publishes it"
    ]
    assert exported.nodes == 15


def test_a_cluster_without_gpus_is_one_line() -> None:
    with pytest.raises(HarnessError, match=r"^no GPU pool to export: "):
        build_fleet(Counter({("cpu", Shape("", "", 0)): 3}), [], RESOURCE, False)


@pytest.mark.parametrize(
    ("label", "key"),
    [
        ("NVIDIA-H100-80GB-HBM3", "h100-80gb-hbm3"),
        ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
        ("Tesla-K80", None),
    ],
)
def test_gpu_feature_discoverys_product_label_names_the_profile(label: str, key: str | None) -> None:
    found = profile_for(label)
    assert (found.key if found else None) == key


def test_a_device_plugin_node_takes_its_profile_from_the_label_else_the_default() -> None:
    node: Obj = {
        "metadata": {"name": "n", "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe"}},
        "status": {"allocatable": {RESOURCE: "4"}},
    }
    assert node_shape(node, None, RESOURCE, "h100-80gb-hbm3") == Shape(
        "", "a100-80gb-pcie", 4, device_plugin=True
    )
    node["metadata"]["labels"] = {}
    assert node_shape(node, None, RESOURCE, "l4") == Shape("", "l4", 4, device_plugin=True)
