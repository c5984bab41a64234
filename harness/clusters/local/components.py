"""The local cluster's components as a table: each one's name, command-line flags, health
probe and port, in start order. What a benchmark tunes (Tuning) comes from the caller."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import yaml

from harness.clusters.host import health
from harness.clusters.host.pki import ClusterPKI
from harness.clusters.host.ports import Ports
from harness.clusters.kwok import kwok_config, kwok_flags
from harness.clusters.realnodes.pools import RealPoolSpec, real_node_apiserver_flags
from harness.core.versions import GateProfile, Matrix

SERVICE_CIDR = "10.0.0.0/24"
Probe = Callable[[], tuple[int, str]]


@dataclass(frozen=True)
class Tuning:
    """What a benchmark changes, as upstream scheduler_perf does. `client_qps`: QPS and burst
    of the scheduler's and controller-manager's API clients (None keeps the upstream defaults,
    scheduler 50/100, controller-manager 20/30), so client-side rate limiters do not hide the
    cost being measured. `simulate_pods=False`: kwok keeps the nodes alive but runs no pods,
    so bound pods cost only the scheduler's writes. `component_flags`: extra flags per
    component, appended last so they win. `scheduler_plugin_args`: plugin name -> args of the
    default profile (e.g. DynamicResources bindingTimeout), which need a config file too."""

    client_qps: int | None = None
    simulate_pods: bool = True
    component_flags: Mapping[str, Sequence[str]] = field(default_factory=dict)
    scheduler_plugin_args: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


class ClusterView(Protocol):
    """What a component's flags and probe read of the cluster that runs it. LocalCluster is
    one; the table names this, not LocalCluster, so it does not import the module importing it."""

    @property
    def matrix(self) -> Matrix: ...
    @property
    def profile(self) -> GateProfile: ...
    @property
    def tuning(self) -> Tuning: ...
    @property
    def run_dir(self) -> Path: ...
    @property
    def ports(self) -> Ports: ...
    @property
    def pki(self) -> ClusterPKI: ...
    @property
    def real_pools(self) -> Sequence[RealPoolSpec]: ...
    @property
    def kubeconfig(self) -> Path: ...
    @property
    def server(self) -> str: ...
    @property
    def etcd_url(self) -> str: ...
    def etcd_tls(self) -> ssl.SSLContext: ...


@dataclass(frozen=True)
class Component:
    name: str
    flags: Callable[[ClusterView], list[str]]  # after the binary (and the multi-call binary's name)
    probe: Callable[[ClusterView], Probe]  # 200 when ready
    port: str  # the Ports field it listens on (picked again when taken)


def _gate_flags(c: ClusterView) -> list[str]:
    gates = c.profile.feature_gates_flag()
    return [f"--feature-gates={gates}"] if gates else []


def _etcd_flags(c: ClusterView) -> list[str]:
    p, pki = c.ports, c.pki
    client, peer = f"https://127.0.0.1:{p.etcd_client}", f"https://127.0.0.1:{p.etcd_peer}"
    return [
        "--name=default",
        f"--data-dir={c.run_dir / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=default={peer}",
        # TLS and client certificates of etcd's own CA: no other local user reads the cluster.
        f"--cert-file={pki.etcd_server.cert}",
        f"--key-file={pki.etcd_server.key}",
        "--client-cert-auth=true",
        f"--trusted-ca-file={pki.etcd_ca.cert}",
        f"--peer-cert-file={pki.etcd_peer.cert}",
        f"--peer-key-file={pki.etcd_peer.key}",
        "--peer-client-cert-auth=true",
        f"--peer-trusted-ca-file={pki.etcd_ca.cert}",
        "--unsafe-no-fsync=true",  # test data: durability buys nothing here
        "--log-level=warn",
    ]


def _apiserver_flags(c: ClusterView) -> list[str]:
    p, pki = c.ports, c.pki
    runtime = c.profile.runtime_config_flag()
    return [
        f"--etcd-servers=https://127.0.0.1:{p.etcd_client}",
        f"--etcd-cafile={pki.etcd_ca.cert}",
        f"--etcd-certfile={pki.etcd_client.cert}",
        f"--etcd-keyfile={pki.etcd_client.key}",
        "--anonymous-auth=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={p.apiserver}",
        f"--tls-cert-file={pki.apiserver.cert}",
        f"--tls-private-key-file={pki.apiserver.key}",
        f"--client-ca-file={pki.ca.cert}",
        f"--service-account-key-file={pki.service_account_pub}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        "--endpoint-reconciler-type=none",  # there is no real network behind 10.0.0.1
        f"--cert-dir={c.run_dir / 'apiserver-certs'}",
        *([f"--runtime-config={runtime}"] if runtime else []),
        *(real_node_apiserver_flags(pki) if c.real_pools else []),
        *_gate_flags(c),
    ]


def _client_qps(c: ClusterView) -> list[str]:
    qps = c.tuning.client_qps
    return [] if qps is None else [f"--kube-api-qps={qps}", f"--kube-api-burst={qps}"]


def _controller_manager_flags(c: ClusterView) -> list[str]:
    pki, kc = c.pki, c.run_dir / "controller-manager.kubeconfig"
    return [
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        f"--secure-port={c.ports.controller_manager}",
        f"--service-account-private-key-file={pki.service_account_key}",
        f"--root-ca-file={pki.ca.cert}",
        "--use-service-account-credentials=true",
        f"--cluster-signing-cert-file={pki.ca.cert}",
        f"--cluster-signing-key-file={pki.ca.key}",
        f"--cert-dir={c.run_dir / 'controller-manager-certs'}",
        *_client_qps(c),
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        *_gate_flags(c),
    ]


def _scheduler_flags(c: ClusterView) -> list[str]:
    """The scheduler's client QPS has no flag: with a Tuning's QPS it gets a config file
    (which then holds the kubeconfig and leader election too)."""
    kc, qps = c.run_dir / "scheduler.kubeconfig", c.tuning.client_qps
    plugin_args = c.tuning.scheduler_plugin_args
    connection: list[str] = [f"--kubeconfig={kc}"]
    election = ["--leader-elect=false"]
    if qps is not None or plugin_args:
        config = c.run_dir / "scheduler-config.yaml"
        client: dict[str, object] = {"kubeconfig": str(kc)}
        if qps is not None:
            client |= {"qps": qps, "burst": qps}
        body: dict[str, object] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": client,
            "leaderElection": {"leaderElect": False},
        }
        if plugin_args:
            args = [{"name": name, "args": dict(a)} for name, a in plugin_args.items()]
            body["profiles"] = [{"schedulerName": "default-scheduler", "pluginConfig": args}]
        config.write_text(yaml.safe_dump(body))
        connection, election = [], [f"--config={config}"]
    return [
        *connection,
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        f"--secure-port={c.ports.scheduler}",
        f"--cert-dir={c.run_dir / 'scheduler-certs'}",
        "--bind-address=127.0.0.1",
        *_gate_flags(c),
        *election,
    ]


def _etcd_probe(c: ClusterView) -> Probe:
    etcd = c.etcd_tls()
    return lambda: health.get(f"{c.etcd_url}/health", etcd)


def _apiserver_probe(c: ClusterView) -> Probe:
    ctx = health.tls_context(c.pki.ca.cert, c.pki.admin)
    return lambda: health.get(f"{c.server}/readyz", ctx)


def _https_probe(port: str, path: str) -> Callable[[ClusterView], Probe]:
    def probe(c: ClusterView) -> Probe:
        ctx = health.tls_context(None, None)  # self-signed serving certificates
        return lambda: health.get(f"https://127.0.0.1:{getattr(c.ports, port)}/{path}", ctx)

    return probe


def _kwok_flags(c: ClusterView) -> list[str]:
    config = kwok_config(c.matrix, c.run_dir / "kwok.yaml", pods=c.tuning.simulate_pods)
    return kwok_flags(c.kubeconfig, config, c.ports.kwok)


def _kwok_probe(c: ClusterView) -> Probe:
    return lambda: health.get(f"http://127.0.0.1:{c.ports.kwok}/healthz")


COMPONENTS = (
    Component("etcd", _etcd_flags, _etcd_probe, "etcd_client"),
    Component("kube-apiserver", _apiserver_flags, _apiserver_probe, "apiserver"),
    Component(
        "kube-controller-manager",
        _controller_manager_flags,
        _https_probe("controller_manager", "healthz"),
        "controller_manager",
    ),
    Component("kube-scheduler", _scheduler_flags, _https_probe("scheduler", "readyz"), "scheduler"),
    Component("kwok", _kwok_flags, _kwok_probe, "kwok"),  # its own binary, not the multi-call one
)
BY_NAME = {c.name: c for c in COMPONENTS}
