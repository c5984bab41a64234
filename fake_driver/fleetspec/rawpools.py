"""Raw pools: slices replayed verbatim, for a driver no personality imitates.

`dra-harness fleet export` writes them for nodes of a live cluster whose devices no fake
personality and GPU profile can describe (an accelerator of another vendor, a GPU of an unknown
product), so `cluster up --fleet` replays those nodes too::

    raw_pools:
      - name: trainium
        count: 2                      # nodes trainium-0, trainium-1 (or: nodes: [a, b])
        slices:                       # per node: these ResourceSlice specs, as published
          - driver: neuron.example.org
            devices: [{name: nd-0, attributes: {...}, capacity: {...}}]
            sharedCounters: []        # optional
    device_classes:                   # the drivers' own DeviceClasses (metadata.name + spec)
      - {metadata: {name: neuron.example.org}, spec: {selectors: [...]}}

Every node of a raw pool gets the same devices (an exported pool keeps its first node's values,
UUIDs included). Slices of one driver on a node form one pool named after the node, as the fake
driver's own. Only structure is checked here; the API server validates the rest when the
publisher writes (a rejection is one line naming the field, nothing half-written).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fake_driver.api.kube import ApiError, Obj, Rest
from fake_driver.api.ownership import OWNED_SELECTOR, owner_labels
from fake_driver.core.errors import FleetError, PublishError, UnknownChoiceError

# resource.k8s.io/v1 (served on every minor the harness runs, 1.34+): the API the devices of a
# raw pool are written in, as `fleet export` reads them.
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
MAX_DEVICES_PER_SLICE = 128  # ResourceSliceMaxDevices, staging/src/k8s.io/api/resource/v1/types.go
MAX_SLICES_PER_NODE = 16  # a bound against typos; real drivers publish one or a few per node
_RAW_POOL_FIELDS = ("name", "nodes", "count", "slices")
_SLICE_FIELDS = ("driver", "devices", "sharedCounters")
_DRIVER = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class RawSlice:
    driver: str
    devices: tuple[Obj, ...]
    shared_counters: tuple[Obj, ...] = ()


@dataclass(frozen=True)
class RawPool:
    name: str
    node_names: tuple[str, ...]
    slices: tuple[RawSlice, ...]

    @property
    def drivers(self) -> tuple[str, ...]:
        return tuple(sorted({s.driver for s in self.slices}))


def parse_raw_pool(raw: Any, i: int, source: str, node_names: Any) -> RawPool:
    """One entry of `raw_pools`; `node_names(raw, pool, where)` is the fleet's own rule."""
    if not isinstance(raw, Mapping):
        raise FleetError(f"{source}: raw_pools[{i}] must be a mapping")
    name = str(raw.get("name", f"raw-{i}"))
    where = f"{source}: raw pool {name!r}"
    for key in raw:
        if key not in _RAW_POOL_FIELDS:
            raise UnknownChoiceError("raw pool field", key, _RAW_POOL_FIELDS, where)
    slices = raw.get("slices")
    if not isinstance(slices, Sequence) or isinstance(slices, str) or not slices:
        raise FleetError(f"{where}: 'slices' must be a non-empty list of ResourceSlice specs")
    if len(slices) > MAX_SLICES_PER_NODE:
        raise FleetError(f"{where}: {len(slices)} slices per node; at most {MAX_SLICES_PER_NODE}")
    return RawPool(name, tuple(node_names(raw, name, where)), tuple(_slice(s, where) for s in slices))


def _slice(raw: Any, where: str) -> RawSlice:
    if not isinstance(raw, Mapping):
        raise FleetError(f"{where}: each slice must be a mapping with driver and devices")
    for key in raw:
        if key not in _SLICE_FIELDS:
            raise UnknownChoiceError("slice field", key, _SLICE_FIELDS, where)
    driver = str(raw.get("driver", ""))
    if len(driver) > 63 or not _DRIVER.fullmatch(driver):
        raise FleetError(f"{where}: slice driver {driver!r} is not a DNS subdomain of at most 63 characters")
    devices = _objects(raw.get("devices", []), f"{where}: {driver} devices")
    counters = _objects(raw.get("sharedCounters", []), f"{where}: {driver} sharedCounters")
    if not devices and not counters:
        raise FleetError(f"{where}: a {driver} slice needs devices or sharedCounters")
    if len(devices) > MAX_DEVICES_PER_SLICE:
        raise FleetError(f"{where}: {len(devices)} devices in one slice; at most {MAX_DEVICES_PER_SLICE}")
    names = [str(d.get("name", "")) for d in devices]
    if "" in names or len(set(names)) != len(names):
        raise FleetError(f"{where}: every {driver} device needs a name, unique in its slice")
    return RawSlice(driver, devices, counters)


def _objects(value: Any, what: str) -> tuple[Obj, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise FleetError(f"{what} must be a list")
    if not all(isinstance(v, Mapping) for v in value):
        raise FleetError(f"{what}: every entry must be a mapping")
    return tuple(dict(v) for v in value)


def parse_device_classes(value: Any, source: str) -> tuple[Obj, ...]:
    """`device_classes`: DeviceClass objects (metadata.name and spec) for the raw drivers."""
    classes = _objects(value, f"{source}: device_classes")
    for c in classes:
        name = str((c.get("metadata") or {}).get("name", ""))
        if not _DRIVER.fullmatch(name) or not isinstance(c.get("spec"), Mapping):
            raise FleetError(f"{source}: each device class needs metadata.name (a DNS subdomain) and a spec")
    return classes


# --- publishing ----------------------------------------------------------------------------


def node_slices(pool: RawPool, node: str, node_uid: str | None) -> list[Obj]:
    """The slices of one node: per driver one pool named after the node."""
    out: list[Obj] = []
    for driver in pool.drivers:
        mine = [s for s in pool.slices if s.driver == driver]
        for k, s in enumerate(mine):
            spec: Obj = {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": len(mine)},
                "devices": list(s.devices),
            }
            if s.shared_counters:
                spec["sharedCounters"] = list(s.shared_counters)
            meta: Obj = {"name": slice_name(node, driver, k), "labels": owner_labels()}
            if node_uid:  # deleted with its node, as a kubelet plugin's slices are
                meta["ownerReferences"] = [
                    {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}
                ]
            out.append(
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta, "spec": spec}
            )
    return out


def slice_name(node: str, driver: str, k: int) -> str:
    return f"{node}-{driver.replace('.', '-')}-raw-{k}"[-253:].lstrip("-.")


def publish_raw(rest: Rest, pools: Sequence[RawPool], nodes: Mapping[str, Obj]) -> list[tuple[str, str]]:
    """Create what is missing and replace what differs; (node, action) per raw node. One list
    per raw driver a pass, as the personalities' slices are read, not a GET per slice."""
    have = {s["metadata"]["name"]: s for s in _owned_slices(rest, pools)}
    results: list[tuple[str, str]] = []
    for pool in pools:
        for name in pool.node_names:
            node = nodes.get(name)
            if node is None:
                results.append((name, "missing-node"))
                continue
            action = "unchanged"
            for body in node_slices(pool, name, node["metadata"].get("uid")):
                action = _put(rest, body, have.get(body["metadata"]["name"]), name) or action
            results.append((name, action))
    return results


def _put(rest: Rest, body: Obj, have: Obj | None, node: str) -> str:
    try:
        if have is None:
            rest.create(SLICES, body)
            return "created"
        spec = have.get("spec", {})
        if (spec.get("devices"), spec.get("sharedCounters", [])) == (
            body["spec"]["devices"],
            body["spec"].get("sharedCounters", []),
        ):
            return ""
        meta = {**body["metadata"], "resourceVersion": have["metadata"]["resourceVersion"]}
        rest.replace(f"{SLICES}/{body['metadata']['name']}", {**body, "metadata": meta})
        return "updated"
    except ApiError as e:
        where = f" (fields: {', '.join(e.fields)})" if e.fields else ""
        raise PublishError(
            f"raw {body['spec']['driver']} slice for node {node} rejected{where}: {e}"
        ) from None


def _owned_slices(rest: Rest, pools: Sequence[RawPool]) -> list[Obj]:
    """The raw pools' slices this fake driver wrote (the owner label), on the raw pools' nodes."""
    names = {n for p in pools for n in p.node_names}
    drivers = sorted({d for p in pools for d in p.drivers})
    listed = [
        s
        for d in drivers
        for s in rest.list(SLICES, {"fieldSelector": f"spec.driver={d}", "labelSelector": OWNED_SELECTOR})
    ]
    return [s for s in listed if s["spec"].get("nodeName") in names]


def remove_raw(rest: Rest, pools: Sequence[RawPool]) -> int:
    """Delete the raw pools' slices this fake driver wrote (the owner label), nothing else."""
    doomed = _owned_slices(rest, pools)
    for s in doomed:
        rest.delete(f"{SLICES}/{s['metadata']['name']}")
    return len(doomed)
