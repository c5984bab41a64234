"""NVIDIA devices, one renderer per device kind: full GPU, static MIG, dynamic MIG.

Which rule holds at which release is a field of the personality (``personalities``); this
module only follows them. Code references are NV ``cmd/gpu-kubelet-plugin/`` files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fake_driver.facts.personalities import PCIE_ROOT, Personality
from fake_driver.facts.profiles import MIB, GpuProfile, MigPlacement, MigProfile, mig_uuid
from fake_driver.fleetspec.fleet import FleetPool
from fake_driver.rendering.devicemodel import (
    DeviceRecord,
    GpuDevices,
    Obj,
    PhysicalGpu,
    binary_quantity,
    integer,
    quantity,
    semver,
    string,
    version,
)

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


# --- attributes and capacities ---------------------------------------------------------------


def _common(pool: FleetPool, gpu: PhysicalGpu, *, addressing: bool = True, root: bool = True) -> Obj:
    """Attributes a full GPU and its MIG devices share (copied from the parent)."""
    p, hw = pool.personality, pool.profile
    attrs: Obj = {
        "productName": string(hw.product_name),
        "brand": string(hw.brand),
        "architecture": string(hw.architecture),
        "cudaComputeCapability": version(semver(hw.compute_capability)),
        "driverVersion": version(semver(pool.driver_version)),
        "cudaDriverVersion": version(semver(pool.cuda_driver_version)),
        p.pci_bus_id_attribute: string(gpu.pci_bus_id),
    }
    if root:
        attrs[PCIE_ROOT] = string(gpu.pcie_root)
    if addressing and p.has_addressing_mode and hw.addressing_mode:
        attrs["addressingMode"] = string(hw.addressing_mode)
    return attrs


def _full_gpu_device(pool: FleetPool, gpu: PhysicalGpu, capacity: Obj, *, addressing: bool = True) -> Obj:
    attrs: Obj = {
        "type": string("gpu"),
        "uuid": string(gpu.uuid),
        **_common(pool, gpu, addressing=addressing),
    }
    if pool.personality.has_index_and_minor:
        attrs["index"] = integer(gpu.index)
        attrs["minor"] = integer(gpu.minor)
    return {"name": f"gpu-{gpu.minor}", "attributes": attrs, "capacity": capacity}


def _mig_attrs(
    pool: FleetPool, gpu: PhysicalGpu, m: MigProfile, *, addressing: bool = True, root: bool = True
) -> Obj:
    common = _common(pool, gpu, addressing=addressing, root=root)
    return {"type": string("mig"), "parentUUID": string(gpu.uuid), "profile": string(m.name), **common}


def _mig_capacity(m: MigProfile) -> Obj:
    return {
        "multiprocessors": quantity(str(m.multiprocessors)),
        "copyEngines": quantity(str(m.copy_engines)),
        "decoders": quantity(str(m.decoders)),
        "encoders": quantity(str(m.encoders)),
        "jpegEngines": quantity(str(m.jpeg_engines)),
        "ofaEngines": quantity(str(m.ofa_engines)),
        "memory": quantity(binary_quantity(m.memory_mib * MIB)),
    }


def _max_capacity(hw: GpuProfile) -> Obj:
    """Per-capacity maxima over all MIG profiles (NV setMax): the full GPU in DynamicMIG."""
    caps = [_mig_capacity(m) for m in hw.mig_profiles]
    top = max(hw.mig_profiles, key=lambda m: m.memory_mib)
    out: Obj = {}
    for cap, _ in _MIG_CAPACITY_COUNTERS:
        if cap == "memory":
            out[cap] = quantity(binary_quantity(top.memory_mib * MIB))
        else:
            out[cap] = quantity(str(max(int(c[cap]["value"]) for c in caps)))
    return out


def _counters(capacity: Obj, slices: Iterable[int]) -> Obj:
    out: Obj = {counter: capacity[cap] for cap, counter in _MIG_CAPACITY_COUNTERS}
    one = quantity("1")
    for s in slices:
        out[f"memory-slice-{s}"] = one
    return out


def _whole(hw: GpuProfile) -> frozenset[int]:
    return frozenset(range(max(hw.memory_slices, 1)))


# --- one renderer per device kind -------------------------------------------------------------


def full_gpu(pool: FleetPool, gpu: PhysicalGpu) -> GpuDevices:
    """Legacy full GPU: memory = NVML memory.Total (deviceinfo.go GpuInfo.GetDevice)."""
    memory = {"memory": quantity(binary_quantity(pool.profile.memory_mib * MIB))}
    device = _full_gpu_device(pool, gpu, memory)
    return GpuDevices(gpu, (device,), (DeviceRecord(device["name"], gpu.uuid, _whole(pool.profile)),))


def static_mig(pool: FleetPool, gpu: PhysicalGpu, placements: Sequence[MigPlacement]) -> GpuDevices:
    """Pre-created MIG devices (MigDeviceInfo.GetDevice): uuid and memorySlice<i> capacities."""
    p = pool.personality
    out: list[Obj] = []
    recs: list[DeviceRecord] = []
    if p.static_mig_publishes_parent:
        parent = full_gpu(pool, gpu)
        out.extend(parent.devices)
        recs.extend(parent.records)
    for mig_index, pl in enumerate(placements):
        m = pl.profile
        name = mig_device_name(p, gpu.minor, m, pl.start)
        attrs = _mig_attrs(pool, gpu, m)
        attrs["uuid"] = string(mig_uuid(gpu.node, gpu.index, name))
        if p.has_index_and_minor:
            attrs["index"] = integer(mig_index)
            attrs["parentIndex"] = integer(gpu.index)
        cap = dict(_mig_capacity(m))
        span = range(pl.start, pl.start + m.placement_size)
        for s in span:
            cap[f"memorySlice{s}"] = quantity("1")
        out.append({"name": name, "attributes": attrs, "capacity": cap})
        recs.append(DeviceRecord(name, gpu.uuid, frozenset(span)))
    return GpuDevices(gpu, tuple(out), tuple(recs))


def dynamic_mig(pool: FleetPool, gpu: PhysicalGpu, *, with_full_gpu: bool) -> GpuDevices:
    """DynamicMIG (partitions.go): an abstract device per (profile, placement), one counter
    set per GPU, and the full GPU consuming every counter; sorted by name."""
    p, hw = pool.personality, pool.profile
    full_cap = _max_capacity(hw)
    cs_name = counter_set_name(gpu)
    counter_set = {"name": cs_name, "counters": _counters(full_cap, range(hw.memory_slices))}
    newer = p.dynamic_mig_addressing_and_root
    devices: list[Obj] = []
    records: list[DeviceRecord] = []
    if with_full_gpu:
        full = _full_gpu_device(pool, gpu, full_cap, addressing=newer)
        full["consumesCounters"] = [{"counterSet": cs_name, "counters": counter_set["counters"]}]
        devices.append(full)
        records.append(DeviceRecord(full["name"], gpu.uuid, _whole(hw)))
    for m in hw.mig_profiles:
        cap = _mig_capacity(m)
        attrs = _mig_attrs(pool, gpu, m, addressing=newer, root=newer)
        for start in m.placement_starts:
            span = range(start, start + m.placement_size)
            name = mig_device_name(p, gpu.minor, m, start)
            consumes = [{"counterSet": cs_name, "counters": _counters(cap, span)}]
            devices.append({"name": name, "attributes": attrs, "capacity": cap, "consumesCounters": consumes})
            records.append(DeviceRecord(name, gpu.uuid, frozenset(span)))
    order = sorted(range(len(devices)), key=lambda k: devices[k]["name"])
    return GpuDevices(gpu, tuple(devices[k] for k in order), tuple(records[k] for k in order), counter_set)


def render_nvidia_gpu(pool: FleetPool, gpu: PhysicalGpu) -> GpuDevices:
    """The devices of one GPU, by MIG mode and what the release does with it."""
    p, hw, mig = pool.personality, pool.profile, pool.mig
    mig_on = mig.applies_to(gpu.index)
    if mig.mode == "dynamic":
        if not p.dynamic_mig_ampere_rule:
            return dynamic_mig(pool, gpu, with_full_gpu=True)
        if not hw.mig_toggle_needs_reset:
            return dynamic_mig(pool, gpu, with_full_gpu=True)
        if mig_on and mig.enabled:
            return dynamic_mig(pool, gpu, with_full_gpu=False)
        return full_gpu(pool, gpu)
    if mig.mode == "static" and mig_on:
        return static_mig(pool, gpu, mig.placements)
    return full_gpu(pool, gpu)
