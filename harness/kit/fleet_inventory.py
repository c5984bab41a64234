"""What an installed driver publishes, per node: the devices of its slices, and how many of
them a DeviceClass selects (its CEL selectors evaluated offline, harness/kit/cel.py). Tests on
a cluster that is not ours choose their nodes from this, instead of assuming a fleet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from harness.core.errors import HarnessError
from harness.kit import kinds
from harness.kit.cel import Outcome, evaluate
from harness.kit.kube import Kube, Obj
from harness.kit.partitions import Family, Usage, capacities, families


@dataclass(frozen=True)
class NodeDevices:
    node: str
    labels: Mapping[str, str]
    devices: tuple[Obj, ...]  # every device the driver publishes on the node
    matching: tuple[Obj, ...]  # those the class selects

    @property
    def count(self) -> int:
        return len(self.matching)


@dataclass(frozen=True)
class Inventory:
    driver: str
    device_class: str
    nodes: tuple[NodeDevices, ...] = field(default_factory=tuple)

    def summary(self) -> str:
        """'2 nodes: a (8), b (8)' -- what a skip reason shows of the fleet."""
        if not self.nodes:
            return "no node carries its devices"
        listed = ", ".join(f"{n.node} ({n.count})" for n in self.nodes)
        return f"{len(self.nodes)} node(s) with devices of the class: {listed}"


def class_selectors(kube: Kube, device_class: str) -> list[str]:
    """The class's CEL expressions; HarnessError if it does not exist."""
    found = [dc for dc in kube.list(*kinds.DEVICE_CLASS) if dc["metadata"]["name"] == device_class]
    if not found:
        raise HarnessError(f"DeviceClass {device_class} does not exist")
    return [s["cel"]["expression"] for s in found[0]["spec"].get("selectors") or () if "cel" in s]


def selects(expressions: Iterable[str], driver: str, device: Obj) -> bool:
    """All expressions MATCH (an expression this evaluator cannot judge counts as no)."""
    return all(evaluate(e, driver, device).outcome is Outcome.MATCH for e in expressions)


@dataclass(frozen=True)
class NodeFamilies:
    """A node's partition families (harness.kit.partitions) and what they were read from."""

    node: str
    labels: Mapping[str, str]
    devices: tuple[Obj, ...]
    capacity: Usage
    families: tuple[Family, ...]


def partitioned(kube: Kube, driver: str) -> list[NodeFamilies]:
    """Per node with a label set, the driver's partition families; nodes without any left out."""
    devices: dict[str, list[Obj]] = {}
    sets: dict[str, list[Obj]] = {}
    for s in kube.list(*kinds.RESOURCE_SLICE):
        node = s["spec"].get("nodeName")
        if s["spec"]["driver"] == driver and node:
            devices.setdefault(node, []).extend(s["spec"].get("devices") or [])
            sets.setdefault(node, []).extend(s["spec"].get("sharedCounters") or [])
    labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in kube.list(*kinds.NODE)}
    out = []
    for node in sorted(set(devices) & set(labels)):
        found = families(devices[node], sets.get(node, ()))
        if found:
            out.append(
                NodeFamilies(
                    node, labels[node], tuple(devices[node]), capacities(sets.get(node, ())), tuple(found)
                )
            )
    return out


def inventory(kube: Kube, driver: str, device_class: str) -> Inventory:
    exprs = class_selectors(kube, device_class)
    per_node: dict[str, list[Obj]] = {}
    for s in kube.list(*kinds.RESOURCE_SLICE):
        if s["spec"]["driver"] == driver and s["spec"].get("nodeName"):
            per_node.setdefault(s["spec"]["nodeName"], []).extend(s["spec"].get("devices") or [])
    labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in kube.list(*kinds.NODE)}
    nodes = []
    for node in sorted(per_node):
        devices = tuple(per_node[node])
        matching = tuple(d for d in devices if selects(exprs, driver, d))
        if node in labels:
            nodes.append(NodeDevices(node, labels[node], devices, matching))
    return Inventory(driver, device_class, tuple(n for n in nodes if n.count))


def parse_selector(text: str) -> dict[str, str]:
    """'a=b,c=d' -> {'a': 'b', 'c': 'd'}; ValueError on anything else."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"node selector {text!r}: expected key=value[,key=value]")
        out[key] = value
    return out


def choose(inv: Inventory, nodes: int, devices: int, selector: Mapping[str, str]) -> list[NodeDevices]:
    """`nodes` nodes matching `selector` with at least `devices` devices of the class each,
    the smallest first (fewest devices to fill); [] if the fleet has too few."""
    eligible = [
        n for n in inv.nodes if n.count >= devices and all(n.labels.get(k) == v for k, v in selector.items())
    ]
    eligible.sort(key=lambda n: (n.count, n.node))
    return eligible[:nodes] if len(eligible) >= nodes else []


def _attributes(device: Obj) -> Mapping[str, Obj]:
    return device.get("attributes") or {}


# Kinds of devices a test may need (`@pytest.mark.needs_devices(kind)`): what a skip names, and
# how a published device shows it (the fields of resource.k8s.io/v1 Device; NVIDIA's and the fake's
# MIG devices carry type=mig and a profile attribute).
DEVICE_KINDS: dict[str, tuple[str, Callable[[Obj], bool]]] = {
    "mig": (
        "MIG devices (type mig or a profile attribute)",
        lambda d: (_attributes(d).get("type") or {}).get("string") == "mig" or "profile" in _attributes(d),
    ),
    "shared": (
        "shared devices (allowMultipleAllocations)",
        lambda d: bool(d.get("allowMultipleAllocations")),
    ),
    "counters": (
        "devices consuming shared counters (consumesCounters)",
        lambda d: bool(d.get("consumesCounters")),
    ),
}


def lacking_devices(kube: Kube, driver: str, kind: str) -> tuple[str, str]:
    """(what the test needs, what the driver has instead) when `driver` has no device of
    `kind` on any node; ("", "") when it has one."""
    what, test = DEVICE_KINDS[kind]
    devices = [
        d
        for s in kube.list(*kinds.RESOURCE_SLICE)
        if s["spec"]["driver"] == driver
        for d in s["spec"].get("devices") or []
    ]
    if any(test(d) for d in devices):
        return "", ""
    return what, f"{len(devices)} devices of {driver}, none of them one"
