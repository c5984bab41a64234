"""Why a test did not run in a cell, as data: the readiness verdict is decided on these fields,
and `message()` is only the wording shown to people (rewording it changes no verdict).
fixtures/requirements.py makes them from the cell and the driver under test.

summary.json stores each skipped test's reasons as `Reason.to_json()`; fields left at their
default are omitted.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, fields
from typing import Any


class Kind(enum.StrEnum):
    FEATURE_GATE = "feature_gate"  # gate, required (on/off), state (None: unknown to the minor)
    VERSION = "version"  # need: the lowest minor the test runs on
    API = "api"  # need: a group/version the API server must serve
    DRIVER_CAPABILITY = "driver_capability"  # capability, required (present/absent)
    PROVIDER = "provider"  # what the cluster provider or driver source cannot do: text
    # What the installed driver's fleet lacks for the test (external driver): device_class,
    # need (e.g. ">= 4 devices", "MIG devices"), text (what the fleet has).
    FLEET = "fleet"
    # A part this machine has not built, or cannot build (the 1.38 kubelet): text says which
    # and how to build it. Says nothing about the platform; the reports call it "not built here".
    NOT_BUILT = "not_built"


class Capability(enum.StrEnum):
    # The driver's DeviceClass sets extendedResourceName (driver, device_class, resource).
    EXTENDED_RESOURCE_NAME = "extended_resource_name"
    # Legacy pods get DRA devices: the gate is on and the class maps the name (driver).
    BRIDGE = "bridge"


@dataclass(frozen=True)
class Reason:
    kind: Kind
    required: bool = True
    minor: str = ""  # the cell's
    profile: str = ""  # the cell's gate profile
    gate: str = ""
    state: bool | None = None
    need: str = ""
    capability: str = ""
    driver: str = ""  # the personality (or driver name) in the wording
    device_class: str = ""
    resource: str = ""
    text: str = ""

    @property
    def cell(self) -> str:
        return f"{self.minor}/{self.profile}"

    def message(self) -> str:
        if self.kind is Kind.FEATURE_GATE:
            return self._gate_message()
        if self.kind is Kind.VERSION:
            return f"needs Kubernetes >= {self.need} (cell is {self.minor})"
        if self.kind is Kind.API:
            return f"needs {self.need} served (runtime-config), not served in {self.cell}"
        if self.kind is Kind.DRIVER_CAPABILITY:
            if self.capability == Capability.BRIDGE:
                return f"the bridge is available in {self.cell} with {self.driver}"
            return f"{self.driver} installs {self.device_class} without extendedResourceName {self.resource}"
        if self.kind is Kind.FLEET:
            return f"needs {self.need} of class {self.device_class}; the fleet has {self.text}"
        return self.text

    def _gate_message(self) -> str:
        if not self.required:
            where = f"on in {self.cell}" if self.state else f"unknown to Kubernetes {self.minor}"
            return f"covers cells where feature gate {self.gate} is off; it is {where}"
        if self.state is None:
            return f"needs feature gate {self.gate}, unknown to Kubernetes {self.minor}"
        return f"needs feature gate {self.gate}, off in {self.cell}"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types only: xdist's execnet refuses enum members in user_properties."""
        defaults = {f.name: f.default for f in fields(self)}
        plain = {k: v.value if isinstance(v, enum.Enum) else v for k, v in asdict(self).items()}
        return {k: v for k, v in plain.items() if k == "kind" or v != defaults[k]}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Reason:
        """Raises ValueError/TypeError on an unknown kind or field (the summary reader names the file)."""
        return cls(**{**raw, "kind": Kind(str(raw.get("kind")))})
