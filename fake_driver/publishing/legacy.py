"""Legacy stack: the NVIDIA device plugin's effect on a node, simulated through the API.

A real device plugin makes the kubelet set ``status.capacity/allocatable["nvidia.com/gpu"]``;
here the Node status is patched directly. The units are the same physical GPUs the DRA
personality publishes (the ledger maps both), which is what makes double advertising visible.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fake_driver.api.kube import Obj, as_rest
from fake_driver.fleetspec.fleet import Fleet, FleetPool

# NVIDIA/k8s-device-plugin resource name (the MIG "mixed" strategy's names are not simulated).
LEGACY_RESOURCE = "nvidia.com/gpu"
# What GPU feature discovery labels a node with, per resource (NVIDIA/k8s-device-plugin
# internal/lm/resource.go @ 02f65cca baseLabeler: `<resource>.count` is the physical devices,
# `<resource>.replicas` the time-slicing replicas, 1 without sharing).
COUNT_LABEL = f"{LEGACY_RESOURCE}.count"
REPLICAS_LABEL = f"{LEGACY_RESOURCE}.replicas"


def advertised_count(pool: FleetPool) -> int:
    """What the plugin advertises for a pool's node: with time-slicing every GPU is `replicas`
    devices (NVIDIA/k8s-device-plugin internal/rm/devices.go NewAnnotatedID `<uuid>::<i>`)."""
    return pool.gpus * pool.time_slicing_replicas


def device_plugin_nodes(fleet: Fleet) -> dict[str, int]:
    """Nodes the fleet marks ``device_plugin: true`` and what the plugin advertises there."""
    return {n.name: advertised_count(n.pool) for n in fleet.nodes if n.pool.device_plugin}


def sharing_labels(pool: FleetPool) -> dict[str, str]:
    """The labels GPU feature discovery sets for the pool's GPUs and their sharing."""
    return {COUNT_LABEL: str(pool.gpus), REPLICAS_LABEL: str(pool.time_slicing_replicas)}


def _status_patch(value: str | None) -> Obj:
    return {"status": {"capacity": {LEGACY_RESOURCE: value}, "allocatable": {LEGACY_RESOURCE: value}}}


def advertise(
    api_client: Any, fleet: Fleet, nodes: Iterable[str] | None = None, count: int | None = None
) -> dict[str, int]:
    """Advertise ``nvidia.com/gpu`` (default: the pool's GPUs times its time-slicing replicas)
    on ``nodes`` (default: the fleet's device_plugin nodes), with GPU feature discovery's count
    and replicas labels. Returns what was set."""
    rest = as_rest(api_client)
    names = list(device_plugin_nodes(fleet)) if nodes is None else list(nodes)
    done: dict[str, int] = {}
    for name in names:
        pool = fleet.node(name).pool
        n = advertised_count(pool) if count is None else count
        rest.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": sharing_labels(pool)}})
        rest.patch(f"/api/v1/nodes/{name}/status", _status_patch(str(n)))
        done[name] = n
    return done


def withdraw(api_client: Any, nodes: Iterable[str], *, remove: bool = False) -> None:
    """Device plugin uninstalled: allocatable drops to 0 (as the kubelet reports it), or the
    resource disappears entirely with ``remove=True``."""
    rest = as_rest(api_client)
    for name in nodes:
        rest.patch(f"/api/v1/nodes/{name}/status", _status_patch(None if remove else "0"))


def advertised(node: Obj) -> int:
    """``nvidia.com/gpu`` allocatable on a Node object (0 if absent)."""
    value = ((node.get("status") or {}).get("allocatable") or {}).get(LEGACY_RESOURCE, "0")
    try:
        return int(value)
    except ValueError:
        return 0


def advertising_nodes(api_client: Any, names: Iterable[str] | None = None) -> dict[str, int]:
    """Nodes (optionally among ``names``) whose status advertises ``nvidia.com/gpu`` > 0."""
    rest = as_rest(api_client)
    wanted = None if names is None else set(names)
    out: dict[str, int] = {}
    for node in rest.list("/api/v1/nodes"):
        name = node["metadata"]["name"]
        if (wanted is None or name in wanted) and (advertised(node) > 0 or _capacity(node) > 0):
            out[name] = max(advertised(node), _capacity(node))
    return out


def _capacity(node: Obj) -> int:
    value = ((node.get("status") or {}).get("capacity") or {}).get(LEGACY_RESOURCE, "0")
    try:
        return int(value)
    except ValueError:
        return 0
