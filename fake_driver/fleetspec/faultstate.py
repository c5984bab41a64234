"""Per-node fault state: what the renderer and publisher must get wrong on purpose.

Stored as a JSON annotation on the Node so a running publisher (``python -m fake_driver
publish --watch``) and a separate fault command agree without sharing a process.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import cast

from fake_driver.core.errors import FakeDriverError, UnknownChoiceError
from fake_driver.facts.personalities import DEFAULT_XID, HEALTH_EVENTS, HealthMode

FAULTS_ANNOTATION = "fake-driver.dra-harness.io/faults"
HEALTH_MODES: tuple[str, ...] = ("none", "remove", "taint")


@dataclass(frozen=True)
class HealthEvent:
    """One event the health monitor saw for one device: "xid" with its code, "gpu-lost" or
    "unmonitored". Each device keeps its own events, as NV's plugin keeps taints per device
    (cmd/gpu-kubelet-plugin/allocatable.go AddOrUpdateTaint @ v0.4.1:328, @ v0.5.0:354)."""

    device: str
    event: str = "xid"
    xid: int = DEFAULT_XID

    @property
    def key(self) -> str:
        """The taint key it sets (one taint per key per device): the event kind."""
        return self.event

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"device": self.device, "event": self.event}
        if self.event == "xid":
            d["xid"] = self.xid
        return d


def add_event(events: tuple[HealthEvent, ...], new: HealthEvent) -> tuple[HealthEvent, ...]:
    """``events`` with ``new``: a later event of the same kind on the same device replaces the
    earlier one in place (AddOrUpdateTaint: the newest value wins, the key keeps its place)."""
    same = [k for k, e in enumerate(events) if (e.device, e.key) == (new.device, new.key)]
    if not same:
        return (*events, new)
    return tuple(new if k == same[0] else e for k, e in enumerate(events) if k not in same[1:])


@dataclass(frozen=True)
class NodeFaults:
    # The plugin is gone: its slices are left as they are (or wiped, see faults.crash).
    crashed: bool = False
    # Slice #0 of the pool carries generation-1, so the pool looks half-updated.
    stale_generation: bool = False
    # Attributes left out of every device on the node (CEL runtime-error case).
    drop_attributes: tuple[str, ...] = ()
    # Unhealthy devices; a full-GPU name ("gpu-3") also covers its MIG devices.
    unhealthy: tuple[str, ...] = ()
    # Overrides the personality's health handling (None = the personality's own).
    health_mode: HealthMode | None = None
    # What the health monitor saw, per device, in arrival order (taint personalities); an
    # unhealthy device without an event of its own counts as Xid DEFAULT_XID.
    events: tuple[HealthEvent, ...] = ()

    @property
    def any(self) -> bool:
        return self != NO_FAULTS

    def to_json(self) -> str:
        d = asdict(self)
        d["events"] = [e.to_dict() for e in self.events]
        kept = {k: v for k, v in d.items() if v not in (False, (), [], None, "")}
        return json.dumps(kept, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> NodeFaults:
        if not text:
            return NO_FAULTS
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise FakeDriverError(f"annotation {FAULTS_ANNOTATION} is not JSON: {e}") from None
        if not isinstance(d, dict):
            raise FakeDriverError(f"annotation {FAULTS_ANNOTATION} must be a JSON object")
        valid = (
            "crashed",
            "stale_generation",
            "drop_attributes",
            "unhealthy",
            "health_mode",
            "events",
            "health_event",  # the one-event-per-node form written before per-device events
            "xid",
        )
        for k in d:
            if k not in valid:
                raise UnknownChoiceError(f"field in annotation {FAULTS_ANNOTATION}", k, valid)
        mode = d.get("health_mode")
        if mode is not None and mode not in HEALTH_MODES:
            raise UnknownChoiceError("health mode", mode, HEALTH_MODES)
        unhealthy = tuple(d.get("unhealthy", ()))
        raw = d.get("events", [])
        if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
            raise FakeDriverError(f"annotation {FAULTS_ANNOTATION}: events must be a list of objects")
        events = tuple(_event(e) for e in raw)
        if "health_event" in d or "xid" in d:  # old form: one event for every unhealthy device
            old = _event({"event": d.get("health_event") or "xid", "xid": d.get("xid", DEFAULT_XID)}, "")
            events = tuple(HealthEvent(u, old.event, old.xid) for u in unhealthy) + events
        return cls(
            crashed=bool(d.get("crashed", False)),
            stale_generation=bool(d.get("stale_generation", False)),
            drop_attributes=tuple(d.get("drop_attributes", ())),
            unhealthy=unhealthy,
            health_mode=cast("HealthMode | None", mode),
            events=events,
        )


def _event(d: dict[str, object], device: str | None = None) -> HealthEvent:
    name = d.get("device", device)
    if not isinstance(name, str):
        raise FakeDriverError(f"annotation {FAULTS_ANNOTATION}: an event needs a device name")
    extra = set(d) - {"device", "event", "xid"}
    if extra:
        raise UnknownChoiceError(
            f"field of an event in annotation {FAULTS_ANNOTATION}", min(extra), ("device", "event", "xid")
        )
    event = d.get("event", "xid")
    if event not in HEALTH_EVENTS:
        raise UnknownChoiceError("health event", str(event), HEALTH_EVENTS)
    xid = d.get("xid", DEFAULT_XID)
    if isinstance(xid, bool) or not isinstance(xid, int) or xid < 0:
        raise FakeDriverError(f"annotation {FAULTS_ANNOTATION}: xid must be a non-negative integer")
    return HealthEvent(name, str(event), xid)


NO_FAULTS = NodeFaults()
