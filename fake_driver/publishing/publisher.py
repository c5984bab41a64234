"""Publishes the fleet's ResourceSlices through the API server, like a kubelet plugin would.

API the harness calls::

    pub = Publisher(api_client, fleet, server_minor="1.35")   # api_client: kubernetes ApiClient
    pub.publish_all()            # -> PublishReport; every fleet node that exists as a Node
    pub.publish_node("node-1")   # -> NodeResult; raises NodeNotFoundError / PublishError
    pub.sync()                   # reconcile: republish changed nodes, delete slices of deleted nodes
    pub.remove_node("node-1")    # delete that node's slices (all fleet drivers)
    pub.remove_all()             # delete every slice of the fleet's drivers on fleet nodes
    pub.rendered("node-1")       # the RenderedPool last published (device -> physical GPU map)

The fleet's raw pools (fake_driver.fleetspec.rawpools) are published by publish_all/sync and removed by
remove_all too, as exported: no personality, no faults.

Behaviour, per node (pool name = node name):
- generation starts above any generation found on the server and is bumped on every change;
  an unchanged pool is left alone (restart-safe: existing slices are matched and updated in
  place, never duplicated);
- every slice has ``ownerReferences`` to the Node (controller: true) and the owner label
  (fake_driver.api.ownership); slices without it (a real driver's) are never touched;
- before writing, every create/update is sent with ``dryRun=All``; a rejection raises
  PublishError naming the field and nothing is written. A field the server silently drops
  (feature gate off) is reported the same way unless ``on_dropped_fields="ignore"``. If a real
  write still fails, all of the pool's slices are deleted, so no half-published pool stays;
- fault state is read from the Node annotation ``fake-driver.dra-harness.io/faults``
  (see faults.py); a crashed node is not touched.

Throughput: nodes are independent pools, so ``publish_all``/``sync`` publish up to
``workers`` nodes at once (default 8; 1 = sequential). ``dry_run_first=False`` halves the
writes (a real rejection still names the field and still leaves no half-published pool).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

from fake_driver.api import apilimits
from fake_driver.api.apilimits import Minor
from fake_driver.api.kube import ApiError, Obj, Rest, as_rest
from fake_driver.api.ownership import OWNED_SELECTOR
from fake_driver.core.errors import NodeNotFoundError, PublishError
from fake_driver.facts.personalities import Personality
from fake_driver.fleetspec.faultstate import FAULTS_ANNOTATION, NodeFaults
from fake_driver.fleetspec.fleet import Fleet, NodeSpec
from fake_driver.fleetspec.rawpools import publish_raw, remove_raw
from fake_driver.rendering.slices import RenderedPool, render_node

_T = TypeVar("_T")
_R = TypeVar("_R")

Action = Literal[
    "created", "updated", "unchanged", "crashed", "missing-node", "removed", "device-plugin-only"
]


@dataclass(frozen=True)
class NodeResult:
    node: str
    action: Action
    generation: int = 0
    slices: int = 0


@dataclass(frozen=True)
class PublishReport:
    results: tuple[NodeResult, ...] = field(default_factory=tuple)

    def by_action(self, action: Action) -> tuple[str, ...]:
        return tuple(r.node for r in self.results if r.action == action)

    @property
    def missing(self) -> tuple[str, ...]:
        return self.by_action("missing-node")


def slices_path(p: Personality, name: str | None = None) -> str:
    group, version = p.api_group_version
    base = f"/apis/{group}/{version}/resourceslices"
    return f"{base}/{name}" if name else base


class Publisher:
    def __init__(
        self,
        api_client: Any,
        fleet: Fleet,
        server_minor: str | Minor,
        *,
        on_dropped_fields: Literal["error", "ignore"] = "error",
        dry_run_first: bool = True,
        workers: int = 8,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.rest: Rest = as_rest(api_client)
        self.fleet = fleet
        self.minor: Minor = (
            apilimits.parse_minor(server_minor) if isinstance(server_minor, str) else server_minor
        )
        self.on_dropped_fields = on_dropped_fields
        self.dry_run_first = dry_run_first
        self.workers = workers
        self._rendered: dict[str, RenderedPool] = {}
        self._generation: dict[str, int] = {}

    # --- public --------------------------------------------------------------------------

    def rendered(self, node: str) -> RenderedPool:
        return self._rendered[node]

    def publish_node(self, name: str) -> NodeResult:
        spec = self.fleet.node(name)
        node = self.rest.get(f"/api/v1/nodes/{name}")
        if node is None:
            raise NodeNotFoundError(f"node {name!r} does not exist; create it before publishing its slices")
        existing = self._list_slices(spec.pool.personality, name)
        return self._publish(spec, node, existing)

    def publish_all(self) -> PublishReport:
        return self._reconcile(delete_gone=False)

    def sync(self) -> PublishReport:
        return self._reconcile(delete_gone=True)

    def remove_node(self, name: str) -> int:
        self.fleet.node(name)
        removed = 0
        for driver_p in self._fleet_personalities():
            for s in self._list_slices(driver_p, name):
                self._delete(driver_p, s)
                removed += 1
        self._rendered.pop(name, None)
        return removed

    def remove_all(self) -> int:
        names = set(self.fleet.node_names)
        doomed = [
            (p, s)
            for p in self._fleet_personalities()
            for s in self._list_slices(p)
            if s["spec"].get("nodeName") in names
        ]
        self._map(lambda ps: self._delete(*ps), doomed)
        self._rendered.clear()
        return len(doomed) + remove_raw(self.rest, self.fleet.raw_pools)

    # --- reconcile -----------------------------------------------------------------------

    def _fleet_personalities(self) -> list[Personality]:
        """One personality per driver (the slices path depends only on the API version)."""
        seen: dict[str, Personality] = {}
        for pool in self.fleet.pools:
            seen.setdefault(pool.personality.driver, pool.personality)
        return list(seen.values())

    def _reconcile(self, delete_gone: bool) -> PublishReport:
        nodes = {n["metadata"]["name"]: n for n in self.rest.list("/api/v1/nodes")}
        by_driver_node: dict[tuple[str, str], list[Obj]] = {}
        for p in self._fleet_personalities():
            for s in self._list_slices(p):
                by_driver_node.setdefault((p.driver, s["spec"].get("nodeName", "")), []).append(s)
        drivers = self._fleet_personalities()

        def one(spec: NodeSpec) -> NodeResult:
            mine = spec.pool.personality
            if not spec.pool.dra:  # a device-plugin pool: whatever slices it had are stale
                stale = [s for p in drivers for s in by_driver_node.get((p.driver, spec.name), [])]
                for s in stale:
                    self._delete(self._personality_for(s), s)
                return NodeResult(spec.name, "device-plugin-only")
            if spec.name not in nodes:
                if not delete_gone:
                    return NodeResult(spec.name, "missing-node")
                gone = [s for p in drivers for s in by_driver_node.get((p.driver, spec.name), [])]
                for s in gone:
                    self._delete(self._personality_for(s), s)
                self._rendered.pop(spec.name, None)
                return NodeResult(spec.name, "removed" if gone else "missing-node")
            # A node whose pool moved to another driver keeps no slices of the old one.
            for p in drivers:
                if p.driver != mine.driver:
                    for s in by_driver_node.get((p.driver, spec.name), []):
                        self._delete(p, s)
            existing = by_driver_node.get((mine.driver, spec.name), [])
            return self._publish(spec, nodes[spec.name], existing)

        results = self._map(one, self.fleet.nodes)
        raw = publish_raw(self.rest, self.fleet.raw_pools, nodes)  # replayed as exported
        results += [NodeResult(n, cast(Action, a)) for n, a in raw]
        return PublishReport(tuple(results))

    def _map(self, fn: Callable[[_T], _R], inputs: Iterable[_T]) -> list[_R]:
        """Results in input order; nodes are independent pools, so they are handled in
        parallel. The first error is raised after the others have finished."""
        items = list(inputs)
        if self.workers == 1 or len(items) < 2:
            return [fn(s) for s in items]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
            futures = [pool.submit(fn, s) for s in items]
            return [f.result() for f in futures]

    def _personality_for(self, s: Obj) -> Personality:
        for p in self._fleet_personalities():
            if p.driver == s["spec"]["driver"]:
                return p
        raise KeyError(s["spec"]["driver"])  # pragma: no cover - slices are listed per driver

    # --- one node ------------------------------------------------------------------------

    def _publish(self, spec: NodeSpec, node: Obj, existing: list[Obj]) -> NodeResult:
        annotations = node.get("metadata", {}).get("annotations") or {}
        faults = NodeFaults.from_json(annotations.get(FAULTS_ANNOTATION))
        if faults.crashed:
            return NodeResult(spec.name, "crashed", self._generation.get(spec.name, 0), len(existing))
        uid = node["metadata"].get("uid")
        current = max([self._generation.get(spec.name, 0)] + [_generation(s) for s in existing])
        if existing:
            probe = render_node(spec, self.minor, faults=faults, generation=max(current, 1), node_uid=uid)
            if _content(existing) == _content(probe.slices) and _owned(existing, uid):
                self._generation[spec.name] = current
                self._rendered[spec.name] = probe
                return NodeResult(spec.name, "unchanged", current, len(existing))
        gen = current + 1
        rendered = render_node(spec, self.minor, faults=faults, generation=gen, node_uid=uid)
        self._write(spec.pool.personality, spec.name, rendered.slices, existing)
        self._generation[spec.name] = gen
        self._rendered[spec.name] = rendered
        return NodeResult(spec.name, "updated" if existing else "created", gen, len(rendered.slices))

    def _write(self, p: Personality, node: str, wanted: Iterable[Obj], existing: list[Obj]) -> None:
        new = sorted(wanted, key=_slice_key)
        old = sorted(existing, key=_slice_key)
        updates = [(_as_update(w, o), w) for w, o in zip(new, old, strict=False)]
        creates = new[len(old) :]
        deletes = old[len(new) :]

        if self.dry_run_first:
            for body, sent in updates:
                self._checked(
                    p,
                    node,
                    lambda b=body: self.rest.replace(slices_path(p, b["metadata"]["name"]), b, dry_run=True),
                    sent,
                )
            for body in creates:
                self._checked(p, node, lambda b=body: self.rest.create(slices_path(p), b, dry_run=True), body)

        written: list[Obj] = []
        try:
            for body, sent in updates:
                written.append(
                    self._checked(
                        p,
                        node,
                        lambda b=body: self.rest.replace(slices_path(p, b["metadata"]["name"]), b),
                        sent,
                    )
                )
            for body in creates:
                written.append(
                    self._checked(p, node, lambda b=body: self.rest.create(slices_path(p), b), body)
                )
            for s in deletes:
                self._delete(p, s)
        except PublishError:
            # Leave nothing half-published: drop the whole pool (kubelet-wipe equivalent).
            for s in self._list_slices(p, node):
                self._delete(p, s)
            raise

    def _checked(self, p: Personality, node: str, call: Any, sent: Obj) -> Obj:
        try:
            got: Obj = call()
        except ApiError as e:
            where = f" (fields: {', '.join(e.fields)})" if e.fields else ""
            raise PublishError(f"{p.driver} slice for node {node} rejected{where}: {e}") from None
        if self.on_dropped_fields == "error":
            dropped = dropped_fields(sent.get("spec", {}), got.get("spec", {}))
            if dropped:
                desc = ", ".join(f"{path} (feature gate {gate})" for path, gate in dropped)
                raise PublishError(f"{p.driver} slice for node {node}: the API server dropped {desc}")
        return got

    def _delete(self, p: Personality, s: Obj) -> None:
        self.rest.delete(slices_path(p, s["metadata"]["name"]))

    def _list_slices(self, p: Personality, node: str | None = None) -> list[Obj]:
        """Only slices we published (the owner label): a real driver's slices of the same driver
        name, on the same nodes, are never updated or deleted (fake_driver.api.ownership)."""
        sel = f"spec.driver={p.driver}" + (f",spec.nodeName={node}" if node else "")
        return self.rest.list(slices_path(p), {"fieldSelector": sel, "labelSelector": OWNED_SELECTOR})


# --- helpers (pure) ------------------------------------------------------------------------


def _generation(s: Obj) -> int:
    return int(s.get("spec", {}).get("pool", {}).get("generation", 0))


def _slice_key(s: Obj) -> tuple[int, str]:
    spec = s.get("spec", {})
    if spec.get("sharedCounters"):
        return 0, spec["sharedCounters"][0]["name"]
    devices = spec.get("devices") or ()
    return 1, devices[0]["name"] if devices else ""


def _as_update(wanted: Obj, old: Obj) -> Obj:
    meta = dict(wanted["metadata"])
    meta.pop("generateName", None)
    meta["name"] = old["metadata"]["name"]
    meta["resourceVersion"] = old["metadata"].get("resourceVersion")
    return {**wanted, "metadata": meta}


def _normalize(v: Any) -> Any:
    """Drop empty containers and server-set timestamps, so server copies compare equal."""
    if isinstance(v, Mapping):
        out = {k: _normalize(x) for k, x in v.items() if k != "timeAdded"}
        return {k: x for k, x in out.items() if x not in ({}, [], None)}
    if isinstance(v, list):
        return [_normalize(x) for x in v]
    return v


def _content(slices: Iterable[Obj]) -> list[str]:
    """Comparable content: specs with generations relative to the pool's newest."""
    specs = [s["spec"] for s in slices]
    top = max((int(s["pool"]["generation"]) for s in specs), default=0)
    out = []
    for s in specs:
        spec = {**s, "pool": {**s["pool"], "generation": int(s["pool"]["generation"]) - top}}
        out.append(json.dumps(_normalize(spec), sort_keys=True))
    return sorted(out)


def _owned(existing: Iterable[Obj], uid: str | None) -> bool:
    return (
        all(
            any(o.get("uid") == uid for o in s.get("metadata", {}).get("ownerReferences") or ())
            for s in existing
        )
        if uid
        else True
    )


def dropped_fields(sent: Obj, got: Obj) -> list[tuple[str, str]]:
    """Gated fields present in what we sent but missing from what the server stored."""
    out: list[tuple[str, str]] = []
    for name, gate in apilimits.GATED_SPEC_FIELDS.items():
        if sent.get(name) and not got.get(name):
            out.append((f"spec.{name}", gate))
    got_devices = {d.get("name"): d for d in got.get("devices") or ()}
    for i, d in enumerate(sent.get("devices") or ()):
        g = got_devices.get(d["name"], {})
        for name, gate in apilimits.GATED_DEVICE_FIELDS.items():
            if d.get(name) and not g.get(name):
                out.append((f"spec.devices[{i}].{name}", gate))
        for cap, val in (d.get("capacity") or {}).items():
            if "requestPolicy" in val and "requestPolicy" not in (g.get("capacity") or {}).get(cap, {}):
                out.append((f"spec.devices[{i}].capacity[{cap}].requestPolicy", "DRAConsumableCapacity"))
        if out:
            break  # the first device tells the story; do not list 26 copies
    return out
