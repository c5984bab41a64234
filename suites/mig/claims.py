"""One pod with one claim from its own template, and what the scheduler allocated for it."""

from __future__ import annotations

from harness.kube import Kube
from harness.pods import allocated_devices, claims_of

NV = "gpu.nvidia.com"


def nv(attribute: str) -> str:
    """CEL for an NVIDIA attribute: device.attributes['gpu.nvidia.com'].<attribute>."""
    return f"device.attributes['{NV}'].{attribute}"


def allocation(kube: Kube, namespace: str, pod: str) -> list[tuple[str, str, str]]:
    """(request, pool, device) of every device allocated to the pod's only claim."""
    [claim] = claims_of(kube, namespace, pod)
    return [(r["request"], r["pool"], r["device"]) for r in allocated_devices(claim)]
