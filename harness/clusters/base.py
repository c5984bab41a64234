"""The cluster provider protocol: every provider (local, kind, existing) gives the same
surface to fixtures and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from harness.core.cells import Cell

__all__ = ["Cell", "Cluster"]  # Cell: what a provider's cell() returns


class Cluster(Protocol):
    provider: str

    @property
    def kubeconfig(self) -> Path: ...

    def start(self) -> Cluster: ...

    def stop(self) -> None: ...

    def cell(self) -> Cell: ...
