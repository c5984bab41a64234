"""What the device renderers share: physical GPUs, device records and API value encoders.

Pure data and functions; the renderers per device kind (``nvidia_devices``,
``example_devices``) and the slice layout (``slices``) build on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fake_driver.facts.profiles import gpu_uuid, pci_bus_id, pcie_root

Obj = dict[str, Any]


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
class GpuDevices:
    """The devices one physical GPU contributes to its node's pool."""

    gpu: PhysicalGpu
    devices: tuple[Obj, ...]
    records: tuple[DeviceRecord, ...]
    counter_set: Obj | None = None  # DynamicMIG only


def physical_gpus(node: str, count: int) -> tuple[PhysicalGpu, ...]:
    # minor == index here: the usual case; NV names devices by minor since v25.3.0.
    return tuple(
        PhysicalGpu(node, i, i, gpu_uuid(node, i), pci_bus_id(i), pcie_root(i)) for i in range(count)
    )


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


def string(v: str) -> Obj:
    return {"string": v}


def integer(v: int) -> Obj:
    return {"int": v}


def version(v: str) -> Obj:
    return {"version": v}


def boolean(v: bool) -> Obj:
    return {"bool": v}


def quantity(v: str) -> Obj:
    return {"value": v}
