"""dra-example-driver devices (EX internal/profiles/gpu/gpu.go @ v0.4.0, EnumerateDevices)."""

from __future__ import annotations

from fake_driver.fleetspec.fleet import FleetPool
from fake_driver.rendering.devicemodel import (
    DeviceRecord,
    GpuDevices,
    Obj,
    PhysicalGpu,
    binary_quantity,
    boolean,
    integer,
    quantity,
    string,
    version,
)
from fake_driver.rendering.gorand import example_uuids


def _capacity(value: str, step: str, shared: bool) -> Obj:
    """memoryCapacity / computeCapacity: with allowMultipleAllocations a request policy whose
    default is the whole value (a claim without a capacity request takes the device) and whose
    range is [step, value] in steps of ``step``."""
    cap = quantity(value)
    if shared:
        cap["requestPolicy"] = {"default": value, "validRange": {"min": step, "step": step, "max": value}}
    return cap


def _device(name: str, attrs: Obj, memory: str, compute: int | None, shared: bool) -> Obj:
    cap: Obj = {"memory": _capacity(memory, "1Gi", shared)}
    if compute is not None:
        cap["compute"] = _capacity(str(compute), "1", shared)
    # AllowMultipleAllocations: ptr.To(p.allowMultipleAllocations), so false is sent too.
    return {"name": name, "attributes": attrs, "allowMultipleAllocations": shared, "capacity": cap}


def _consumes(counter_set: str, memory: str, compute: int | None) -> list[Obj]:
    counters = {"memory": quantity(memory)}
    if compute is not None:
        counters["compute"] = quantity(str(compute))
    return [{"counterSet": counter_set, "counters": counters}]


def example_gpu(pool: FleetPool, gpu: PhysicalGpu) -> GpuDevices:
    p = pool.personality
    shared = pool.consumable_capacity
    # gpu.go generateUUIDs: Go's math/rand seeded by a hash of the node name (fake_driver.rendering.gorand),
    # so the same node name gets the real driver's UUIDs.
    attrs: Obj = {
        "index": integer(gpu.index),
        "uuid": string(example_uuids(gpu.node, pool.gpus)[gpu.index]),
        "model": string(p.example_model),
        "driverVersion": version(p.example_driver_version),
    }
    if not pool.partitions:
        device = _device(f"gpu-{gpu.index}", attrs, p.example_memory, p.example_compute, shared)
        rec = DeviceRecord(device["name"], gpu.uuid, frozenset({0}), shareable=shared)
        return GpuDevices(gpu, (device,), (rec,))
    return _partitioned(pool, gpu, attrs, shared)


def _partitioned(pool: FleetPool, gpu: PhysicalGpu, attrs: Obj, shared: bool) -> GpuDevices:
    """--gpu-partitions=N (gpu.go EnumerateDevices, partitionsPerGPU > 0): a counter set
    gpu-<i>-counters holding the GPU's memory and compute, N devices gpu-<i>-partition-<j> of
    1/N each (integer division, as resource.NewQuantity(value/N)), then gpu-<i>-full taking all."""
    p, n = pool.personality, pool.partitions
    cs = f"gpu-{gpu.index}-counters"
    memory = binary_quantity(_bytes(p.example_memory) // n)
    compute = None if p.example_compute is None else p.example_compute // n
    devices: list[Obj] = []
    records: list[DeviceRecord] = []
    for j in range(n):
        part = {**attrs, "partition": integer(j), "partitionable": boolean(True)}
        d = _device(f"gpu-{gpu.index}-partition-{j}", part, memory, compute, shared)
        d["consumesCounters"] = _consumes(cs, memory, compute)
        devices.append(d)
        records.append(DeviceRecord(d["name"], gpu.uuid, frozenset({j}), shareable=shared))
    full_attrs = {**attrs, "partitionable": boolean(True), "full": boolean(True)}
    full = _device(f"gpu-{gpu.index}-full", full_attrs, p.example_memory, p.example_compute, shared)
    full["consumesCounters"] = _consumes(cs, p.example_memory, p.example_compute)
    devices.append(full)
    records.append(DeviceRecord(full["name"], gpu.uuid, frozenset(range(n)), shareable=shared))
    counters = {"memory": quantity(p.example_memory)}
    if p.example_compute is not None:
        counters["compute"] = quantity(str(p.example_compute))
    return GpuDevices(gpu, tuple(devices), tuple(records), {"name": cs, "counters": counters})


def _bytes(q: str) -> int:
    """A BinarySI quantity the personality holds ("80Gi") in bytes."""
    suffixes = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}
    for s, power in suffixes.items():
        if q.endswith(s):
            return int(q.removesuffix(s)) << power
    return int(q)
