"""A kwok controller beside a kind cluster, on the host: it keeps the suites' simulated GPU
nodes (harness.clusters.nodes) Ready and runs their pods, as the local provider's does, so
suites that pin pods to nodes of their own run on kind too. The kind workers, with their real
kubelets and the in-cluster driver, are not its nodes (it manages only annotated ones)."""

from __future__ import annotations

from pathlib import Path

from harness.clusters.host import health
from harness.clusters.host.ports import free_port
from harness.clusters.host.processes import ManagedProcess
from harness.clusters.kwok import kwok_config, kwok_flags
from harness.controlplane.build import ensure_kwok
from harness.core.versions import Matrix
from harness.kit.waits import TIMEOUTS, wait_for


class KwokBesideKind:
    def __init__(self, matrix: Matrix, kubeconfig: Path, run_dir: Path) -> None:
        self.matrix = matrix
        self.kubeconfig = kubeconfig
        self.run_dir = run_dir
        self._proc: ManagedProcess | None = None

    def start(self) -> None:
        binary = ensure_kwok(self.matrix)
        port = free_port()
        config = kwok_config(self.matrix, self.run_dir / "kwok.yaml")
        argv = [str(binary), *kwok_flags(self.kubeconfig, config, port)]
        proc = ManagedProcess("kwok", argv, self.run_dir / "kwok.log")
        self._proc = proc
        proc.start()

        def observe() -> tuple[int, str]:
            proc.check_running()
            return health.get(f"http://127.0.0.1:{port}/healthz")

        wait_for(observe, lambda r: r[0] == 200, timeout=TIMEOUTS.component_ready, describe="kwok healthy")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None
