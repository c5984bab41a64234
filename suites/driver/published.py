"""What the tests of an installed driver choose from its slices: a node, a device with a
unique attribute value, the devices its class does not select (partitions)."""

from __future__ import annotations

from collections.abc import Iterable

from harness.kit.fleet_inventory import NodeDevices
from harness.kit.kube import Obj


def attribute_ref(driver: str, name: str) -> str:
    """CEL for attribute `name` (unqualified names are in the driver's domain)."""
    domain, _, bare = name.rpartition("/")
    return f'device.attributes["{domain or driver}"].{bare}'


def equals(driver: str, name: str, value: str) -> str:
    """CEL: the attribute is `value`; false, not a runtime error, on devices without it."""
    ref = attribute_ref(driver, name)
    return f'has({ref}) && {ref} == "{value}"'


def strings(device: Obj) -> dict[str, str]:
    return {k: v["string"] for k, v in (device.get("attributes") or {}).items() if "string" in v}


def unique_attribute(node: NodeDevices, among: Iterable[Obj] = ()) -> tuple[Obj, str, str] | None:
    """A device of the class (or of `among`) and a string attribute whose value no other device
    on the node has."""
    for device in among or node.matching:
        for name, value in sorted(strings(device).items()):
            if sum(strings(d).get(name) == value for d in node.devices) == 1:
                return device, name, value
    return None


def partition_selector(node: NodeDevices, driver: str) -> tuple[list[Obj], str] | None:
    """The devices the class does not select (MIG devices, partitions), and a selector that
    matches some of them and nothing the class selects: a string attribute value none of the
    class's devices has."""
    matched = {d["name"] for d in node.matching}
    parts = [d for d in node.devices if d["name"] not in matched]
    taken = {(k, v) for d in node.matching for k, v in strings(d).items()}
    for name, value in sorted({kv for d in parts for kv in strings(d).items()} - taken):
        chosen = [d for d in parts if strings(d).get(name) == value]
        return chosen, equals(driver, name, value)
    return None


def with_partitions(nodes: Iterable[NodeDevices]) -> list[NodeDevices]:
    return [n for n in nodes if len(n.devices) > len(n.matching)]
