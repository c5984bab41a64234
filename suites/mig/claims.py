"""One pod with one claim from its own template, and what the scheduler allocated for it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness import builders as b
from harness.kube import Kube, Obj
from harness.pods import allocated_devices, claims_of

NV = "gpu.nvidia.com"


def nv(attribute: str) -> str:
    """CEL for an NVIDIA attribute: device.attributes['gpu.nvidia.com'].<attribute>."""
    return f"device.attributes['{NV}'].{attribute}"


def claim_pod(
    kube: Kube,
    namespace: str,
    name: str,
    requests: Sequence[Obj],
    node_selector: Mapping[str, str],
    constraints: Sequence[Obj] = (),
) -> None:
    """ResourceClaimTemplate `name` with `requests`, and pod `name` using it as claim "gpu"."""
    kube.create(b.claim_template(name, namespace, requests, constraints))
    kube.create(
        b.pod(
            name,
            namespace,
            containers=[b.container(claims=["gpu"])],
            claim_templates={"gpu": name},
            node_selector=node_selector,
        )
    )


def allocation(kube: Kube, namespace: str, pod: str) -> list[tuple[str, str, str]]:
    """(request, pool, device) of every device allocated to the pod's only claim."""
    [claim] = claims_of(kube, namespace, pod)
    return [(r["request"], r["pool"], r["device"]) for r in allocated_devices(claim)]
