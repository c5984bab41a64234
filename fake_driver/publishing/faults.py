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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from fake_driver.core.errors import NodeNotFoundError
from fake_driver.facts.personalities import DEFAULT_XID, HealthMode
from fake_driver.fleetspec.faultstate import FAULTS_ANNOTATION, HEALTH_MODES, NO_FAULTS, NodeFaults
from fake_driver.publishing.publisher import Publisher

__all__ = [
    "FAULTS_ANNOTATION",
    "HEALTH_MODES",
    "NodeFaults",
    "crash",
    "drop_attribute",
    "get_faults",
    "mark_unhealthy",
    "recover",
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
    event: str = "",
    xid: int = DEFAULT_XID,
) -> None:
    """Mark devices unhealthy. ``mode`` None = what the personality does (v0.4 taints,
    v25.12 removes, older versions do nothing); ``event``/``xid``: what the monitor saw
    ("xid" with its number, "gpu-lost", "unmonitored"), which picks v0.4's taint."""
    f = get_faults(pub, node)
    unhealthy = tuple(sorted({*f.unhealthy, *devices}))
    changed = dataclasses.replace(f, unhealthy=unhealthy, health_mode=mode or f.health_mode)
    set_faults(pub, node, dataclasses.replace(changed, health_event=event, xid=xid))
