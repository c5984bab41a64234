"""One pod with one claim from its own template, and what the scheduler allocated for it."""

from __future__ import annotations

NV = "gpu.nvidia.com"


def nv(attribute: str) -> str:
    """CEL for an NVIDIA attribute: device.attributes['gpu.nvidia.com'].<attribute>."""
    return f"device.attributes['{NV}'].{attribute}"
