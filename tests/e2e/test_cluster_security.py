"""The local cluster's doors are locked: etcd answers only TLS clients holding a
certificate of etcd's own CA, the API server refuses anonymous requests, every private
key is owner-only, and nothing secret is written under reports/."""

from __future__ import annotations

import re
import ssl
import stat
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters.host import health
from harness.clusters.local.cluster import LocalCluster
from harness.core.versions import REPO_ROOT

# TLS 1.3 rejects a client certificate after the handshake: the client sees etcd's alert, or,
# when the alert loses the race with the close, a reset or an EOF. Never an HTTP status.
REFUSED_TLS = re.compile(r"ALERT_UNKNOWN_CA|ALERT_CERTIFICATE_REQUIRED|Connection reset|EOF", re.IGNORECASE)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(run_dir=tmp_path_factory.mktemp("secure")) as c:
        yield c


def _status(url: str, ctx: ssl.SSLContext | None) -> str:
    """The HTTP status, or the kind of refusal (TLS alert, reset) as a short string."""
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
            return str(resp.status)
    except urllib.error.HTTPError as err:
        return str(err.code)
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        return f"{type(reason).__name__}: {reason}"


def test_etcd_refuses_plain_http(cluster: LocalCluster) -> None:
    url = f"http://127.0.0.1:{cluster.ports.etcd_client}/health"
    assert _status(url, None).startswith(("RemoteDisconnected", "ConnectionResetError", "BadStatusLine"))


def test_etcd_refuses_tls_without_a_client_certificate(cluster: LocalCluster) -> None:
    ctx = health.tls_context(cluster.pki.etcd_ca.cert, None)
    assert REFUSED_TLS.search(_status(f"{cluster.etcd_url}/health", ctx))


def test_etcd_refuses_a_certificate_of_the_cluster_ca(cluster: LocalCluster) -> None:
    """The admin's certificate opens the API server (system:masters) but not etcd."""
    ctx = health.tls_context(cluster.pki.etcd_ca.cert, cluster.pki.admin)
    assert REFUSED_TLS.search(_status(f"{cluster.etcd_url}/health", ctx))


def test_etcd_answers_its_own_client_certificate(cluster: LocalCluster) -> None:
    assert _status(f"{cluster.etcd_url}/health", cluster.etcd_tls()) == "200"


@pytest.mark.parametrize("path", ["/readyz", "/version", "/api/v1/namespaces"])
def test_the_api_server_refuses_anonymous_requests(cluster: LocalCluster, path: str) -> None:
    ctx = health.tls_context(cluster.pki.ca.cert, None)
    assert _status(f"{cluster.server}{path}", ctx) == "401"


def test_the_api_server_answers_the_admin(cluster: LocalCluster) -> None:
    ctx = health.tls_context(cluster.pki.ca.cert, cluster.pki.admin)
    assert _status(f"{cluster.server}/readyz", ctx) == "200"


def test_private_keys_and_kubeconfigs_are_owner_only(cluster: LocalCluster) -> None:
    keys = sorted(cluster.run_dir.glob("pki/*.key"))
    names = {k.name for k in keys}
    assert {"ca.key", "sa.key", "admin.key", "etcd-ca.key", "etcd-server.key", "etcd-client.key"} <= names
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [*keys, *cluster.run_dir.glob("*.kubeconfig")]}
    assert modes == dict.fromkeys(modes, 0o600)


def test_no_private_key_is_written_under_reports() -> None:
    reports = REPO_ROOT / "reports"
    found = [p for p in reports.rglob("*") if p.is_file() and (p.suffix == ".key" or _holds_key(p))]
    assert found == []


def _holds_key(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return b"PRIVATE KEY-----" in f.read(1 << 20)
    except OSError:
        return False
