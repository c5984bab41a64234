"""Rendering vs. the reference tables (reference-drivers.md §1.2, §1.3, §1.4, §2.2).

Expected sets are written out here on purpose, not derived from fake_driver.facts.personalities.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from fake_driver.api.apilimits import SUPPORTED_MINORS
from fake_driver.facts.personalities import PERSONALITIES
from fake_driver.facts.profiles import PROFILES
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import RenderedPool, render_node

NVIDIA = ("nvidia-v25.3", "nvidia-v25.8", "nvidia-v25.12", "nvidia-v0.4", "nvidia-v0.5")
MIG_PROFILES = tuple(k for k, p in PROFILES.items() if p.mig_capable)

S, INT, V = "string", "int", "version"
_BASE = {
    "type": S,
    "uuid": S,
    "productName": S,
    "brand": S,
    "architecture": S,
    "cudaComputeCapability": V,
    "driverVersion": V,
    "cudaDriverVersion": V,
    "resource.kubernetes.io/pcieRoot": S,
}
FULL_GPU = {
    "nvidia-v25.3": {**_BASE, "index": INT, "minor": INT, "pcieBusID": S},
    "nvidia-v25.8": {**_BASE, "pcieBusID": S},
    "nvidia-v25.12": {**_BASE, "resource.kubernetes.io/pciBusID": S, "addressingMode": S},
    "nvidia-v0.4": {**_BASE, "resource.kubernetes.io/pciBusID": S, "addressingMode": S},
    "nvidia-v0.5": {**_BASE, "resource.kubernetes.io/pciBusID": S, "addressingMode": S},
}
# tests/bats/test_gpu_basic.bats @ HEAD, verbatim.
BATS_FULL = set(
    [
        "architecture",
        "brand",
        "cudaComputeCapability",
        "cudaDriverVersion",
        "driverVersion",
        "productName",
        "resource.kubernetes.io/pciBusID",
        "resource.kubernetes.io/pcieRoot",
        "type",
        "uuid",
        "addressingMode",
    ]
)
# tests/bats/test_gpu_mig.bats @ HEAD, verbatim (13 names).
BATS_MIG = set(
    [
        "architecture",
        "brand",
        "cudaComputeCapability",
        "cudaDriverVersion",
        "driverVersion",
        "productName",
        "resource.kubernetes.io/pciBusID",
        "resource.kubernetes.io/pcieRoot",
        "type",
        "uuid",
        "parentUUID",
        "profile",
        "addressingMode",
    ]
)
STATIC_MIG = {
    "nvidia-v25.3": {
        **_BASE,
        "parentUUID": S,
        "profile": S,
        "pcieBusID": S,
        "index": INT,
        "parentIndex": INT,
    },
    "nvidia-v25.8": {**_BASE, "parentUUID": S, "profile": S, "pcieBusID": S},
    "nvidia-v25.12": {
        **_BASE,
        "parentUUID": S,
        "profile": S,
        "resource.kubernetes.io/pciBusID": S,
        "addressingMode": S,
    },
    "nvidia-v0.4": {
        **_BASE,
        "parentUUID": S,
        "profile": S,
        "resource.kubernetes.io/pciBusID": S,
        "addressingMode": S,
    },
    "nvidia-v0.5": {
        **_BASE,
        "parentUUID": S,
        "profile": S,
        "resource.kubernetes.io/pciBusID": S,
        "addressingMode": S,
    },
}
MIG_CAPS = {"multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines", "memory"}
EXAMPLE = {"index": INT, "uuid": S, "model": S, "driverVersion": V}


def _fleet(profile: str, personality: str, gpus: int = 2, **pool: Any) -> Any:
    return fleet_from_dict(
        {
            "pools": [
                {
                    "name": "p",
                    "nodes": ["n1"],
                    "profile": profile,
                    "gpus": gpus,
                    "personality": personality,
                    **pool,
                }
            ]
        }
    )


def _render(profile: str, personality: str, minor: tuple[int, int], **pool: Any) -> RenderedPool:
    return render_node(_fleet(profile, personality, **pool).node("n1"), minor)


def _devices(r: RenderedPool) -> list[dict[str, Any]]:
    return [d for s in r.slices for d in s["spec"].get("devices", ())]


def _types(device: dict[str, Any]) -> dict[str, str]:
    out = {}
    for name, value in device["attributes"].items():
        (kind,) = value.keys()
        out[name] = kind
    return out


def test_matrix_covers_every_personality_and_profile() -> None:
    assert set(PERSONALITIES) == {*NVIDIA, "example-v0.4"}, "add it to NVIDIA and its attribute rows here"
    assert {"h100-80gb-hbm3", "h200-141gb-hbm3e", "a100-80gb-pcie", "a100-40gb", "l4", "t4", "b200"} <= set(
        PROFILES
    )


@pytest.mark.parametrize(
    ("profile", "personality", "minor"), list(itertools.product(PROFILES, NVIDIA, SUPPORTED_MINORS))
)
def test_full_gpu_attribute_names_and_types(profile: str, personality: str, minor: tuple[int, int]) -> None:
    devices = _devices(_render(profile, personality, minor))
    assert [d["name"] for d in devices] == ["gpu-0", "gpu-1"]
    for d in devices:
        assert _types(d) == FULL_GPU[personality]
        assert set(d["capacity"]) == {"memory"}
        assert d["attributes"]["type"] == {"string": "gpu"}


@pytest.mark.parametrize("personality", ["nvidia-v25.12", "nvidia-v0.4"])
def test_full_gpu_matches_nvidia_bats_list(personality: str) -> None:
    (d, _) = _devices(_render("h100-80gb-hbm3", personality, (1, 35)))
    assert set(d["attributes"]) == BATS_FULL


@pytest.mark.parametrize(
    ("profile", "personality", "minor"), list(itertools.product(MIG_PROFILES, NVIDIA, SUPPORTED_MINORS))
)
def test_static_mig_attribute_names_types_and_capacities(
    profile: str, personality: str, minor: tuple[int, int]
) -> None:
    hw = PROFILES[profile]
    seven = hw.mig_profiles[0].name  # the 1-slice profile, placements 0..6
    r = _render(profile, personality, minor, mig={"mode": "static", "layout": [seven] * 7, "gpus": [0]})
    devices = _devices(r)
    migs = [d for d in devices if d["attributes"]["type"] == {"string": "mig"}]
    fulls = [d for d in devices if d["attributes"]["type"] == {"string": "gpu"}]
    # MIG-enabled GPU 0: parent not announced (still announced by v25.3.2); GPU 1 (MIG off)
    # is a full GPU.
    parents = ["gpu-0", "gpu-1"] if personality == "nvidia-v25.3" else ["gpu-1"]
    assert [d["name"] for d in fulls] == parents
    assert len(migs) == 7
    for k, d in enumerate(migs):
        assert _types(d) == STATIC_MIG[personality]
        assert set(d["capacity"]) == MIG_CAPS | {f"memorySlice{k}"}
        assert d["attributes"]["uuid"]["string"].startswith("MIG-")
        assert d["attributes"]["parentUUID"] == {"string": r.gpus[0].uuid}
    if personality in ("nvidia-v25.12", "nvidia-v0.4"):
        assert set(migs[0]["attributes"]) == BATS_MIG


@pytest.mark.parametrize(("profile", "minor"), list(itertools.product(PROFILES, SUPPORTED_MINORS)))
def test_example_driver_attributes(profile: str, minor: tuple[int, int]) -> None:
    devices = _devices(_render(profile, "example-v0.4", minor))
    assert [d["name"] for d in devices] == ["gpu-0", "gpu-1"]
    for i, d in enumerate(devices):
        assert _types(d) == EXAMPLE
        assert d["attributes"]["index"] == {"int": i}
        assert d["attributes"]["model"] == {"string": "LATEST-GPU-MODEL"}
        assert d["attributes"]["driverVersion"] == {"version": "1.0.0"}
        assert d["attributes"]["uuid"]["string"].startswith("gpu-")
        assert d["capacity"] == {"memory": {"value": "80Gi"}, "compute": {"value": "100"}}
        assert d["allowMultipleAllocations"] is False  # EX gpu.go @ v0.4.0 always sets it


def test_versions_are_semver_without_leading_zeros() -> None:
    (d, _) = _devices(
        _render(
            "h100-80gb-hbm3", "nvidia-v25.12", (1, 35), driver_version="580.95.05", cuda_driver_version="13.0"
        )
    )
    a = d["attributes"]
    assert a["driverVersion"] == {"version": "580.95.5"}
    assert a["cudaDriverVersion"] == {"version": "13.0.0"}
    assert a["cudaComputeCapability"] == {"version": "9.0.0"}


def test_full_gpu_values_h100() -> None:
    r = _render("h100-80gb-hbm3", "nvidia-v25.8", (1, 34))
    d = _devices(r)[1]
    assert d["attributes"]["productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert d["attributes"]["brand"] == {"string": "Nvidia"}
    assert d["attributes"]["architecture"] == {"string": "Hopper"}
    assert d["attributes"]["pcieBusID"] == {"string": r.gpus[1].pci_bus_id}
    assert d["attributes"]["uuid"] == {"string": r.gpus[1].uuid}
    # NVML memory.Total of an H100 80GB HBM3 is 81559 MiB, so `memory >= 80Gi` fails on it.
    assert d["capacity"] == {"memory": {"value": "81559Mi"}}


def test_a100_80gb_memory_is_80Gi_like_issue_719() -> None:
    (d, _) = _devices(_render("a100-80gb-pcie", "nvidia-v25.8", (1, 34)))
    assert d["capacity"]["memory"] == {"value": "80Gi"}
    assert d["attributes"]["productName"] == {"string": "NVIDIA A100 80GB PCIe"}


@pytest.mark.parametrize(
    ("personality", "names"),
    [
        # v25.3.2 still announces the MIG-enabled parent.
        ("nvidia-v25.3", ["gpu-0", "gpu-0-mig-14-4-2", "gpu-0-mig-19-6-1", "gpu-0-mig-9-0-4"]),
        ("nvidia-v25.8", ["gpu-0-mig-14-4-2", "gpu-0-mig-19-6-1", "gpu-0-mig-9-0-4"]),
        ("nvidia-v25.12", ["gpu-0-mig-1g10gb-19-6", "gpu-0-mig-2g20gb-14-4", "gpu-0-mig-3g40gb-9-0"]),
        ("nvidia-v0.4", ["gpu-0-mig-1g10gb-19-6", "gpu-0-mig-2g20gb-14-4", "gpu-0-mig-3g40gb-9-0"]),
    ],
)
def test_static_mig_device_names_per_line(personality: str, names: list[str]) -> None:
    r = _render(
        "h100-80gb-hbm3",
        personality,
        (1, 35),
        gpus=1,
        mig={"mode": "static", "layout": ["3g.40gb", "2g.20gb", "1g.10gb"]},
    )
    assert sorted(d["name"] for d in _devices(r)) == names


def test_static_mig_capacities_h100_3g() -> None:
    r = _render(
        "h100-80gb-hbm3", "nvidia-v0.4", (1, 35), gpus=1, mig={"mode": "static", "layout": ["3g.40gb"]}
    )
    (d,) = _devices(r)
    assert d["name"] == "gpu-0-mig-3g40gb-9-0"
    assert d["capacity"] == {
        "multiprocessors": {"value": "60"},
        "copyEngines": {"value": "3"},
        "decoders": {"value": "3"},
        "encoders": {"value": "0"},
        "jpegEngines": {"value": "3"},
        "ofaEngines": {"value": "0"},
        "memory": {"value": "40448Mi"},
        "memorySlice0": {"value": "1"},
        "memorySlice1": {"value": "1"},
        "memorySlice2": {"value": "1"},
        "memorySlice3": {"value": "1"},
    }
    assert d["attributes"]["profile"] == {"string": "3g.40gb"}


def test_me_profile_name_is_rfc1123() -> None:
    r = _render(
        "h100-80gb-hbm3", "nvidia-v25.12", (1, 35), gpus=1, mig={"mode": "static", "layout": ["1g.10gb+me"]}
    )
    assert [d["name"] for d in _devices(r)] == ["gpu-0-mig-1g10gb-me-20-0"]


def test_v25_3_mig_index_and_parent_index() -> None:
    r = _render(
        "a100-40gb",
        "nvidia-v25.3",
        (1, 34),
        gpus=2,
        mig={"mode": "static", "layout": ["3g.20gb", "3g.20gb"], "gpus": [1]},
    )
    migs = [d for d in _devices(r) if d["attributes"]["type"] == {"string": "mig"}]
    assert [(d["attributes"]["index"], d["attributes"]["parentIndex"]) for d in migs] == [
        ({"int": 0}, {"int": 1}),
        ({"int": 1}, {"int": 1}),
    ]
    assert [d["name"] for d in migs] == ["gpu-1-mig-9-0-4", "gpu-1-mig-9-4-4"]


def test_slice_envelope_and_name_schemes() -> None:
    old = _render("l4", "nvidia-v25.12", (1, 35)).slices
    new = render_node(_fleet("l4", "nvidia-v0.4").node("n1"), (1, 35), generation=7, node_uid="u-1").slices
    assert [s["metadata"]["generateName"] for s in old] == ["n1-gpu.nvidia.com-"]
    assert [s["metadata"]["generateName"] for s in new] == ["00000-gpu.nvidia.com-n1-"]
    assert "ownerReferences" not in old[0]["metadata"]
    assert new[0]["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u-1", "controller": True}
    ]
    assert new[0]["apiVersion"] == "resource.k8s.io/v1"
    assert new[0]["spec"]["driver"] == "gpu.nvidia.com"
    assert new[0]["spec"]["nodeName"] == "n1"
    assert new[0]["spec"]["pool"] == {"name": "n1", "generation": 7, "resourceSliceCount": 1}
    ex = _render("l4", "example-v0.4", (1, 35)).slices
    assert ex[0]["metadata"]["generateName"] == "00000-gpu.example.com-n1-"
    assert ex[0]["spec"]["driver"] == "gpu.example.com"


def test_rendering_is_deterministic() -> None:
    a = _render("h100-80gb-hbm3", "nvidia-v0.4", (1, 35), mig="dynamic")
    b = _render("h100-80gb-hbm3", "nvidia-v0.4", (1, 35), mig="dynamic")
    assert a.slices == b.slices


def test_rendering_1000_nodes_x_8_gpus_gives_one_slice_of_8_devices_each() -> None:
    # Its cost is a benchmark's (bench/publish.py renders and publishes), not a timed test's.
    fleet = fleet_from_dict({"pools": [{"name": "b", "count": 1000, "profile": "h100-80gb-hbm3", "gpus": 8}]})
    rendered = [render_node(node, (1, 35)) for node in fleet.nodes]
    assert [len(r.slices) for r in rendered] == [1] * 1000
    assert {len(r.slices[0]["spec"]["devices"]) for r in rendered} == {8}
    assert len({r.slices[0]["spec"]["nodeName"] for r in rendered}) == 1000
