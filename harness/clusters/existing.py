"""The `existing` provider: any cluster reachable through a kubeconfig (vendor driver
qualification, the readiness scan). Nothing is started or stopped; the cell is read from
the server (version, and feature gates from the `kubernetes_feature_enabled` metric)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.clusters.base import Cell
from harness.kit.kube import API_ERRORS, Kube

_FEATURE = re.compile(r'^kubernetes_feature_enabled\{name="([^"]+)",stage="[^"]*"\} (\d)', re.MULTILINE)


class ExistingCluster:
    provider = "existing"

    def __init__(self, kubeconfig: Path | str, context: str | None = None):
        self._kubeconfig = Path(kubeconfig).expanduser()
        self.context = context
        self._cell: Cell | None = None

    @property
    def kubeconfig(self) -> Path:
        return self._kubeconfig

    def start(self) -> ExistingCluster:
        kube = Kube.from_kubeconfig(self._kubeconfig, self.context)
        try:
            info = kube.version()
            gates = self._server_gates(kube)
        except API_ERRORS as err:  # silent, unreachable or refusing: the cluster is not usable
            raise kube.failure(err) from None
        finally:
            kube.close()
        minor = f"{info.major}.{info.minor}"
        self._cell = Cell(
            minor, profile="server", provider=self.provider, kubernetes=info.git_version, gates=gates
        )
        return self

    @staticmethod
    def _server_gates(kube: Kube) -> dict[str, bool]:
        status, text = kube.raw_get("/metrics")
        if status != 200:  # metrics may be forbidden to this user: gates stay unknown
            return {}
        return parse_feature_metrics(text)

    def stop(self) -> None:
        """Nothing to stop: the cluster is not ours."""

    def cell(self) -> Cell:
        assert self._cell is not None, "call start() first"
        return self._cell


def parse_feature_metrics(text: str) -> dict[str, bool]:
    """Feature gates from the apiserver's `kubernetes_feature_enabled` metric."""
    return {name: value == "1" for name, value in _FEATURE.findall(text)}
