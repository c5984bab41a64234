"""One pod with one claim from its own template, and what the scheduler allocated for it."""

from __future__ import annotations

from harness.kit import builders as b

NV = "gpu.nvidia.com"


def nv(attribute: str) -> str:
    """CEL for an NVIDIA attribute: device.attributes['gpu.nvidia.com'].<attribute>."""
    return f"device.attributes['{NV}'].{attribute}"


def prefer_3g_then_1g(mig_class: str) -> dict[str, object]:
    """A `firstAvailable` request "mig": a 3g.40gb device ("big"), else a 1g.10gb ("small")."""
    return b.first_available_request(
        "mig",
        [
            b.subrequest("big", mig_class, selectors=[f"{nv('profile')} == '3g.40gb'"]),
            b.subrequest("small", mig_class, selectors=[f"{nv('profile')} == '1g.10gb'"]),
        ],
    )
