"""Validate a gate profile against what the built binary actually knows.

A feature gate the component does not know makes it refuse to start; a gate locked to
its default makes it warn and ignore the value. Both are caught here, before any process
starts, with one line that names the gate and the minor.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.versions import GateProfile, Minor

# The feature gates a DRA report lists (name prefixes): DRA's own and the gang's.
DRA_GATES = ("DRA", "DynamicResourceAllocation", "GangScheduling", "GenericWorkload")


def dra_gates(gates: dict[str, bool]) -> dict[str, bool]:
    """The DRA gates among `gates` (the API server's kubernetes_feature_enabled), sorted."""
    return {g: on for g, on in sorted(gates.items()) if g.startswith(DRA_GATES)}


@dataclass(frozen=True)
class KnownGate:
    name: str
    default: bool
    pre_release: str
    locked: bool


def known_gates(binary: Path) -> dict[str, KnownGate]:
    cache = binary.with_name("featuregates.json")
    if not cache.exists():
        out = subprocess.run([str(binary), "featuregates"], capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise HarnessError(f"{binary} featuregates failed: {out.stderr.strip()[-500:]}")
        cache.write_text(out.stdout)
    raw = json.loads(cache.read_text())
    return {g["name"]: KnownGate(g["name"], g["default"], g["preRelease"], g["lockedToDefault"]) for g in raw}


def validate_profile(minor: Minor, profile: GateProfile, known: dict[str, KnownGate]) -> None:
    unknown = sorted(set(profile.gates) - set(known))
    if unknown:
        raise HarnessError(
            f"gate profile {profile.name!r} of {minor.name} names gates {minor.kubernetes} does not know: "
            f"{', '.join(unknown)}"
        )
    locked = sorted(
        name for name, value in profile.gates.items() if known[name].locked and known[name].default != value
    )
    if locked:
        raise HarnessError(
            f"gate profile {profile.name!r} of {minor.name} sets gates locked to their default: "
            f"{', '.join(locked)}"
        )


def enabled_gates(profile: GateProfile, known: dict[str, KnownGate]) -> dict[str, bool]:
    """Every gate's effective value in this cell: release defaults overlaid by the profile."""
    return {name: profile.gates.get(name, gate.default) for name, gate in known.items()}
