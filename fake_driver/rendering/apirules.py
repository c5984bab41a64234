"""What 1.38 newly rejects in a ResourceSlice or a claim's spec, as pure checks (no API).

Read in k8s.io/kubernetes pkg/apis/resource/validation/validation.go @v1.38.0-beta.0 against
the same file @v1.37.2, and in k8s.io/dynamic-resource-allocation resourceslice/validation.go
@v0.38.0-beta.0 against @v0.37.2. Three rules are the API server's, one is the slice-publishing
helper's (the API server accepts that shape: line 104 of the helper's file says so). The fake
driver refuses to render a violation for a server of the rule's minor (fake_driver.rendering.slices);
`dra-harness scan --target` reports them on live objects (harness.scan.shapes).

The API server ratchets: a stored slice whose device list is unchanged stays valid on update
(validation.go:924-946 @v1.38.0-beta.0), a claim's spec is immutable and not validated again
(:126-133); a create is always validated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fake_driver.api.apilimits import Minor

Obj = dict[str, Any]

_VALIDATION = "k8s.io/kubernetes pkg/apis/resource/validation/validation.go"
_HELPER = "k8s.io/dynamic-resource-allocation resourceslice/validation.go"


@dataclass(frozen=True)
class Rule:
    id: str
    since: Minor
    enforced_by: str  # "kube-apiserver" or the helper
    message: str  # upstream's text (a format with {id} for the helper's)
    source: str


SLASHES = Rule(
    "qualified-name-slashes",
    (1, 38),
    "kube-apiserver",
    "must not contain more than one slash",
    f"{_VALIDATION}:1701-1702 @v1.38.0-beta.0 (validateQualifiedName; no such case @v1.37.2)",
)
NODE_SELECTOR_TERMS = Rule(
    "device-node-selector-terms",
    (1, 38),
    "kube-apiserver",
    "must have exactly one node selector term",
    f"{_VALIDATION}:1173-1176 @v1.38.0-beta.0 (validateDeviceNodeSelection; absent @v1.37.2)",
)
VERSION_DIGITS = Rule(
    "version-digits",
    (1, 38),
    "kube-apiserver",
    "must be a string compatible with semver.org spec 2.0.0, with at most 18 digits in numbers",
    f"{_VALIDATION}:1319,1325,1412 @v1.38.0-beta.0 (numericIdentifier `(0|[1-9]\\d{{0,17}})`; "
    "unbounded @v1.37.2)",
)
DRIVER_PREFIX = Rule(
    "driver-prefixed-name",
    (1, 38),
    "resourceslice helper",
    'use unqualified "{id}", the driver name is added implicitly',
    f"{_HELPER}:69-80,109-113 @v0.38.0-beta.0 (validateUnqualifiedName, on unless "
    "Options.ValidateQualifiedNames is false; absent @v0.37.2)",
)
RULES = (SLASHES, NODE_SELECTOR_TERMS, VERSION_DIGITS, DRIVER_PREFIX)
SERVER_RULES = tuple(r for r in RULES if r.enforced_by == "kube-apiserver")


@dataclass(frozen=True)
class Violation:
    rule: Rule
    field: str  # the API server's path: spec.devices[0].attributes for a bad name in that map
    value: str

    @property
    def message(self) -> str:
        return self.rule.message.format(id=self.value.split("/", 1)[-1])

    def line(self) -> str:
        return f"{self.field} {self.value!r}: {self.message} ({self.rule.enforced_by}, {self.rule.source})"


def _numbers_too_long(version: str) -> bool:
    """A numeric identifier of more than 18 digits in the version core or the pre-release (build
    metadata is not parsed as numbers)."""
    core_pre = version.split("+", 1)[0]
    core, _, pre = core_pre.partition("-")
    idents = core.split(".") + (pre.split(".") if pre else [])
    return any(i.isdigit() and len(i) > 18 for i in idents)


def _names(mapping: Mapping[str, Any] | None) -> Iterable[str]:
    return sorted(mapping or {})


def slice_violations(spec: Obj, minor: Minor, *, helper: bool = True) -> list[Violation]:
    """What a server of `minor` (and, with `helper`, a driver on the helper of that minor)
    rejects in a ResourceSlice spec."""
    out: list[Violation] = []
    driver = str(spec.get("driver", ""))
    per_device = bool(spec.get("perDeviceNodeSelection"))
    for i, d in enumerate(spec.get("devices") or ()):
        at = f"spec.devices[{i}]"
        for kind in ("attributes", "capacity"):
            for name in _names(d.get(kind)):
                # A map key's error names the map, as the API server's do (validateMap).
                if name.count("/") > 1:
                    out.append(Violation(SLASHES, f"{at}.{kind}", name))
                elif helper and name.split("/", 1)[0] == driver and "/" in name:
                    out.append(Violation(DRIVER_PREFIX, f"{at}.{kind}", name))
        for name in _names(d.get("attributes")):
            v = (d["attributes"][name] or {}).get("version")
            if isinstance(v, str) and _numbers_too_long(v):
                out.append(Violation(VERSION_DIGITS, f"{at}.attributes[{name}].version", v))
        terms = ((d.get("nodeSelector") or {}).get("nodeSelectorTerms")) or []
        if per_device and len(terms) > 1:
            out.append(
                Violation(NODE_SELECTOR_TERMS, f"{at}.nodeSelector.nodeSelectorTerms", str(len(terms)))
            )
    return [v for v in out if v.rule.since <= minor]


def _capacity_names(request: Obj) -> Iterable[str]:
    return _names((request.get("capacity") or {}).get("requests"))


def claim_violations(spec: Obj, minor: Minor, where: str = "spec") -> list[Violation]:
    """What a server of `minor` rejects in a ResourceClaim spec (`where`: its path, e.g.
    spec.spec in a ResourceClaimTemplate): names with more than one slash in constraints
    (validation.go:565-568) and capacity requests (:384-402, not validated at all @v1.37.2)."""
    out: list[Violation] = []
    devices = spec.get("devices") or {}
    for i, c in enumerate(devices.get("constraints") or ()):
        for key in ("matchAttribute", "distinctAttribute"):
            name = c.get(key)
            if isinstance(name, str) and name.count("/") > 1:
                out.append(Violation(SLASHES, f"{where}.devices.constraints[{i}].{key}", name))
    for i, r in enumerate(devices.get("requests") or ()):
        at = f"{where}.devices.requests[{i}]"
        subs = [(f"{at}.exactly", r.get("exactly") or {})]
        subs += [(f"{at}.firstAvailable[{j}]", s) for j, s in enumerate(r.get("firstAvailable") or ())]
        for path, sub in subs:
            for name in _capacity_names(sub):
                if name.count("/") > 1:
                    out.append(Violation(SLASHES, f"{path}.capacity.requests", name))
    return [v for v in out if v.rule.since <= minor]
