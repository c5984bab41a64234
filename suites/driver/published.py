"""What the tests of an installed driver choose from its slices: a node, a device with a
unique attribute value, a selector for exactly some of a node's devices (a partition family)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence

from harness.kit.fleet_inventory import NodeDevices, selects
from harness.kit.kube import Obj

# What a fleet lacks when it has no partition (harness.kit.partitions says what one is).
WHAT = "partitions (devices consuming shared counters, or MIG devices with a parentUUID)"


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


def _literal(value: Obj) -> str | None:
    """A CEL literal for a string, int or bool attribute value (others: None)."""
    for kind in ("string", "int", "bool"):
        if kind in value:
            return json.dumps(value[kind])
    return None


def _terms(driver: str, device: Obj) -> dict[str, str]:
    """attribute -> 'has(ref) && ref == literal' (false, not an error, where it is absent)."""
    out = {}
    for name, value in (device.get("attributes") or {}).items():
        lit = _literal(value)
        if lit is not None:
            ref = attribute_ref(driver, name)
            out[f"{name}={lit}"] = f"has({ref}) && {ref} == {lit}"
    return out


def exact_selector(devices: Sequence[Obj], chosen: Sequence[Obj], driver: str) -> str | None:
    """A CEL selector matching every device of `chosen` and no other of `devices` (one node's),
    built from the attribute values `chosen` share and the attributes they lack, the terms that
    rule out most first; checked with the offline evaluator. None when attributes cannot tell."""
    names = {d["name"] for d in chosen}
    others = [d for d in devices if d["name"] not in names]
    shared = set.intersection(*(set(_terms(driver, d).items()) for d in chosen)) if chosen else set()
    lacked = {n for d in others for n in d.get("attributes") or {}} - {
        n for d in chosen for n in d.get("attributes") or {}
    }
    # (expression, does a device pass it)
    candidates = [(expr, _has_term(driver, key)) for key, expr in sorted(shared)]
    candidates += [(f"!has({attribute_ref(driver, n)})", _lacks(n)) for n in sorted(lacked)]
    terms: list[str] = []
    left = others
    while left and candidates:
        expr, passes = max(candidates, key=lambda c: sum(not c[1](d) for d in left))
        if all(passes(d) for d in left):
            break
        candidates.remove((expr, passes))
        terms.append(f"({expr})")
        left = [d for d in left if passes(d)]
    if left:
        return None
    selector = " && ".join(terms) or "true"
    if all(selects([selector], driver, d) == (d["name"] in names) for d in devices):
        return selector
    return None


def _has_term(driver: str, key: str) -> Callable[[Obj], bool]:
    return lambda d: key in _terms(driver, d)


def _lacks(name: str) -> Callable[[Obj], bool]:
    return lambda d: name not in (d.get("attributes") or {})
