"""Reading what the fake driver published, from the real API server."""

from __future__ import annotations

from harness import builders as b
from harness.kube import Kube, Obj

SLICE_API = b.resource_api()


def node_slices(kube: Kube, node: str, driver: str = "gpu.nvidia.com") -> list[Obj]:
    """The node's slices of `driver`, in the publisher's order (counter sets first, then by
    first device name)."""
    items = kube.list(SLICE_API, "ResourceSlice", field_selector=f"spec.nodeName={node},spec.driver={driver}")

    def key(s: Obj) -> tuple[int, str]:
        spec = s["spec"]
        if spec.get("sharedCounters"):
            return 0, spec["sharedCounters"][0]["name"]
        return 1, (spec.get("devices") or [{"name": ""}])[0]["name"]

    return sorted(items, key=key)


def device_names(slices: list[Obj]) -> list[str]:
    return [d["name"] for s in slices for d in s["spec"].get("devices") or ()]


def pools(slices: list[Obj]) -> list[Obj]:
    return [s["spec"]["pool"] for s in slices]
