"""The cluster provider protocol: every provider (local, kind, existing) gives the same
surface to fixtures and the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Cell:
    """What a run is testing: the matrix cell as the cluster actually has it."""

    provider: str
    minor: str  # "1.37"
    kubernetes: str  # "v1.37.2"
    profile: str  # gate profile name, or "server" for a cluster we did not configure
    gates: dict[str, bool] = field(default_factory=dict)  # effective value of every known gate

    @property
    def number(self) -> tuple[int, int]:
        major, minor = self.minor.split(".")
        return int(major), int(minor)

    def gate(self, name: str) -> bool | None:
        """True/False, or None when the cluster does not know the gate at all."""
        return self.gates.get(name)


class Cluster(Protocol):
    provider: str

    @property
    def kubeconfig(self) -> Path: ...

    def start(self) -> Cluster: ...

    def stop(self) -> None: ...

    def cell(self) -> Cell: ...
