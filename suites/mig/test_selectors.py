"""CEL selectors on the devices the driver under test publishes: one that matches nothing, one
that fails at runtime where a device lacks the attribute, and comparisons on quantities and
versions. Every selector is built from what the driver's slices carry (attribute names, types
and values), so the same tests qualify an external driver on its own nodes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import pytest

from fixtures.driver import DriverNodes, DriverUnderTest, MakeGpuPool
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from fixtures.requirements import fleet_lacks, skip
from harness.clusters.base import Cell
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.cel import field_ref
from harness.kit.drastate import allocation, claims_of
from harness.kit.fleet_inventory import Inventory, inventory
from harness.kit.kube import Kube, Obj, parse_quantity
from harness.kit.pods import (
    condition,
    create_claim_pod,
    scheduling_message,
    unschedulable_reasons,
    verdict,
    wait_phase,
    wait_unschedulable,
)
from harness.kit.waits import TIMEOUTS, assert_stays, wait_for
from suites.mig.claims import NV

HINT_1_37 = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() "
    "for optional fields"
)
_LITERAL: dict[str, Callable[[Any], str]] = {
    "string": json.dumps,
    "int": str,
    "bool": lambda v: "true" if v else "false",
}


def _pending(kube: Kube, namespace: str, name: str, scheduled: Obj | None) -> None:
    assert_stays(
        lambda: kube.get(*kinds.POD, name, namespace),
        lambda p: (
            p["status"]["phase"] == "Pending" and verdict(condition(p, "PodScheduled")) == verdict(scheduled)
        ),
        duration=TIMEOUTS.stays_pending,
        describe=f"pod {name} Pending with the same PodScheduled condition",
    )


def _node_devices(kube: Kube, driver: DriverUnderTest, pool: DriverNodes) -> tuple[Obj, ...]:
    """The devices of the class on the pool's first node, as its slices publish them."""
    inv = inventory(kube, driver.driver, driver.device_class)
    [node] = [n for n in inv.nodes if n.node == pool.nodes[0]]
    return node.matching


def _typed(device: Obj, driver: str, field: str, kinds_: tuple[str, ...]) -> list[tuple[str, str, Any]]:
    """(CEL reference, type, value) of the device's attributes or capacities of `kinds_`."""
    found = []
    for key, value in sorted((device.get(field) or {}).items()):
        ref = field_ref(field, key, driver)
        kind = next((k for k in kinds_ if k in value), None)
        if ref is not None and kind is not None:
            found.append((ref, kind, value[kind]))
    return found


def test_selector_matching_nothing_keeps_the_pod_pending(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool
) -> None:
    pool = gpu_pool(nodes=1, gpus=2)
    device = _node_devices(kube, driver, pool)[0]
    strings = _typed(device, driver.driver, "attributes", ("string",))
    if not strings:
        skip(fleet_lacks(driver.device_class, "a string attribute", f"{device['name']} publishes none"))
    ref, _, value = strings[0]
    nothing = b.exact_request(
        "gpu", driver.device_class, selectors=[f"{ref} == {json.dumps(f'{value}-none')}"]
    )

    create_claim_pod(kube, namespace, "nothing", [nothing], pool.node_selector)

    pod = wait_unschedulable(kube, namespace, "nothing")
    assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == 1
    _pending(kube, namespace, "nothing", condition(pod, "PodScheduled"))


def _attribute_on_some(inv: Inventory) -> tuple[str, str, set[str]] | None:
    """(selector, missing name, devices lacking it) for an attribute of the driver's own domain
    that some of the class's devices publish and others do not, where those others still carry
    the domain (else the error names the domain); None if every device has the same names."""
    devices = [d for n in inv.nodes for d in n.matching]
    names = {k for d in devices for k in d.get("attributes") or {}}
    for key in sorted(k for k in names if "/" not in k):
        having = [d for d in devices if key in d["attributes"]]
        lacking = [d for d in devices if key not in (d.get("attributes") or {})]
        typed = _typed(having[0], inv.driver, "attributes", tuple(_LITERAL))
        match = next((t for t in typed if t[0].endswith(f".{key}")), None)
        own_domain = all(any("/" not in k for k in d.get("attributes") or {}) for d in lacking)
        if lacking and match and own_domain:
            ref, kind, value = match
            return f"{ref} == {_LITERAL[kind](value)}", key, {d["name"] for d in lacking}
    return None


def test_selector_reading_an_attribute_missing_on_some_nodes_is_a_cel_runtime_error(
    kube: Kube, namespace: str, cell: Cell, driver: DriverUnderTest, request: pytest.FixtureRequest
) -> None:
    if driver.source == "fake":
        # nvidia-v25.3 still publishes `index`; v25.8+ dropped it (NV PR #624).
        gpu_fleet: MakeGpuFleet = request.getfixturevalue("gpu_fleet")
        fleet = gpu_fleet(
            GpuPoolSpec(gpus=1, personality="nvidia-v25.3"), GpuPoolSpec(gpus=1, personality="nvidia-v25.12")
        )
        inv, pin = inventory(kube, NV, fleet.device_class(NV)), fleet.node_selector
        inv = Inventory(
            inv.driver, inv.device_class, tuple(n for n in inv.nodes if n.node in fleet.node_names)
        )
    else:
        inv, pin = inventory(kube, driver.driver, driver.device_class), dict(driver.node_selector)
    found = _attribute_on_some(inv)
    if found is None:
        has = f"{sum(n.count for n in inv.nodes)} devices, all with the same attribute names"
        skip(fleet_lacks(inv.device_class, "2 devices with different attribute names", has))
    selector, missing, lacking = found

    create_claim_pod(
        kube, namespace, "index", [b.exact_request("gpu", inv.device_class, selectors=[selector])], pin
    )

    pod = wait_for(
        lambda: kube.get(*kinds.POD, "index", namespace),
        lambda p: "CEL runtime error" in scheduling_message(p),
        timeout=TIMEOUTS.pod_scheduled,
        describe="pod index PodScheduled=False with a CEL runtime error",
    )
    [claim] = claims_of(kube, namespace, "index")
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None
    assert (scheduled["status"], scheduled["reason"]) == ("False", "SchedulerError")
    # The filter error aborts the whole scheduling attempt, so a node that would fit is never
    # chosen. 1.37 names the device and appends a hint (dynamic-resource-allocation v0.37
    # structured/internal/*/allocator_*.go and cel/errors.go); 1.35/1.36 do neither.
    form = re.fullmatch(
        rf'running "DynamicResources" filter plugin: claim {namespace}/{claim["metadata"]["name"]}: '
        rf"selector #0(?: on device {re.escape(inv.driver)}/[^/]+/(?P<device>[^:]+))?: "
        rf"CEL runtime error: no such key: {missing}(?P<hint>.*)",
        scheduled["message"],
    )
    assert form is not None, scheduled["message"]
    if cell.number >= (1, 37):
        assert (form["device"] in lacking, form["hint"]) == (True, HINT_1_37)
    else:
        assert (form["device"], form["hint"]) == (None, "")
    _pending(kube, namespace, "index", scheduled)


def _exact(quantity: str) -> str:
    """The same amount in other words: base units without a suffix (80Gi -> 85899345920)."""
    amount = parse_quantity(quantity)
    return str(amount.to_integral_value()) if amount == amount.to_integral_value() else str(amount)


def _above(values: list[Decimal]) -> str:
    return str(max(values).to_integral_value() + 1)


def test_cel_on_quantities_and_versions_compares_values_not_text(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    devices = _node_devices(kube, driver, pool)
    quantities = _typed(devices[0], driver.driver, "capacity", ("value",))
    versions = _typed(devices[0], driver.driver, "attributes", ("version",))
    if not quantities or not versions:
        has = f"{devices[0]['name']}: {len(quantities)} capacities, {len(versions)} version attributes"
        skip(fleet_lacks(driver.device_class, "a capacity and a version attribute", has))
    (memory, _, amount), (version, _, release) = quantities[0], versions[0]
    # Every device of the node, for "above": no device may meet it, whatever the node mixes.
    node_amounts = [
        parse_quantity(v)
        for d in devices
        for r, _, v in _typed(d, driver.driver, "capacity", ("value",))
        if r == memory
    ]
    node_majors = [
        int(str(v).split(".")[0])
        for d in devices
        for r, _, v in _typed(d, driver.driver, "attributes", ("version",))
        if r == version
    ]
    requests: Mapping[str, list[str]] = {
        "same": [
            f"{memory}.compareTo(quantity('{_exact(str(amount))}')) == 0",
            f"{version}.compareTo(semver('{release}')) == 0",
        ],
        "more-memory": [f"{memory}.compareTo(quantity('{_above(node_amounts)}')) >= 0"],
        "newer": [f"{version}.compareTo(semver('{max(node_majors) + 1}.0.0')) >= 0"],
    }
    for name, selectors in requests.items():
        request = b.exact_request("gpu", driver.device_class, selectors=selectors)
        create_claim_pod(kube, namespace, name, [request], pool.node_selector)

    wait_phase(kube, namespace, "same", "Running")
    [(_, _pool, device)] = allocation(kube, namespace, "same")
    [chosen] = [d for d in devices if d["name"] == device]
    published = {r: v for r, _, v in _typed(chosen, driver.driver, "capacity", ("value",))}
    published |= {r: v for r, _, v in _typed(chosen, driver.driver, "attributes", ("version",))}
    assert (published[memory], published[version]) == (amount, release)
    for name in ("more-memory", "newer"):
        pod = wait_unschedulable(kube, namespace, name)
        assert unschedulable_reasons(scheduling_message(pod)).get("cannot allocate all claims") == 1, name
