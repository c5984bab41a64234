"""dra-example-driver devices (EX internal/profiles/gpu/gpu.go @ v0.4.0, EnumerateDevices)."""

from __future__ import annotations

from fake_driver.devicemodel import (
    DeviceRecord,
    GpuDevices,
    Obj,
    PhysicalGpu,
    integer,
    quantity,
    string,
    version,
)
from fake_driver.fleet import Pool


def _capacity(value: str, step: str, shared: bool) -> Obj:
    """memoryCapacity / computeCapacity: with allowMultipleAllocations a request policy whose
    default is the whole value (a claim without a capacity request takes the device) and whose
    range is [step, value] in steps of ``step``."""
    cap = quantity(value)
    if shared:
        cap["requestPolicy"] = {"default": value, "validRange": {"min": step, "step": step, "max": value}}
    return cap


def example_gpu(pool: Pool, gpu: PhysicalGpu) -> GpuDevices:
    p = pool.personality
    shared = pool.consumable_capacity
    # The example driver's UUID is "gpu-" + a UUID from a PRNG seeded by the node name; ours is
    # derived from the node name too, but not bit-identical to Go's math/rand.
    attrs: Obj = {
        "index": integer(gpu.index),
        "uuid": string("gpu-" + gpu.uuid.removeprefix("GPU-")),
        "model": string(p.example_model),
        "driverVersion": version(p.example_driver_version),
    }
    cap: Obj = {"memory": _capacity(p.example_memory, "1Gi", shared)}
    if p.example_compute is not None:
        cap["compute"] = _capacity(str(p.example_compute), "1", shared)
    # AllowMultipleAllocations: ptr.To(p.allowMultipleAllocations), so false is sent too.
    device: Obj = {
        "name": f"gpu-{gpu.index}",
        "attributes": attrs,
        "allowMultipleAllocations": shared,
        "capacity": cap,
    }
    rec = DeviceRecord(device["name"], gpu.uuid, frozenset({0}), shareable=shared)
    return GpuDevices(gpu, (device,), (rec,))
