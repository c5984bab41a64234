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
    # What the health monitor saw ("" = an XID): "xid", "gpu-lost" or "unmonitored"; with
    # the XID number for "xid". Decides the taint's key and effect where health taints.
    health_event: str = ""
    xid: int = DEFAULT_XID

    @property
    def any(self) -> bool:
        return self != NO_FAULTS

    def to_json(self) -> str:
        d = asdict(self)
        kept = {k: v for k, v in d.items() if v not in (False, (), [], None, "")}
        if kept.get("xid") == DEFAULT_XID:
            del kept["xid"]
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
            "health_event",
            "xid",
        )
        for k in d:
            if k not in valid:
                raise UnknownChoiceError(f"field in annotation {FAULTS_ANNOTATION}", k, valid)
        mode = d.get("health_mode")
        if mode is not None and mode not in HEALTH_MODES:
            raise UnknownChoiceError("health mode", mode, HEALTH_MODES)
        event = d.get("health_event", "")
        if event and event not in HEALTH_EVENTS:
            raise UnknownChoiceError("health event", event, HEALTH_EVENTS)
        xid = d.get("xid", DEFAULT_XID)
        if isinstance(xid, bool) or not isinstance(xid, int) or xid < 0:
            raise FakeDriverError(f"annotation {FAULTS_ANNOTATION}: xid must be a non-negative integer")
        return cls(
            crashed=bool(d.get("crashed", False)),
            stale_generation=bool(d.get("stale_generation", False)),
            drop_attributes=tuple(d.get("drop_attributes", ())),
            unhealthy=tuple(d.get("unhealthy", ())),
            health_mode=cast("HealthMode | None", mode),
            health_event=str(event),
            xid=xid,
        )


NO_FAULTS = NodeFaults()
