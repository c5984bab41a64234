"""A cluster another process of the same run started and will stop: the view an xdist worker
gets of the session cluster its owner worker started (fixtures.parallel.shared). Same provider name,
kubeconfig and cell as the owner's; start and stop do nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from harness.core.cells import Cell


class AttachedCluster:
    def __init__(self, provider: str, kubeconfig: Path, cell: Cell) -> None:
        self.provider = provider
        self._kubeconfig = kubeconfig
        self._cell = cell

    @property
    def kubeconfig(self) -> Path:
        return self._kubeconfig

    def start(self) -> AttachedCluster:
        return self

    def stop(self) -> None:
        """Nothing: the owner stops the cluster once every worker has detached."""

    def cell(self) -> Cell:
        return self._cell

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "kubeconfig": str(self._kubeconfig),
            "cell": dataclasses.asdict(self._cell),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttachedCluster:
        return cls(data["provider"], Path(data["kubeconfig"]), Cell(**data["cell"]))
