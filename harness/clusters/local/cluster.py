"""LocalCluster: the real Kubernetes control plane as local processes on 127.0.0.1.

etcd -> kube-apiserver (/readyz) -> kube-controller-manager, kube-scheduler and the kwok
node simulator, all from binaries built from Go modules for the chosen minor, with TLS,
RBAC, the cell's feature gates and runtime-config. Usable without pytest:

    with LocalCluster("1.37", "dra-all") as cluster:
        print(cluster.kubeconfig)
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypedDict

from harness.clusters.base import Cell
from harness.clusters.host import health
from harness.clusters.host.kubeconfig import write_kubeconfig
from harness.clusters.host.pki import ClusterPKI, generate_pki
from harness.clusters.host.ports import Ports, free_port
from harness.clusters.host.processes import ManagedProcess, install_signal_teardown
from harness.clusters.host.rundirs import runs_root
from harness.clusters.local.components import BY_NAME, Tuning
from harness.clusters.local.kubelets import DEFAULT_KUBELET_MODE
from harness.clusters.local.upgrade import upgrade
from harness.clusters.realnodes.pools import RealNodes, RealPoolSpec, real_node_parts
from harness.controlplane.build import ensure_controlplane, ensure_kwok
from harness.controlplane.gates import KnownGate, enabled_gates, known_gates, validate_profile
from harness.core.errors import ComponentFailed
from harness.core.versions import GateProfile, Matrix, Minor, load_matrix
from harness.kit.waits import TIMEOUTS, wait_for

_PORT_RETRIES = 3


class LocalCluster:
    """One local cluster for one matrix cell (minor x gate profile)."""

    provider = "local"

    def __init__(
        self,
        minor: str | None = None,
        profile: str | None = None,
        *,
        run_dir: Path | None = None,
        keep_run_dir: bool = False,
        matrix: Matrix | None = None,
        tuning: Tuning | None = None,
        real_pools: Sequence[RealPoolSpec] = (),
    ):
        """`tuning`: what a benchmark changes (harness.clusters.local.components.Tuning).
        `real_pools`: nodes with a real kubelet and containerd (harness.clusters.realnodes.pools)."""
        self.matrix = matrix or load_matrix()
        self.tuning = tuning or Tuning()
        self.minor: Minor = self.matrix.minor(minor or self.matrix.default_minor)
        self.profile: GateProfile = self.minor.profile(profile or self.matrix.default_profile)
        self._own_run_dir = run_dir is None
        self.run_dir = run_dir or _temporary_run_dir(self.minor.name)
        self.keep_run_dir = keep_run_dir
        self.ports = Ports()
        self.components: dict[str, ManagedProcess] = {}
        self.known_gates: dict[str, KnownGate] = {}
        self._pki: ClusterPKI | None = None
        self._binary: Path | None = None
        self._kwok: Path | None = None
        self.real_pools = list(real_pools)
        self.real: RealNodes | None = None

    # -- public surface -------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / "admin.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def etcd_url(self) -> str:
        return f"https://127.0.0.1:{self.ports.etcd_client}"

    def etcd_tls(self) -> ssl.SSLContext:
        """etcd answers only TLS clients holding a certificate of its own CA."""
        return health.tls_context(self.pki.etcd_ca.cert, self.pki.etcd_client)

    @property
    def pki(self) -> ClusterPKI:
        assert self._pki is not None, "cluster not started"
        return self._pki

    def cell(self) -> Cell:
        return Cell(
            provider=self.provider,
            minor=self.minor.name,
            kubernetes=self.minor.kubernetes,
            profile=self.profile.name,
            gates=enabled_gates(self.profile, self.known_gates),
        )

    def log_path(self, component: str) -> Path:
        return self.run_dir / "logs" / f"{component}.log"

    def start(self) -> LocalCluster:
        install_signal_teardown()
        try:  # a refusal before anything starts still removes the run dir this cluster made
            self._binary = ensure_controlplane(self.minor)
            self._kwok = ensure_kwok(self.matrix)
            self.known_gates = known_gates(self._binary)
            validate_profile(self.minor, self.profile, self.known_gates)
            if self.real_pools:  # before anything starts: a missing part is one line
                parts = real_node_parts(self.matrix, self.minor, self.real_pools)
                # Each kubelet gets its own minor's gate profile: an older one refuses newer gates.
                gates = {m: self.matrix.minor(m).profile(self.profile.name).gates for m in parts}
                self.real = RealNodes(self.real_pools, parts, self.run_dir, gates)
            self._start_all()
        except BaseException:
            self.stop()
            raise
        self.write_state()
        return self

    def stop(self) -> None:
        if self.real is not None:  # kubelets first: they talk to the API server until they go
            self.real.stop()
        for name in reversed(list(self.components)):
            self.components[name].stop()
        self.components.clear()
        if self.keep_run_dir:
            return
        if self._own_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        else:  # a caller's run dir keeps the logs and PKI for diagnostics; etcd data is bulk
            shutil.rmtree(self.run_dir / "etcd", ignore_errors=True)

    def restart(self, component: str) -> None:
        """Stop one component and start it again on the same port (fault injection)."""
        self.components[component].stop()
        self._start_component(component)

    @property
    def binary(self) -> Path:
        assert self._binary is not None, "cluster not started"
        return self._binary

    def use_control_plane(
        self, minor: Minor, profile: GateProfile, binary: Path, gates: dict[str, KnownGate]
    ) -> None:
        """What components started from now on run (harness.clusters.local.upgrade switches it)."""
        self.minor, self.profile, self._binary, self.known_gates = minor, profile, binary, gates

    def upgrade(self, to_minor: str, kubelets: str = DEFAULT_KUBELET_MODE) -> float:
        """Replace the control plane with `to_minor`, one minor up or down, in place, then the
        real nodes' kubelets of the old minor (`kubelets`: "drain", "in-place" or "keep";
        harness.clusters.local.upgrade); returns the step's seconds."""
        return upgrade(self, to_minor, kubelets)

    def stop_component(self, component: str) -> None:
        self.components[component].stop()

    def start_component(self, component: str) -> None:
        self._start_component(component)

    def pause_component(self, component: str) -> None:
        """SIGSTOP the component's process group: it keeps its sockets but answers nothing
        (a hung etcd or apiserver), until resume_component. Unlike restart("etcd"), which
        starts etcd on an empty data dir, the data survives."""
        os.killpg(self.components[component].pid, signal.SIGSTOP)

    def resume_component(self, component: str) -> None:
        os.killpg(self.components[component].pid, signal.SIGCONT)

    def compact_etcd(self) -> int:
        """Compact etcd's history up to now (what the API server does every 5 minutes) and
        defragment, through etcd's JSON gateway, so the pages freed count as free at once;
        returns the revision. Benchmarks call it between repetitions."""
        base, tls = f"{self.etcd_url}/v3", self.etcd_tls()

        def post(path: str, body: dict[str, object]) -> dict[str, Any]:
            request = urllib.request.Request(
                f"{base}/{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30, context=tls) as resp:
                answer: dict[str, Any] = json.loads(resp.read())
                return answer

        revision = int(post("kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"])
        try:
            post("kv/compaction", {"revision": revision, "physical": True})
        except urllib.error.HTTPError as err:  # nothing written since the last compaction
            if "compacted" not in err.read().decode("utf-8", "replace"):
                raise
        post("maintenance/defragment", {})
        return revision

    def check_running(self) -> None:
        for proc in self.components.values():
            proc.check_running()

    def pids(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.components.items() if proc.running()}

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- start-up -------------------------------------------------------------------

    def _start_all(self) -> None:
        started = time.monotonic()
        pki = generate_pki(self.run_dir / "pki")
        self._pki = pki
        shutil.rmtree(self.run_dir / "etcd", ignore_errors=True)  # a new cluster; restart() keeps the data
        self._start_component("etcd")
        self._start_component("kube-apiserver")
        self._write_kubeconfigs(pki)  # after: a taken port moves the API server (_start_component)
        for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
            self._launch(name)  # side by side: each waits only for the API server
        for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
            self._start_component(name, launched=True)
        if self.real is not None:
            self.real.start(self.server, pki, self.kubeconfig, self.minor.name)
        self.start_seconds = time.monotonic() - started

    def _write_kubeconfigs(self, pki: ClusterPKI) -> None:
        write_kubeconfig(self.kubeconfig, self.server, pki.ca.cert, "admin", pki.admin)
        write_kubeconfig(
            self.run_dir / "controller-manager.kubeconfig",
            self.server,
            pki.ca.cert,
            "system:kube-controller-manager",
            pki.controller_manager,
        )
        write_kubeconfig(
            self.run_dir / "scheduler.kubeconfig",
            self.server,
            pki.ca.cert,
            "system:kube-scheduler",
            pki.scheduler,
        )

    def _start_component(self, name: str, launched: bool = False) -> None:
        """Launch `name` (unless already launched) and wait for it; a port taken meanwhile by
        another process gets a new port and a new launch."""
        for attempt in range(_PORT_RETRIES):
            if not (launched and attempt == 0):
                self._launch(name)
            try:
                self._wait_ready(name)
                return
            except ComponentFailed as err:
                if not _port_taken(err) or attempt == _PORT_RETRIES - 1:
                    raise
                self._repick_port(name)

    def _repick_port(self, name: str) -> None:
        setattr(self.ports, BY_NAME[name].port, free_port())
        if name == "etcd":
            self.ports.etcd_peer = free_port()

    def _launch(self, name: str) -> None:
        assert self._binary is not None, "start() sets the binary"
        assert self._kwok is not None, "start() sets kwok"
        binary = [str(self._kwok)] if name == "kwok" else [str(self._binary), name]
        argv = [*binary, *BY_NAME[name].flags(self), *self.tuning.component_flags.get(name, [])]
        proc = ManagedProcess(name, argv, self.log_path(name))
        self.components[name] = proc
        proc.start()

    def _wait_ready(self, name: str) -> None:
        proc = self.components[name]
        probe = BY_NAME[name].probe(self)

        def observe() -> tuple[int, str]:
            proc.check_running()
            return probe()

        wait_for(
            observe,
            lambda r: r[0] == 200,
            timeout=TIMEOUTS.component_ready,
            describe=f"{name} healthy",
            interval=0.1,
        )

    def write_state(self) -> None:
        """state.json: what `dra-harness cluster down` and the teardown test need."""
        state: ClusterState = {
            "minor": self.minor.name,
            "kubernetes": self.minor.kubernetes,
            "profile": self.profile.name,
            "kubeconfig": str(self.kubeconfig),
            "server": self.server,
            "pids": self.pids(),
            "ports": vars(self.ports),
            "run_dir": str(self.run_dir),
        }
        write_state(self.run_dir, state)


def _port_taken(err: ComponentFailed) -> bool:
    """Its port was taken between free_port() and its bind (another process on the host)."""
    return "address already in use" in str(err)


class ClusterState(TypedDict):
    """state.json in a local cluster's run directory."""

    minor: str
    kubernetes: str  # "v1.37.2"
    profile: str
    kubeconfig: str
    server: str
    pids: dict[str, int]  # per running component
    ports: dict[str, int]  # Ports' fields
    run_dir: str


def _temporary_run_dir(minor: str) -> Path:
    """Under the harness's runs root, not /tmp: an owner killed outright (SIGKILL) cannot remove
    it, and prune_old_runs does once its PKI has expired."""
    root = runs_root()
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"dra-harness-{minor}-", dir=root))


def write_state(run_dir: Path, state: ClusterState) -> None:
    (run_dir / "state.json").write_text(json.dumps(state, indent=2))


def read_state(run_dir: Path) -> ClusterState:
    state: ClusterState = json.loads((run_dir / "state.json").read_text())
    return state
