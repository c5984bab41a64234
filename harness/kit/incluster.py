"""Credentials inside a pod: with no kubeconfig given, none in $KUBECONFIG and no
~/.kube/config, but KUBERNETES_SERVICE_HOST set and the service account's token mounted,
the harness talks to the API server as that service account.

It does so through a kubeconfig equivalent to the client's in-cluster config (server from
KUBERNETES_SERVICE_HOST/PORT, the mounted ca.crt, `tokenFile` naming the mounted token), so
that everything taking a kubeconfig path -- Kube.from_kubeconfig, the pytest child qualify
starts with --kubeconfig -- works unchanged. The file holds paths, no secret.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from fake_driver.api.keydir import private_dir

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# Where the token, ca.crt and namespace are, when not the kubelet's mount (tests use it).
SERVICE_ACCOUNT_DIR_ENV = "DRA_HARNESS_SERVICE_ACCOUNT_DIR"


@dataclass(frozen=True)
class InCluster:
    """What the pod's service account mount and environment give."""

    server: str
    token_file: Path
    ca_file: Path
    namespace: str

    def kubeconfig(self) -> dict[str, object]:
        cluster: dict[str, object] = {"server": self.server}
        if self.ca_file.is_file():
            cluster["certificate-authority"] = str(self.ca_file)
        context = {"cluster": "in-cluster", "user": "service-account", "namespace": self.namespace}
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "in-cluster", "cluster": cluster}],
            "users": [{"name": "service-account", "user": {"tokenFile": str(self.token_file)}}],
            "contexts": [{"name": "in-cluster", "context": context}],
            "current-context": "in-cluster",
        }


def in_cluster(env: Mapping[str, str], sa_dir: Path | None = None) -> InCluster | None:
    """The pod's in-cluster credentials, or None when this is not a pod with a token mount."""
    host = env.get("KUBERNETES_SERVICE_HOST", "")
    port = env.get("KUBERNETES_SERVICE_PORT", "") or "443"
    directory = sa_dir or Path(env.get(SERVICE_ACCOUNT_DIR_ENV) or SERVICE_ACCOUNT_DIR)
    token = directory / "token"
    if not host or not token.is_file():
        return None
    host = f"[{host}]" if ":" in host else host  # an IPv6 service address
    namespace_file = directory / "namespace"
    namespace = namespace_file.read_text().strip() if namespace_file.is_file() else "default"
    return InCluster(f"https://{host}:{port}", token, directory / "ca.crt", namespace)


def choose_credentials(given: str | None, env: Mapping[str, str], home: Path) -> Path | InCluster:
    """--kubeconfig, else $KUBECONFIG, else ~/.kube/config if it is there, else the pod's
    service account; else ~/.kube/config (whose absence the caller reports as one line)."""
    if given:
        return Path(given)
    if env.get("KUBECONFIG"):
        return Path(env["KUBECONFIG"])
    default = home / ".kube" / "config"
    if default.exists():
        return default
    return in_cluster(env) or default


def write_kubeconfig(creds: InCluster, directory: Path) -> Path:
    path = directory / "in-cluster.kubeconfig"
    path.write_text(yaml.safe_dump(creds.kubeconfig(), sort_keys=False))
    path.chmod(0o600)
    return path


def resolve_kubeconfig(given: str | None) -> tuple[Path, bool]:
    """(a kubeconfig path, whether it is the pod's service account) for this process; an
    in-cluster one is written to the process's private directory (removed at exit)."""
    creds = choose_credentials(given, os.environ, Path.home())
    if isinstance(creds, InCluster):
        return write_kubeconfig(creds, Path(private_dir())), True
    return creds, False
