"""The objects of a pod waiting for an attachable device: a class, a slice with one device that
lists binding conditions, a claim template and pod "p" using it."""

from __future__ import annotations

from collections.abc import Mapping

from harness.kit import builders as b
from harness.kit.kube import Obj

DRIVER = "binding.dra-harness.io"
ATTACHED = "dra-harness.io/attached"
FAILED = "dra-harness.io/attach-failed"


def attachable_pod(namespace: str, node: str, node_selector: Mapping[str, str]) -> list[Obj]:
    device_class = f"{namespace}-attachable"
    device = b.device("gpu-0", {"model": "fabric-h100"}) | {
        "bindsToNode": True,
        "bindingConditions": [ATTACHED],
        "bindingFailureConditions": [FAILED],
    }
    return [
        b.device_class(device_class, selectors=[f'device.driver == "{DRIVER}"']),
        b.resource_slice(f"{node}-attachable", driver=DRIVER, node_name=node, devices=[device]),
        b.claim_template("p", namespace, [b.exact_request("gpu", device_class)]),
        b.template_pod("p", namespace, "p", node_selector=node_selector),
    ]
