"""Pure rendering: ResourceSlice bodies (plain dicts, API shape) for one node.

``render_node(node, minor)`` is a pure function of the node's pool (profile, personality, GPU
count, MIG layout), the API server minor and the node's fault state. Nothing here talks to
the API. Returned dicts share small immutable-by-convention leaves (attribute values) between
devices to keep 1,000-node renders cheap; treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fake_driver import apilimits
from fake_driver.apilimits import Minor
from fake_driver.errors import UnsupportedError
from fake_driver.faultstate import NO_FAULTS, NodeFaults
from fake_driver.fleet import MigPlacement, NodeSpec, Pool
from fake_driver.personalities import PCIE_ROOT, Personality
from fake_driver.profiles import (
    MIB,
    GpuProfile,
    MigProfile,
    gpu_uuid,
    mig_uuid,
    pci_bus_id,
    pcie_root,
)

Obj = dict[str, Any]

# MIG capacity names (CommonCapacitiesMig) and the counter name each becomes (camelToDNSName).
_MIG_CAPACITY_COUNTERS = (
    ("multiprocessors", "multiprocessors"),
    ("copyEngines", "copy-engines"),
    ("decoders", "decoders"),
    ("encoders", "encoders"),
    ("jpegEngines", "jpeg-engines"),
    ("ofaEngines", "ofa-engines"),
    ("memory", "memory"),
)


@dataclass(frozen=True)
class PhysicalGpu:
    node: str
    index: int  # NVML index
    minor: int  # /dev/nvidia<minor>
    uuid: str
    pci_bus_id: str
    pcie_root: str


@dataclass(frozen=True)
class DeviceRecord:
    """Which physical GPU (and which of its memory slices) a published device stands for."""

    name: str
    gpu_uuid: str
    memory_slices: frozenset[int]
    shareable: bool = False


@dataclass(frozen=True)
class RenderedPool:
    node: str
    driver: str
    slices: tuple[Obj, ...]
    devices: tuple[DeviceRecord, ...]
    gpus: tuple[PhysicalGpu, ...]


# --- value encoders ---------------------------------------------------------------------


def semver(text: str) -> str:
    """NVML version text -> semver without leading zeros ('580.95.05' -> '580.95.5', '8.0' -> '8.0.0')."""
    parts = [str(int(p)) for p in text.split(".")]
    return ".".join([*parts, "0", "0"][:3])


def binary_quantity(num_bytes: int) -> str:
    """Canonical BinarySI quantity, as the API server would print it back."""
    if num_bytes == 0:
        return "0"
    for suffix, power in (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if num_bytes % (1 << power) == 0:
            return f"{num_bytes >> power}{suffix}"
    return str(num_bytes)


def _s(v: str) -> Obj:
    return {"string": v}


def _i(v: int) -> Obj:
    return {"int": v}


def _v(v: str) -> Obj:
    return {"version": v}


def _q(v: str) -> Obj:
    return {"value": v}


def rfc1123_profile(profile: str) -> str:
    """NV mig.go toRFC1123Compliant(profile without '.'): '1g.10gb+me' -> '1g10gb-me'."""
    out = profile.replace(".", "").lower()
    return "".join(c if c.isalnum() or c in "-." else "-" for c in out)


def mig_device_name(p: Personality, parent_minor: int, m: MigProfile, start: int) -> str:
    if p.mig_name_scheme == "gi-start-size":
        return f"gpu-{parent_minor}-mig-{m.gi_profile_id}-{start}-{m.placement_size}"
    return f"gpu-{parent_minor}-mig-{rfc1123_profile(m.name)}-{m.gi_profile_id}-{start}"


def counter_set_name(gpu: PhysicalGpu) -> str:
    return f"gpu-{gpu.minor}-counter-set"


def physical_gpus(node: str, count: int) -> tuple[PhysicalGpu, ...]:
    # minor == index here: the usual case; NV names devices by minor since v25.3.0.
    return tuple(
        PhysicalGpu(node, i, i, gpu_uuid(node, i), pci_bus_id(i), pcie_root(i)) for i in range(count)
    )


# --- NVIDIA devices ---------------------------------------------------------------------


def _nvidia_common(pool: Pool, gpu: PhysicalGpu) -> Obj:
    """Attributes a full GPU and its MIG devices share (copied from the parent)."""
    p, hw = pool.personality, pool.profile
    attrs: Obj = {
        "productName": _s(hw.product_name),
        "brand": _s(hw.brand),
        "architecture": _s(hw.architecture),
        "cudaComputeCapability": _v(semver(hw.compute_capability)),
        "driverVersion": _v(semver(pool.driver_version)),
        "cudaDriverVersion": _v(semver(pool.cuda_driver_version)),
        p.pci_bus_id_attribute: _s(gpu.pci_bus_id),
        PCIE_ROOT: _s(gpu.pcie_root),
    }
    if p.has_addressing_mode and hw.addressing_mode:
        attrs["addressingMode"] = _s(hw.addressing_mode)
    return attrs


def _full_gpu(pool: Pool, gpu: PhysicalGpu, common: Obj, capacity: Obj) -> Obj:
    attrs: Obj = {"type": _s("gpu"), "uuid": _s(gpu.uuid), **common}
    if pool.personality.has_index_and_minor:
        attrs["index"] = _i(gpu.index)
        attrs["minor"] = _i(gpu.minor)
    return {"name": f"gpu-{gpu.minor}", "attributes": attrs, "capacity": capacity}


def _mig_capacity(m: MigProfile) -> Obj:
    return {
        "multiprocessors": _q(str(m.multiprocessors)),
        "copyEngines": _q(str(m.copy_engines)),
        "decoders": _q(str(m.decoders)),
        "encoders": _q(str(m.encoders)),
        "jpegEngines": _q(str(m.jpeg_engines)),
        "ofaEngines": _q(str(m.ofa_engines)),
        "memory": _q(binary_quantity(m.memory_mib * MIB)),
    }


def _mig_attrs(pool: Pool, gpu: PhysicalGpu, common: Obj, m: MigProfile) -> Obj:
    return {"type": _s("mig"), "parentUUID": _s(gpu.uuid), "profile": _s(m.name), **common}


def _max_capacity(hw: GpuProfile) -> Obj:
    """Per-capacity maxima over all MIG profiles (NV setMax): the full GPU in DynamicMIG."""
    caps = [_mig_capacity(m) for m in hw.mig_profiles]
    top = max(hw.mig_profiles, key=lambda m: m.memory_mib)
    out: Obj = {}
    for cap, _ in _MIG_CAPACITY_COUNTERS:
        if cap == "memory":
            out[cap] = _q(binary_quantity(top.memory_mib * MIB))
        else:
            out[cap] = _q(str(max(int(c[cap]["value"]) for c in caps)))
    return out


def _counters(capacity: Obj, slices: Iterable[int]) -> Obj:
    out: Obj = {counter: capacity[cap] for cap, counter in _MIG_CAPACITY_COUNTERS}
    one = _q("1")
    for s in slices:
        out[f"memory-slice-{s}"] = one
    return out


@dataclass(frozen=True)
class _GpuDevices:
    gpu: PhysicalGpu
    devices: tuple[Obj, ...]
    records: tuple[DeviceRecord, ...]
    counter_set: Obj | None = None  # DynamicMIG only


def _render_nvidia_gpu(pool: Pool, gpu: PhysicalGpu, statics: Sequence[MigPlacement]) -> _GpuDevices:
    hw = pool.profile
    common = _nvidia_common(pool, gpu)
    whole = frozenset(range(max(hw.memory_slices, 1)))
    mig = pool.mig
    mig_on = mig.applies_to(gpu.index)

    if mig.mode == "dynamic" and not (hw.mig_toggle_needs_reset and not (mig_on and mig.enabled)):
        # DynamicMIG (partitions.go): abstract devices for every (profile, placement), one
        # counter set per GPU; Hopper+ also announces the full GPU, Ampere only with MIG off
        # (and then without counters, handled by the legacy branch below).
        full_cap = _max_capacity(hw)
        cs_name = counter_set_name(gpu)
        counter_set = {"name": cs_name, "counters": _counters(full_cap, range(hw.memory_slices))}
        devices: list[Obj] = []
        records: list[DeviceRecord] = []
        if not hw.mig_toggle_needs_reset:
            full = _full_gpu(pool, gpu, common, full_cap)
            full["consumesCounters"] = [{"counterSet": cs_name, "counters": counter_set["counters"]}]
            devices.append(full)
            records.append(DeviceRecord(full["name"], gpu.uuid, whole))
        for m in hw.mig_profiles:
            cap = _mig_capacity(m)
            for start in m.placement_starts:
                span = range(start, start + m.placement_size)
                name = mig_device_name(pool.personality, gpu.minor, m, start)
                devices.append(
                    {
                        "name": name,
                        "attributes": _mig_attrs(pool, gpu, common, m),
                        "capacity": cap,
                        "consumesCounters": [{"counterSet": cs_name, "counters": _counters(cap, span)}],
                    }
                )
                records.append(DeviceRecord(name, gpu.uuid, frozenset(span)))
        order = sorted(range(len(devices)), key=lambda k: devices[k]["name"])
        return _GpuDevices(
            gpu, tuple(devices[k] for k in order), tuple(records[k] for k in order), counter_set
        )

    if mig.mode == "static" and mig_on:
        # MIG mode on: the parent is not announced, only its MIG devices (with memorySlice<i>).
        out: list[Obj] = []
        recs: list[DeviceRecord] = []
        for mig_index, pl in enumerate(statics):
            m = pl.profile
            name = mig_device_name(pool.personality, gpu.minor, m, pl.start)
            attrs = _mig_attrs(pool, gpu, common, m)
            attrs["uuid"] = _s(mig_uuid(gpu.node, gpu.index, name))
            if pool.personality.has_index_and_minor:
                attrs["index"] = _i(mig_index)
                attrs["parentIndex"] = _i(gpu.index)
            cap = dict(_mig_capacity(m))
            span = range(pl.start, pl.start + m.placement_size)
            for s in span:
                cap[f"memorySlice{s}"] = _q("1")
            out.append({"name": name, "attributes": attrs, "capacity": cap})
            recs.append(DeviceRecord(name, gpu.uuid, frozenset(span)))
        return _GpuDevices(gpu, tuple(out), tuple(recs))

    full = _full_gpu(pool, gpu, common, {"memory": _q(binary_quantity(hw.memory_mib * MIB))})
    return _GpuDevices(gpu, (full,), (DeviceRecord(full["name"], gpu.uuid, whole),))


# --- dra-example-driver devices ------------------------------------------------------------

_GI = 1 << 30


def _render_example_gpu(pool: Pool, gpu: PhysicalGpu) -> _GpuDevices:
    p = pool.personality
    # The example driver's UUID is "gpu-" + a UUID from a PRNG seeded by the node name; ours is
    # derived from the node name too, but not bit-identical to Go's math/rand.
    attrs: Obj = {
        "index": _i(gpu.index),
        "uuid": _s("gpu-" + gpu.uuid.removeprefix("GPU-")),
        "model": _s(p.example_model),
        "driverVersion": _v(p.example_driver_version),
    }
    cap: Obj = {"memory": _q(p.example_memory)}
    if p.example_compute is not None:
        cap["compute"] = _q(str(p.example_compute))
    device: Obj = {"name": f"gpu-{gpu.index}", "attributes": attrs, "capacity": cap}
    if pool.consumable_capacity:
        # gpuAllowMultipleAllocations: memory min/step 1Gi, compute min/step 1. The default
        # (required by validation when validRange is set) = min; UNCONFIRMED against the chart.
        device["allowMultipleAllocations"] = True
        gi = binary_quantity(_GI)
        cap["memory"] = {"value": p.example_memory, "requestPolicy": _policy(gi)}
        if "compute" in cap:
            cap["compute"] = {"value": cap["compute"]["value"], "requestPolicy": _policy("1")}
    rec = DeviceRecord(device["name"], gpu.uuid, frozenset({0}), shareable=pool.consumable_capacity)
    return _GpuDevices(gpu, (device,), (rec,))


def _policy(step: str) -> Obj:
    return {"default": step, "validRange": {"min": step, "step": step}}


# --- faults -------------------------------------------------------------------------------


def _apply_faults(
    p: Personality, minor: Minor, per_gpu: list[_GpuDevices], faults: NodeFaults
) -> list[_GpuDevices]:
    if not faults.drop_attributes and not faults.unhealthy:
        return per_gpu
    mode = faults.health_mode or p.health_mode
    bad = set(faults.unhealthy)
    out: list[_GpuDevices] = []
    for g in per_gpu:
        gpu_bad = f"gpu-{g.gpu.minor}" in bad or f"gpu-{g.gpu.index}" in bad
        devs: list[Obj] = []
        recs: list[DeviceRecord] = []
        for d, r in zip(g.devices, g.records, strict=True):
            if faults.drop_attributes:
                d = {
                    **d,
                    "attributes": {
                        k: v for k, v in d["attributes"].items() if k not in faults.drop_attributes
                    },
                }
            if gpu_bad or d["name"] in bad:
                if mode == "remove":
                    continue
                if mode == "taint":
                    d = {**d, "taints": [_unhealthy_taint(p, minor)]}
            devs.append(d)
            recs.append(r)
        out.append(_GpuDevices(g.gpu, tuple(devs), tuple(recs), g.counter_set))
    return out


def _unhealthy_taint(p: Personality, minor: Minor) -> Obj:
    t = p.unhealthy_taint
    # Personalities without their own taint (health mode forced by a fault) use a generic one.
    key, value, effect = (t.key, t.value, t.effect) if t else (f"{p.driver}/unhealthy", None, "NoSchedule")
    if effect == "None" and minor < apilimits.TAINT_EFFECT_NONE_SINCE:
        raise UnsupportedError(
            f"taint effect None needs Kubernetes >= 1.35, server is {apilimits.format_minor(minor)}"
        )
    taint: Obj = {"key": key, "effect": effect}
    if value is not None:
        taint["value"] = value
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
    pool, p = node.pool, node.pool.personality
    gpus = physical_gpus(node.name, pool.gpus)
    if p.is_nvidia:
        statics = pool.mig.placements
        per_gpu = [_render_nvidia_gpu(pool, g, statics) for g in gpus]
    else:
        if pool.consumable_capacity and minor < apilimits.CONSUMABLE_CAPACITY_SINCE:
            raise UnsupportedError("consumable capacity needs Kubernetes >= 1.34")
        per_gpu = [_render_example_gpu(pool, g) for g in gpus]
    per_gpu = _apply_faults(p, minor, per_gpu, faults)

    # (sharedCounters, devices) per slice, before the envelope.
    bodies: list[tuple[list[Obj] | None, Sequence[Obj]]] = []
    dynamic = any(g.counter_set is not None for g in per_gpu)
    if not dynamic:
        # Legacy publishing: everything in one slice (split only past the API limit).
        devices = [d for g in per_gpu for d in g.devices]
        bodies = [(None, c) for c in _chunks(devices, _device_limit(devices, minor))]
    elif minor >= apilimits.SPLIT_COUNTERS_SINCE:
        # Split: counter sets first (at most 8 per slice), then one devices slice per GPU.
        sets = [g.counter_set for g in per_gpu if g.counter_set is not None]
        for k in range(0, len(sets), apilimits.MAX_COUNTER_SETS_PER_SLICE):
            bodies.append((sets[k : k + apilimits.MAX_COUNTER_SETS_PER_SLICE], []))
        for g in per_gpu:
            bodies.extend((None, c) for c in _chunks(g.devices, _device_limit(g.devices, minor)))
    else:
        # Combined (< 1.35): consumesCounters must name a set in the same slice.
        for g in per_gpu:
            if len(g.devices) > apilimits.MAX_DEVICES_PER_SLICE:
                raise UnsupportedError(f"{len(g.devices)} devices of one GPU exceed one slice")
            bodies.append(([g.counter_set] if g.counter_set else None, g.devices))
        _check_134_counter_limits(bodies)

    for _, devs in bodies:
        for d in devs:
            n = len(d.get("attributes", {})) + len(d.get("capacity", {}))
            if n > apilimits.MAX_ATTRIBUTES_AND_CAPACITIES:
                raise UnsupportedError(f"device {d['name']} has {n} attributes+capacities (max 32)")

    total = len(bodies)
    slices: list[Obj] = []
    for k, (counters, devs) in enumerate(bodies):
        gen = generation
        if k == 0 and faults.stale_generation and total > 0:
            gen = max(generation - 1, 0)
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
        meta: Obj = {"generateName": generate_name(p, node.name, k)}
        if node_uid is not None:
            meta["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node_uid, "controller": True}
            ]
        slices.append(
            {"apiVersion": p.resource_api_version, "kind": "ResourceSlice", "metadata": meta, "spec": spec}
        )

    records = tuple(r for g in per_gpu for r in g.records)
    return RenderedPool(node.name, p.driver, tuple(slices), records, gpus)


def _check_134_counter_limits(bodies: Sequence[tuple[list[Obj] | None, Sequence[Obj]]]) -> None:
    for counters, devs in bodies:
        shared = sum(len(cs["counters"]) for cs in counters or ())
        if shared > apilimits.MAX_SHARED_COUNTERS_PER_SLICE_134:
            raise UnsupportedError(f"{shared} shared counters in one slice exceed 32 (Kubernetes 1.34)")
        used = sum(len(c["counters"]) for d in devs for c in d.get("consumesCounters", ()))
        if used > apilimits.MAX_DEVICE_COUNTERS_PER_SLICE_134:
            raise UnsupportedError(f"{used} device counter consumptions in one slice exceed 1024 (1.34)")


def device_names(rendered: RenderedPool) -> list[str]:
    return [d["name"] for s in rendered.slices for d in s["spec"].get("devices", ())]
