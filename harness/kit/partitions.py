"""What makes a published device a partition, by what DRA and the drivers say, never by what a
DeviceClass leaves out (pure: the fields of resource.k8s.io/v1 slices).

A partition is a device that draws on a shared counter set (Device.ConsumesCounters, KEP-4815
partitionable devices), or a MIG device of a parent GPU (NVIDIA: attribute type "mig" with
parentUUID; k8s-dra-driver-gpu deviceinfo.go MigDeviceInfo.GetDevice). A family is a parent and
its partitions: the devices drawing on one counter set, joined with the MIG devices naming
one parentUUID. Its parent is the device with that UUID, or the one consuming the whole set
(NVIDIA's full GPU in DynamicMIG, the example driver's gpu-<i>-full with --gpu-partitions).
Fields: k8s.io/api resource/v1 types.go Device.ConsumesCounters, CounterSet @ v0.37.2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from harness.kit.kube import Obj, parse_quantity

Usage = dict[tuple[str, str], Decimal]  # (counter set, counter) -> amount


def attribute(device: Obj, name: str) -> object:
    """The value of attribute `name` (bare, or qualified by any domain), or None."""
    attrs: Mapping[str, Obj] = device.get("attributes") or {}
    found = attrs.get(name)
    if found is None:
        found = next((v for k, v in sorted(attrs.items()) if k.rpartition("/")[2] == name), None)
    if not found:
        return None
    return next(iter(found.values()))


def mig_parent(device: Obj) -> str | None:
    """The parentUUID of a MIG device; None for any other device."""
    parent = attribute(device, "parentUUID")
    return parent if attribute(device, "type") == "mig" and isinstance(parent, str) else None


def consumption(device: Obj) -> Usage:
    out: Usage = {}
    for c in device.get("consumesCounters") or ():
        for counter, q in (c.get("counters") or {}).items():
            key = (c["counterSet"], counter)
            out[key] = out.get(key, Decimal(0)) + Decimal(parse_quantity(q["value"]))
    return out


def capacities(counter_sets: Iterable[Obj]) -> Usage:
    return {
        (cs["name"], counter): Decimal(parse_quantity(q["value"]))
        for cs in counter_sets
        for counter, q in (cs.get("counters") or {}).items()
    }


@dataclass(frozen=True)
class Family:
    """A parent device (None when it is not published) and its partitions on one node."""

    key: str  # "counters <set>" or "parentUUID <uuid>": what joined them
    parent: Obj | None
    partitions: tuple[Obj, ...]
    counter_sets: tuple[str, ...]  # the sets its devices draw on

    @property
    def devices(self) -> tuple[Obj, ...]:
        return ((self.parent,) if self.parent else ()) + self.partitions

    def names(self) -> list[str]:
        return [d["name"] for d in self.partitions]


def _whole(device: Obj, capacity: Usage) -> bool:
    """Consumes every counter of each set it draws on, all of it."""
    used = consumption(device)
    sets = {s for s, _ in used}
    mine = {k: v for k, v in capacity.items() if k[0] in sets}
    return bool(used) and bool(mine) and used == mine


def families(devices: Sequence[Obj], counter_sets: Iterable[Obj] = ()) -> list[Family]:
    """The families among one node's devices (those of one driver); [] when none is a partition."""
    capacity = capacities(counter_sets)
    parents = {p for d in devices if (p := mig_parent(d))}
    # Union-find over the devices: one counter set or one parentUUID joins them.
    root = list(range(len(devices)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    first: dict[str, int] = {}
    for i, d in enumerate(devices):
        keys = [f"counters {s}" for s in sorted({s for s, _ in consumption(d)})]
        uuid = attribute(d, "uuid")
        parent = mig_parent(d) or (uuid if isinstance(uuid, str) and uuid in parents else None)
        keys += [f"parentUUID {parent}"] if parent else []
        for k in keys:
            root[find(i)] = find(first.setdefault(k, i))
    groups: dict[int, list[int]] = {}
    for i in range(len(devices)):
        groups.setdefault(find(i), []).append(i)
    out = []
    for members in groups.values():
        family = _family([devices[i] for i in members], capacity, parents)
        if family is not None:
            out.append(family)
    return out


def _family(members: list[Obj], capacity: Usage, parents: set[str]) -> Family | None:
    def is_parent(d: Obj) -> bool:
        if mig_parent(d):
            return False
        return attribute(d, "uuid") in parents or _whole(d, capacity)

    parent = next((d for d in members if is_parent(d)), None)
    partitions = tuple(
        d
        for d in members
        if d is not parent and (mig_parent(d) or (consumption(d) and not _whole(d, capacity)))
    )
    if not partitions:
        return None
    sets = tuple(sorted({s for d in members for s, _ in consumption(d)}))
    key = f"counters {sets[0]}" if sets else f"parentUUID {mig_parent(partitions[0])}"
    return Family(key, parent, partitions, sets)


def used_by(devices: Iterable[Obj]) -> Usage:
    total: Usage = {}
    for d in devices:
        for k, v in consumption(d).items():
            total[k] = total.get(k, Decimal(0)) + v
    return total


def fits(device: Obj, used: Usage, capacity: Usage) -> bool:
    """Would `device` fit next to what `used` holds (its sets' capacities known)?"""
    return all(
        used.get(k, Decimal(0)) + v <= capacity.get(k, Decimal(-1)) for k, v in consumption(device).items()
    )


def overcommits(family: Family, capacity: Usage) -> bool:
    """Do its devices together need more than its counter sets hold (counters decide)?"""
    total = used_by(family.devices)
    return any(k in capacity and v > capacity[k] for k, v in total.items())


def over(used: Usage, capacity: Usage) -> list[str]:
    """The counters `used` holds beyond their set's capacity, as 'set/counter a > b'."""
    return [
        f"{s}/{c} {v} > {capacity.get((s, c))}"
        for (s, c), v in sorted(used.items())
        if v > capacity.get((s, c), v)
    ]
