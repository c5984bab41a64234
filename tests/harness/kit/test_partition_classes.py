"""What counts as a partition (harness.kit.partitions), on slices the fake driver's personalities
render and on crafted devices: by consumesCounters or a MIG parentUUID, never by what a class
leaves out; and the selectors the partitions suites build from them (pure)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import render_node
from fixtures.requirements import fleet_lacks
from harness.core.drivers import ContainerView
from harness.kit.fleet_inventory import selects
from harness.kit.kube import Obj
from harness.kit.partitions import capacities, families, fits, over, overcommits, used_by
from harness.qualify.capabilities import CAPABILITIES, Verdict, decide
from harness.reports.summary import TestRecord
from suites.driver.published import WHAT, exact_selector


def _node(pool: Obj) -> tuple[list[Obj], list[Obj]]:
    """(devices, counter sets) the pool's one node publishes (1.37: sets in their own slice)."""
    fleet = fleet_from_dict({"pools": [{"name": "p", "count": 1, **pool}]})
    slices = render_node(fleet.nodes[0], (1, 37)).slices
    devices = [d for s in slices for d in s["spec"].get("devices") or []]
    return devices, [c for s in slices for c in s["spec"].get("sharedCounters") or []]


def _shape(pool: Obj) -> list[tuple[str | None, list[str], tuple[str, ...]]]:
    """Per family: (parent, partitions, counter sets)."""
    return [
        (f.parent["name"] if f.parent else None, f.names(), f.counter_sets) for f in families(*_node(pool))
    ]


def _device(name: str, attrs: Obj, consumes: Obj | None = None) -> Obj:
    d: Obj = {"name": name, "attributes": {k: {"string": v} for k, v in attrs.items()}}
    if consumes is not None:
        d["consumesCounters"] = [
            {"counterSet": "cs", "counters": {k: {"value": v} for k, v in consumes.items()}}
        ]
    return d


CS = [{"name": "cs", "counters": {"memory": {"value": "80Gi"}}}]


def test_a_two_product_fleet_without_partitions_has_none_and_its_capability_is_not_supported() -> None:
    """The bug: with the class narrowed to H100s, the A100s counted as "partitions" -> PASS."""
    for profile in ("h100-80gb-hbm3", "a100-80gb-pcie"):
        assert _shape({"profile": profile, "gpus": 2, "personality": "nvidia-v0.4"}) == []
    reason = fleet_lacks("gpu.nvidia.com", WHAT, "none")
    node = "suites/driver/test_published_devices.py::test_a_partition_device_is_allocated_on_its_node"
    [partitions] = [c for c in CAPABILITIES if c.id == "partitions"]
    result = decide(partitions, [TestRecord(node, "driver", "skipped", 0.1, "", [reason])])
    assert (result.verdict, result.evidence) == (
        Verdict.NOT_SUPPORTED,
        [f"test_a_partition_device_is_allocated_on_its_node: {reason.message()}"],
    )


def test_mig_devices_with_a_parent_are_partitions_whether_or_not_the_parent_is_published() -> None:
    mig: Obj = {"mode": "static", "layout": ["3g.40gb"] * 2, "gpus": [0]}
    static: Obj = {"profile": "a100-80gb-pcie", "gpus": 2, "mig": mig}
    # v0.4.1 hides a MIG-enabled GPU; v25.3 keeps announcing it (and nothing ties the two).
    assert _shape(
        {
            **static,
            "personality": "nvidia-v0.4",
        }
    ) == [(None, ["gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4"], ())]
    assert _shape(
        {
            **static,
            "personality": "nvidia-v25.3",
        }
    ) == [("gpu-0", ["gpu-0-mig-9-0-4", "gpu-0-mig-9-4-4"], ())]


def test_dynamic_mig_gives_a_family_per_gpu_on_its_counter_set_with_the_full_gpu_as_parent() -> None:
    shape = _shape({"profile": "h100-80gb-hbm3", "gpus": 2, "personality": "nvidia-v25.12", "mig": "dynamic"})
    assert [(p, len(parts), sets) for p, parts, sets in shape] == [
        ("gpu-0", 25, ("gpu-0-counter-set",)),
        ("gpu-1", 25, ("gpu-1-counter-set",)),
    ]
    assert all(n.startswith("gpu-0-mig-") for n in shape[0][1])


def test_counter_consuming_devices_are_partitions_and_the_one_taking_the_whole_set_is_their_parent() -> None:
    assert _shape({"profile": "l4", "gpus": 2, "personality": "example-v0.4", "partitions": 2}) == [
        ("gpu-0-full", ["gpu-0-partition-0", "gpu-0-partition-1"], ("gpu-0-counters",)),
        ("gpu-1-full", ["gpu-1-partition-0", "gpu-1-partition-1"], ("gpu-1-counters",)),
    ]
    whole, half = _device("whole", {}, {"memory": "80Gi"}), _device("half", {}, {"memory": "40Gi"})
    [family] = families([whole, half], CS)
    assert (family.parent, family.names(), family.key) == (whole, ["half"], "counters cs")
    # The set not published: which one is whole cannot be told, so both are partitions.
    [family] = families([whole, half])
    assert (family.parent, family.names()) == (None, ["whole", "half"])


def test_neither_a_profile_attribute_nor_a_mig_type_without_a_parent_makes_a_partition() -> None:
    devices = [
        _device("a", {"profile": "1g.10gb"}),
        _device("b", {"type": "mig"}),
        _device("c", {"type": "gpu", "uuid": "GPU-1"}),
    ]
    assert families(devices, CS) == []


def test_counters_are_summed_and_what_fits_is_what_the_set_still_holds() -> None:
    parts = [_device(f"p{i}", {}, {"memory": "40Gi"}) for i in range(2)]
    whole = _device("whole", {}, {"memory": "80Gi"})
    cap = capacities(CS)
    [family] = families([whole, *parts], CS)
    assert overcommits(family, cap)
    assert used_by(parts) == {("cs", "memory"): Decimal(80 << 30)}
    assert (fits(parts[1], used_by(parts[:1]), cap), fits(whole, used_by(parts[:1]), cap)) == (True, False)
    assert over(used_by([whole, *parts]), cap) == [f"cs/memory {160 << 30} > {80 << 30}"]
    assert not overcommits(families(parts, CS)[0], cap)


@pytest.mark.parametrize(
    ("pool", "driver"),
    [
        (
            {"profile": "h100-80gb-hbm3", "gpus": 2, "personality": "nvidia-v25.12", "mig": "dynamic"},
            "gpu.nvidia.com",
        ),
        ({"profile": "l4", "gpus": 2, "personality": "example-v0.4", "partitions": 2}, "gpu.example.com"),
    ],
)
def test_a_selector_singles_out_a_family_its_parent_and_its_partitions(pool: Obj, driver: str) -> None:
    devices, sets = _node(pool)
    for family in families(devices, sets):
        assert family.parent is not None
        for chosen in (family.partitions, (family.parent,), family.devices):
            selector = exact_selector(devices, chosen, driver)
            assert selector is not None
            picked = [d["name"] for d in devices if selects([selector], driver, d)]
            assert picked == [d["name"] for d in devices if d in chosen]


def test_no_selector_when_attributes_cannot_tell_devices_apart() -> None:
    twins = [_device("a", {"model": "x"}), _device("b", {"model": "x"})]
    assert exact_selector(twins, twins[:1], "d.example") is None


def test_a_container_view_says_whether_it_can_name_a_partition() -> None:
    nvidia = ContainerView(("sh",), r"^(?P<device>gpu-\d+)$")  # versions.toml [drivers.nvidia]
    example = ContainerView(("env",), r"^GPU_DEVICE_\w+=(?P<device>gpu-[\w-]+)$")
    assert (nvidia.can_name("gpu-0"), nvidia.can_name("gpu-0-mig-3g40gb-9-0")) == (True, False)
    assert example.can_name("gpu-0-partition-1")
    assert ContainerView(("x",), r"^(?P<device>[)(]+(a|b))$").can_name("()a")
