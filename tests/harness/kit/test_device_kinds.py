"""What counts as a MIG device, a shared device or a counter consumer when a test needs one
(`@pytest.mark.needs_devices`) on an external driver (pure: the fields of published devices)."""

from __future__ import annotations

import pytest

from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import render_node
from harness.kit.fleet_inventory import DEVICE_KINDS
from harness.kit.kube import Obj


def _devices(pool: Obj) -> list[Obj]:
    fleet = fleet_from_dict({"pools": [{"name": "p", "count": 1, **pool}]})
    return [d for s in render_node(fleet.nodes[0], (1, 37)).slices for d in s["spec"].get("devices") or []]


def _kinds(devices: list[Obj]) -> set[str]:
    return {kind for kind, (_, test) in DEVICE_KINDS.items() if any(test(d) for d in devices)}


@pytest.mark.parametrize(
    ("pool", "kinds"),
    [
        ({"profile": "h100-80gb-hbm3", "gpus": 2, "personality": "nvidia-v0.4"}, set()),
        (
            {
                "profile": "a100-80gb-pcie",
                "gpus": 1,
                "personality": "nvidia-v0.4",
                "mig": {"mode": "static", "layout": ["3g.40gb"]},
            },
            {"mig"},
        ),
        (
            {"profile": "h100-80gb-hbm3", "gpus": 1, "personality": "nvidia-v25.12", "mig": "dynamic"},
            {"mig", "counters"},
        ),
        (
            {"profile": "l4", "gpus": 1, "personality": "example-v0.4", "consumable_capacity": True},
            {"shared"},
        ),
    ],
)
def test_the_fake_personalities_devices_are_of_the_kinds_their_fleet_says(pool: Obj, kinds: set[str]) -> None:
    assert _kinds(_devices(pool)) == kinds
