"""Pure rendering: ResourceSlice bodies (plain dicts, API shape) for one node.

``render_node(node, minor)`` is a pure function of the node's pool (profile, personality, GPU
count, MIG layout), the API server minor and the node's fault state. Nothing here talks to
the API. The devices come from one renderer per device kind (``nvidia_devices``,
``example_devices``); this module applies faults and lays the devices out in slices. Returned
dicts share small immutable-by-convention leaves (attribute values) between devices to keep
1,000-node renders cheap; treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fake_driver.api import apilimits
from fake_driver.api.apilimits import Minor
from fake_driver.api.ownership import owner_labels
from fake_driver.core.errors import UnsupportedError
from fake_driver.facts.personalities import DYNAMIC_MIG_HEALTH_REFUSAL, Personality, Taint, health_taint
from fake_driver.fleetspec.faultstate import NO_FAULTS, HealthEvent, NodeFaults
from fake_driver.fleetspec.fleet import FleetPool, NodeSpec
from fake_driver.rendering.apirules import slice_violations
from fake_driver.rendering.devicemodel import DeviceRecord, GpuDevices, Obj, PhysicalGpu, physical_gpus
from fake_driver.rendering.example_devices import example_gpu
from fake_driver.rendering.nvidia_devices import render_nvidia_gpu

__all__ = [
    "DeviceRecord",
    "PhysicalGpu",
    "RenderedPool",
    "device_names",
    "health_taints",
    "physical_gpus",
    "render_node",
]

# (sharedCounters, devices) of one slice, before the envelope.
Body = tuple[list[Obj] | None, Sequence[Obj]]


@dataclass(frozen=True)
class RenderedPool:
    node: str
    driver: str
    slices: tuple[Obj, ...]
    devices: tuple[DeviceRecord, ...]
    gpus: tuple[PhysicalGpu, ...]


# --- faults -------------------------------------------------------------------------------


def _apply_faults(
    pool: FleetPool, minor: Minor, per_gpu: list[GpuDevices], faults: NodeFaults
) -> list[GpuDevices]:
    if not faults.drop_attributes and not faults.unhealthy and not faults.events:
        return per_gpu
    p = pool.personality
    mode = faults.health_mode or p.health_mode
    # The release refuses to run health checking next to DynamicMIG at all.
    own_health = (faults.unhealthy or faults.events) and faults.health_mode is None
    if own_health and p.health_excludes_dynamic_mig and pool.mig.mode == "dynamic":
        raise UnsupportedError(f"{p.name}: {DYNAMIC_MIG_HEALTH_REFUSAL}")
    # A full-GPU name ("gpu-3") also covers its MIG devices where devices are removed or
    # given the generic taint; the release's own taints follow its events per device.
    bad = {*faults.unhealthy, *(e.device for e in faults.events)}
    own_taints = mode == "taint" and p.health_mode == "taint"
    per_device = health_taints(p, minor, per_gpu, faults) if own_taints else {}
    generic = _generic_taint(p) if mode == "taint" and not own_taints and bad else None
    out: list[GpuDevices] = []
    for g in per_gpu:
        gpu_bad = f"gpu-{g.gpu.minor}" in bad or f"gpu-{g.gpu.index}" in bad
        devs: list[Obj] = []
        recs: list[DeviceRecord] = []
        for d, r in zip(g.devices, g.records, strict=True):
            if faults.drop_attributes:
                kept = {k: v for k, v in d["attributes"].items() if k not in faults.drop_attributes}
                d = {**d, "attributes": kept}
            if mode == "remove" and (gpu_bad or d["name"] in bad):
                continue
            if generic is not None and (gpu_bad or d["name"] in bad):
                d = {**d, "taints": [generic]}
            elif d["name"] in per_device:
                d = {**d, "taints": per_device[d["name"]]}
            devs.append(d)
            recs.append(r)
        out.append(GpuDevices(g.gpu, tuple(devs), tuple(recs), g.counter_set))
    return out


def health_taints(
    p: Personality, minor: Minor, per_gpu: Sequence[GpuDevices], faults: NodeFaults
) -> dict[str, list[Obj]]:
    """Each device's taints after the node's health events, replayed in arrival order as NV's
    monitor and driver do (cmd/gpu-kubelet-plugin @ v0.4.1 and v0.5.0): an Xid taints the device
    it names only, a static MIG device included (device_health.go run: deviceByPlacement.get by
    parent UUID, GI, CI, :258); a lost GPU taints every device of the node
    (sendHealthEventForAllDevices, :231, :255, :281); an unmonitored GPU taints all its devices
    (sendHealthEventForDevices over the parent's GI map, :175-192, :291); one taint per key per
    device, a later event replacing the value in place (allocatable.go AddOrUpdateTaint,
    v0.4.1:328, v0.5.0:354). Nothing removes a taint while the plugin runs."""
    own = {e.device for e in faults.events}
    events = [HealthEvent(u) for u in faults.unhealthy if u not in own] + list(faults.events)
    parent: dict[str, GpuDevices] = {}
    for g in per_gpu:
        parent.update({d["name"]: g for d in g.devices})
    every = [d["name"] for g in per_gpu for d in g.devices]
    got: dict[str, dict[str, Obj]] = {}
    for e in events:
        if e.event == "gpu-lost":
            targets = every
        elif e.event == "unmonitored":
            targets = [d["name"] for d in parent[e.device].devices] if e.device in parent else []
        else:
            targets = [e.device] if e.device in parent else []  # the plugin ignores unknown ones
        t = _taint(health_taint(p, e.event, e.xid), minor)
        for name in targets:
            got.setdefault(name, {})[t["key"]] = t
    return {name: list(by_key.values()) for name, by_key in got.items()}


def _generic_taint(p: Personality) -> Obj:
    # Health handling forced onto a release without taints: a generic taint.
    return {"key": f"{p.driver}/unhealthy", "effect": "NoSchedule"}


def _taint(t: Taint, minor: Minor) -> Obj:
    if t.effect == "None" and minor < apilimits.TAINT_EFFECT_NONE_SINCE:
        raise UnsupportedError(
            f"taint effect None needs Kubernetes >= 1.35, server is {apilimits.format_minor(minor)}"
        )
    taint: Obj = {"key": t.key, "effect": t.effect}
    if t.value is not None:
        taint["value"] = t.value
    return taint


# --- slices -------------------------------------------------------------------------------


def generate_name(p: Personality, node: str, index: int) -> str:
    if p.slice_name_scheme == "node-driver":
        return f"{node}-{p.driver}-"
    return f"{index:05x}-{p.driver}-{node}-"


def _chunks(items: Sequence[Obj], size: int) -> list[Sequence[Obj]]:
    return [items[k : k + size] for k in range(0, len(items), size)] or [items]


def _device_limit(devices: Sequence[Obj], minor: Minor) -> int:
    advanced = any("consumesCounters" in d or "taints" in d for d in devices)
    if advanced and minor >= apilimits.ADVANCED_DEVICE_LIMIT_SINCE:
        return apilimits.MAX_DEVICES_PER_SLICE_ADVANCED
    return apilimits.MAX_DEVICES_PER_SLICE


def render_node(
    node: NodeSpec,
    minor: Minor,
    *,
    faults: NodeFaults = NO_FAULTS,
    generation: int = 1,
    node_uid: str | None = None,
) -> RenderedPool:
    """All ResourceSlices of ``node``'s pool at ``generation``, in publishing order."""
    if minor < apilimits.V1_SINCE:
        raise UnsupportedError(
            f"Kubernetes {apilimits.format_minor(minor)} does not serve resource.k8s.io/v1; "
            f"supported: {', '.join(apilimits.format_minor(m) for m in apilimits.SUPPORTED_MINORS)}"
        )
    pool = node.pool
    gpus = physical_gpus(node.name, pool.gpus)
    per_gpu = _apply_faults(pool, minor, _devices(pool, minor, gpus), faults)
    bodies = _layout(per_gpu, minor, one_devices_slice=pool.personality.counters_then_devices_slice)
    _check_device_sizes(bodies)
    slices = _envelopes(node, bodies, generation, node_uid, stale=faults.stale_generation)
    _check_rules(slices, minor)
    records = tuple(r for g in per_gpu for r in g.records)
    return RenderedPool(node.name, pool.personality.driver, tuple(slices), records, gpus)


def _devices(pool: FleetPool, minor: Minor, gpus: Sequence[PhysicalGpu]) -> list[GpuDevices]:
    if pool.personality.is_nvidia:
        return [render_nvidia_gpu(pool, g) for g in gpus]
    if pool.consumable_capacity and minor < apilimits.CONSUMABLE_CAPACITY_SINCE:
        raise UnsupportedError("consumable capacity needs Kubernetes >= 1.34")
    return [example_gpu(pool, g) for g in gpus]


def _layout(per_gpu: Sequence[GpuDevices], minor: Minor, *, one_devices_slice: bool = False) -> list[Body]:
    """(sharedCounters, devices) per slice, in publishing order. ``one_devices_slice``: every
    GPU's devices in the same slice(s) after the counters (the example driver's layout)."""
    bodies: list[Body] = []
    if all(g.counter_set is None for g in per_gpu):
        # Legacy publishing: everything in one slice (split only past the API limit).
        devices = [d for g in per_gpu for d in g.devices]
        return [(None, c) for c in _chunks(devices, _device_limit(devices, minor))]
    if minor >= apilimits.SPLIT_COUNTERS_SINCE:
        # Split: counter sets first (at most 8 per slice), then one devices slice per GPU.
        sets = [g.counter_set for g in per_gpu if g.counter_set is not None]
        for k in range(0, len(sets), apilimits.MAX_COUNTER_SETS_PER_SLICE):
            bodies.append((sets[k : k + apilimits.MAX_COUNTER_SETS_PER_SLICE], []))
        if one_devices_slice:
            devices = [d for g in per_gpu for d in g.devices]
            return bodies + [(None, c) for c in _chunks(devices, _device_limit(devices, minor))]
        for g in per_gpu:
            bodies.extend((None, c) for c in _chunks(g.devices, _device_limit(g.devices, minor)))
        return bodies
    # Combined (< 1.35): consumesCounters must name a set in the same slice.
    for g in per_gpu:
        if len(g.devices) > apilimits.MAX_DEVICES_PER_SLICE:
            raise UnsupportedError(f"{len(g.devices)} devices of one GPU exceed one slice")
        bodies.append(([g.counter_set] if g.counter_set else None, g.devices))
    _check_134_counter_limits(bodies)
    return bodies


def _check_rules(slices: Sequence[Obj], minor: Minor) -> None:
    """What the server of `minor`, or a driver on its slice-publishing helper, rejects
    (fake_driver.rendering.apirules): never published, one line instead."""
    for s in slices:
        for v in slice_violations(s["spec"], minor)[:1]:
            raise UnsupportedError(f"Kubernetes {apilimits.format_minor(minor)} rejects {v.line()}")


def _check_device_sizes(bodies: Sequence[Body]) -> None:
    for _, devs in bodies:
        for d in devs:
            n = len(d.get("attributes", {})) + len(d.get("capacity", {}))
            if n > apilimits.MAX_ATTRIBUTES_AND_CAPACITIES:
                raise UnsupportedError(f"device {d['name']} has {n} attributes+capacities (max 32)")


def _envelopes(
    node: NodeSpec, bodies: Sequence[Body], generation: int, node_uid: str | None, *, stale: bool
) -> list[Obj]:
    p = node.pool.personality
    total = len(bodies)
    slices: list[Obj] = []
    for k, (counters, devs) in enumerate(bodies):
        gen = max(generation - 1, 0) if k == 0 and stale else generation
        spec: Obj = {
            "driver": p.driver,
            "nodeName": node.name,
            "pool": {"name": node.name, "generation": gen, "resourceSliceCount": total},
        }
        if counters is not None:
            spec["sharedCounters"] = counters
        if devs or counters is None:
            # From 1.35 a counters-only slice must not carry devices at all.
            spec["devices"] = list(devs)
        meta: Obj = {"generateName": generate_name(p, node.name, k), "labels": owner_labels()}
        if node_uid is not None:
            meta["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node_uid, "controller": True}
            ]
        slices.append(
            {"apiVersion": p.resource_api_version, "kind": "ResourceSlice", "metadata": meta, "spec": spec}
        )
    return slices


def _check_134_counter_limits(bodies: Sequence[Body]) -> None:
    for counters, devs in bodies:
        shared = sum(len(cs["counters"]) for cs in counters or ())
        if shared > apilimits.MAX_SHARED_COUNTERS_PER_SLICE_134:
            raise UnsupportedError(f"{shared} shared counters in one slice exceed 32 (Kubernetes 1.34)")
        used = sum(len(c["counters"]) for d in devs for c in d.get("consumesCounters", ()))
        if used > apilimits.MAX_DEVICE_COUNTERS_PER_SLICE_134:
            raise UnsupportedError(f"{used} device counter consumptions in one slice exceed 1024 (1.34)")


def device_names(rendered: RenderedPool) -> list[str]:
    return [d["name"] for s in rendered.slices for d in s["spec"].get("devices", ())]
