"""Fault injection (API used by tests and by the CLI).

Faults are kept in a Node annotation (faultstate.FAULTS_ANNOTATION) so that a separate
``python -m fake_driver fault ...`` and a running ``publish --watch`` agree. Each function
updates the annotation and republishes the node through ``publisher`` at once.

    faults.crash(pub, ["n1"])                       # stop publishing; slices stay
    faults.crash(pub, ["n1"], wipe=True)             # ... and the kubelet wiped them (after 30 s)
    faults.recover(pub, ["n1"])                      # clear all faults, republish
    faults.stale_generation(pub, ["n1"])             # slice #0 one generation behind
    faults.drop_attribute(pub, ["n2"], "productName")  # CEL runtime-error case
    faults.mark_unhealthy(pub, "n1", ["gpu-3"])      # taint (v0.4) or removal (v25.12)
    faults.mark_unhealthy(pub, "n1", ["gpu-1"], xid=13)  # adds to gpu-3's event
    faults.restart_plugin(pub, ["n1"])               # health state gone, as a restart does
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from fake_driver.core.errors import FakeDriverError, NodeNotFoundError
from fake_driver.facts.personalities import DEFAULT_XID, HEALTH_EVENTS, HealthMode
from fake_driver.fleetspec.faultstate import (
    FAULTS_ANNOTATION,
    HEALTH_MODES,
    NO_FAULTS,
    HealthEvent,
    NodeFaults,
    add_event,
)
from fake_driver.publishing.publisher import Publisher
from fake_driver.rendering.slices import device_names, render_node

__all__ = [
    "FAULTS_ANNOTATION",
    "HEALTH_MODES",
    "NodeFaults",
    "crash",
    "drop_attribute",
    "get_faults",
    "mark_unhealthy",
    "recover",
    "restart_plugin",
    "set_faults",
    "stale_generation",
]


def get_faults(pub: Publisher, node: str) -> NodeFaults:
    obj = pub.rest.get(f"/api/v1/nodes/{node}")
    if obj is None:
        raise NodeNotFoundError(f"node {node!r} does not exist")
    return NodeFaults.from_json((obj["metadata"].get("annotations") or {}).get(FAULTS_ANNOTATION))


def set_faults(pub: Publisher, node: str, faults: NodeFaults, *, republish: bool = True) -> None:
    pub.fleet.node(node)  # unknown node -> one-line error listing the fleet's nodes
    value = None if faults == NO_FAULTS else faults.to_json()
    pub.rest.patch(f"/api/v1/nodes/{node}", {"metadata": {"annotations": {FAULTS_ANNOTATION: value}}})
    if republish and not faults.crashed:
        pub.publish_node(node)


def _update(pub: Publisher, nodes: Iterable[str], **changes: Any) -> None:
    for n in nodes:
        set_faults(pub, n, dataclasses.replace(get_faults(pub, n), **changes))


def crash(pub: Publisher, nodes: Iterable[str], *, wipe: bool = False) -> None:
    """The plugin stops: slices stay as they are; ``wipe=True`` also deletes them, as the
    kubelet does 30 s after the plugin unregisters."""
    for n in nodes:
        set_faults(pub, n, dataclasses.replace(get_faults(pub, n), crashed=True))
        if wipe:
            pub.remove_node(n)


def recover(pub: Publisher, nodes: Iterable[str]) -> None:
    for n in nodes:
        set_faults(pub, n, NO_FAULTS)


def stale_generation(pub: Publisher, nodes: Iterable[str], on: bool = True) -> None:
    _update(pub, nodes, stale_generation=on)


def drop_attribute(pub: Publisher, nodes: Iterable[str], attribute: str) -> None:
    for n in nodes:
        f = get_faults(pub, n)
        set_faults(
            pub, n, dataclasses.replace(f, drop_attributes=tuple(sorted({*f.drop_attributes, attribute})))
        )


def mark_unhealthy(
    pub: Publisher,
    node: str,
    devices: Iterable[str],
    mode: HealthMode | None = None,
    *,
    event: str = "xid",
    xid: int = DEFAULT_XID,
) -> None:
    """Mark devices unhealthy, adding to what the node already has. ``mode`` None = what the
    personality does (v0.4/v0.5 taint, v25.12 removes, older versions do nothing);
    ``event``/``xid``: what the monitor saw for these devices ("xid" with its code,
    "gpu-lost", "unmonitored"); another device keeps its own event. "" means "xid"."""
    event = event or "xid"
    if event not in HEALTH_EVENTS:
        raise FakeDriverError(f"unknown health event {event!r} (choices: {', '.join(HEALTH_EVENTS)})")
    names = list(devices)
    _check_devices(pub, node, names)
    f = get_faults(pub, node)
    events = f.events
    for name in names:
        events = add_event(events, HealthEvent(name, event, xid))
    # The events name the sick devices (removal and the generic taint use them too);
    # `unhealthy` is left to the older form, whose devices count as Xid 79.
    set_faults(pub, node, dataclasses.replace(f, health_mode=mode or f.health_mode, events=events))


def restart_plugin(pub: Publisher, nodes: Iterable[str]) -> None:
    """What a restart of the plugin does to health state: NV keeps taints in memory only
    (allocatable.go AddOrUpdateTaint @ v0.4.1:328, v0.5.0:354; nothing removes one while it
    runs) and a restart publishes every device without them (driver.go publishResources,
    GetDevice without taints); so every health event is forgotten. Other faults stay."""
    for n in nodes:
        f = get_faults(pub, n)
        set_faults(pub, n, dataclasses.replace(f, unhealthy=(), events=(), health_mode=None, crashed=False))


def _check_devices(pub: Publisher, node: str, names: list[str]) -> None:
    """A device the node does not publish: one line naming the node's devices. A full-GPU
    name is also accepted where the personality removes sick devices (it covers its MIG ones)."""
    spec = pub.fleet.node(node)
    known = device_names(render_node(spec, pub.minor))
    allowed = set(known)
    if spec.pool.personality.health_mode != "taint":
        allowed |= {f"gpu-{i}" for i in range(spec.pool.gpus)}
    for name in names:
        if name not in allowed:
            raise FakeDriverError(f"node {node} has no device {name} (its devices: {', '.join(known)})")
