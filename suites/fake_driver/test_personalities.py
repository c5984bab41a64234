"""Every personality's slices and DeviceClasses are accepted, unchanged, by the real API
server of the running minor."""

from __future__ import annotations

from typing import Any

import pytest

from fake_driver.api.kube import KubeRest
from fake_driver.facts.personalities import get_personality
from fake_driver.facts.profiles import get_profile
from fake_driver.rendering.deviceclasses import render_device_classes
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.kit.drastate import device_names, node_slices, pools
from harness.kit.kinds import RESOURCE_V1
from harness.kit.kube import Kube, Obj

pytestmark = [pytest.mark.fake_driver_only("own slices, faults and installer")]

STATIC = {"mode": "static", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}
PARTITIONABLE = pytest.mark.feature_gate("DRAPartitionableDevices")

CASES = [
    pytest.param(GpuPoolSpec(personality="nvidia-v25.3"), id="nvidia-v25.3-h100"),
    pytest.param(GpuPoolSpec(personality="nvidia-v25.3", mig=STATIC), id="nvidia-v25.3-h100-static-mig"),
    pytest.param(GpuPoolSpec(personality="nvidia-v25.8", profile="l4"), id="nvidia-v25.8-l4"),
    pytest.param(GpuPoolSpec(personality="nvidia-v25.8", mig=STATIC), id="nvidia-v25.8-h100-static-mig"),
    pytest.param(GpuPoolSpec(personality="nvidia-v25.12", profile="t4"), id="nvidia-v25.12-t4"),
    pytest.param(
        GpuPoolSpec(personality="nvidia-v25.12", profile="b200", mig={**STATIC, "layout": ["7g.180gb"]}),
        id="nvidia-v25.12-b200-static-mig",
    ),
    pytest.param(
        GpuPoolSpec(personality="nvidia-v25.12", mig="dynamic"),
        marks=PARTITIONABLE,
        id="nvidia-v25.12-h100-dynamic-mig",
    ),
    pytest.param(
        GpuPoolSpec(personality="nvidia-v25.12", profile="a100-40gb", gpus=2, mig="dynamic"),
        marks=PARTITIONABLE,
        id="nvidia-v25.12-a100-dynamic-mig",
    ),
    pytest.param(GpuPoolSpec(personality="nvidia-v0.4", profile="h200-141gb-hbm3e"), id="nvidia-v0.4-h200"),
    pytest.param(
        GpuPoolSpec(personality="nvidia-v0.4", mig="dynamic"),
        marks=PARTITIONABLE,
        id="nvidia-v0.4-h100-dynamic-mig",
    ),
    pytest.param(GpuPoolSpec(personality="example-v0.4", profile="l4"), id="example-v0.4"),
    pytest.param(
        GpuPoolSpec(personality="example-v0.4", profile="l4", consumable_capacity=True),
        marks=pytest.mark.feature_gate("DRAConsumableCapacity"),
        id="example-v0.4-consumable-capacity",
    ),
]


@pytest.mark.parametrize("pool", CASES)
def test_slices_are_accepted_as_rendered(kube: Kube, gpu_fleet: MakeGpuFleet, pool: GpuPoolSpec) -> None:
    # Every write is dry-run first and compared with what the server stored: a rejected or
    # silently dropped field would raise PublishError naming it.
    fleet = gpu_fleet(GpuPoolSpec(**{**vars(pool), "suffix": "p"}), classes=False)
    [node] = fleet.node_names
    rendered = fleet.publisher.rendered(node)
    driver = rendered.driver

    stored = node_slices(kube, node, driver)

    assert [r.action for r in fleet.report.results] == ["created"]
    assert pools(stored) == [
        {"name": node, "generation": 1, "resourceSliceCount": len(rendered.slices)}
    ] * len(rendered.slices)
    assert sorted(device_names(stored)) == sorted(d.name for d in rendered.devices)
    assert [s["spec"].get("sharedCounters") for s in stored] == [
        s["spec"].get("sharedCounters") for s in rendered.slices
    ]
    assert [_devices(s) for s in stored] == [_devices(s) for s in rendered.slices]


def _devices(s: dict[str, Any]) -> list[dict[str, Any]]:
    # The example driver sends allowMultipleAllocations: false (EX gpu.go @ v0.4.0); a server
    # without DRAConsumableCapacity drops the field, which changes nothing for a false.
    devices = [
        {k: v for k, v in d.items() if not (k == "allowMultipleAllocations" and v is False)}
        for d in s["spec"].get("devices") or []
    ]
    return sorted(devices, key=lambda d: d["name"])


@pytest.mark.feature_gate("DRAExtendedResource")  # without it the server drops extendedResourceName
@pytest.mark.parametrize(
    "personality", ["nvidia-v25.3", "nvidia-v25.8", "nvidia-v25.12", "nvidia-v0.4", "example-v0.4"]
)
def test_device_classes_are_accepted_as_rendered(kube: Kube, personality: str) -> None:
    # Dry runs of the real names: the server validates and defaults them in full (extended
    # resource names, CEL) without writing, so no other test sees them. A name the session's
    # driver fixture installed already is dry-run replaced instead of created.
    p = get_personality(personality)
    mig_classes = get_profile("h100-80gb-hbm3") if p.is_nvidia else None
    classes = render_device_classes(p, mig_profile_classes=mig_classes)
    rest = KubeRest(kube.api_client)

    base = f"/apis/{RESOURCE_V1}/deviceclasses"

    def dry_run(dc: Obj) -> Obj:
        current = rest.get(f"{base}/{dc['metadata']['name']}")
        if current is None:
            return rest.create(base, dc, dry_run=True)
        body = {
            **dc,
            "metadata": {**dc["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }
        return rest.replace(f"{base}/{dc['metadata']['name']}", body, dry_run=True)

    stored = [dry_run(dc) for dc in classes]

    assert [s["metadata"]["name"] for s in stored] == [c["metadata"]["name"] for c in classes]
    assert [s["spec"] for s in stored] == [c["spec"] for c in classes]
