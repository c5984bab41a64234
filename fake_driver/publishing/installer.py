"""Installs a personality's DeviceClasses, with the NVIDIA chart's device-plugin guard.

The chart (NV deployments/helm/*/templates/validation.yaml @ v25.3.2 to v0.4.1) refuses
``resources.gpus.enabled=true`` unless ``gpuResourcesEnabledOverride=true``, whatever the
nodes run; so does this installer. The refusal names the nodes that advertise
``nvidia.com/gpu`` through the device plugin, when there are any.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fake_driver.api.kube import ApiError, Obj, as_rest
from fake_driver.api.ownership import check_not_foreign, is_owned
from fake_driver.core.errors import FakeDriverError, InstallRefusedError
from fake_driver.facts.personalities import Personality
from fake_driver.facts.profiles import GpuProfile
from fake_driver.fleetspec.fleet import Fleet
from fake_driver.publishing.legacy import LEGACY_RESOURCE, advertising_nodes
from fake_driver.rendering.deviceclasses import render_device_classes


def guard_refusal(p: Personality, offenders: dict[str, int], *, override: bool) -> str:
    """Why the chart refuses GPU mode ("" = it does not)."""
    if not p.is_nvidia or override:
        return ""
    if offenders:
        listed = ", ".join(f"{n} ({c})" for n, c in sorted(offenders.items()))
        return (
            f"refusing to install {p.name} in GPU mode: nodes advertise {LEGACY_RESOURCE} through the "
            f"device plugin: {listed}; the same GPUs would be promised twice. "
            f"Chart says: {p.device_plugin_guard}"
        )
    return (
        f"refusing to install {p.name} in GPU mode without the override. Chart says: {p.device_plugin_guard}"
    )


def check_device_plugin_guard(
    api_client: Any, p: Personality, nodes: Iterable[str] | None, *, override: bool
) -> None:
    if not p.is_nvidia or override:
        return
    refusal = guard_refusal(p, advertising_nodes(api_client, nodes), override=override)
    raise InstallRefusedError(refusal)


def install(
    api_client: Any,
    p: Personality,
    *,
    fleet: Fleet | None = None,
    gpu_resources_enabled_override: bool = False,
    compute_domains: bool = True,
    mig_profile_classes: GpuProfile | None = None,
    example_extended_resource: str | None = None,
) -> list[str]:
    """Apply the DeviceClasses (create, or replace our own). Returns their names. Refuses
    (ForeignObjectError, nothing written) when a class of one of the names exists without the
    owner label: a real driver's, which must not be replaced.

    The guard looks at the fleet's nodes of this driver, or at every node without a fleet.
    """
    served = [] if fleet is None else [n for n in fleet.nodes if n.pool.dra]  # not device-plugin pools
    nodes = None if fleet is None else [n.name for n in served if n.pool.personality.driver == p.driver]
    check_device_plugin_guard(api_client, p, nodes, override=gpu_resources_enabled_override)
    rest = as_rest(api_client)
    group, version = p.api_group_version
    base = f"/apis/{group}/{version}/deviceclasses"
    bodies = render_device_classes(
        p,
        compute_domains=compute_domains,
        mig_profile_classes=mig_profile_classes,
        example_extended_resource=example_extended_resource,
    )
    # Every name checked before the first write: a refusal changes nothing.
    current = {dc["metadata"]["name"]: rest.get(f"{base}/{dc['metadata']['name']}") for dc in bodies}
    check_not_foreign(("DeviceClass", name, obj) for name, obj in current.items())
    for dc in bodies:
        _apply(rest, base, dc["metadata"]["name"], dc, current[dc["metadata"]["name"]])
    return [dc["metadata"]["name"] for dc in bodies]


def _apply(rest: Any, base: str, name: str, body: Obj, current: Obj | None) -> None:
    try:
        if current is None:
            rest.create(base, body)
        else:
            meta = {**body["metadata"], "resourceVersion": current["metadata"].get("resourceVersion")}
            rest.replace(f"{base}/{name}", {**body, "metadata": meta})
    except ApiError as e:
        raise FakeDriverError(f"DeviceClass {name} rejected: {e}") from None


def uninstall(api_client: Any, p: Personality, **kw: Any) -> list[str]:
    """Deletes the personality's classes that we installed (the owner label); a class of the
    same name without it is someone else's and stays. Returns the names deleted."""
    rest = as_rest(api_client)
    group, version = p.api_group_version
    deleted = []
    for dc in render_device_classes(p, **kw):
        path = f"/apis/{group}/{version}/deviceclasses/{dc['metadata']['name']}"
        if is_owned(rest.get(path)):
            rest.delete(path)
            deleted.append(dc["metadata"]["name"])
    return deleted
