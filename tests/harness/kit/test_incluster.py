"""Which credentials the harness uses (harness.kit.incluster): a kubeconfig when one is given
or there, else the pod's service account; and the kubeconfig written for the latter is one the
client loads as its in-cluster config would."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_driver.api.apiclient import new_api_client
from harness.kit.incluster import InCluster, choose_credentials, in_cluster, write_kubeconfig

POD_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
CA = """-----BEGIN CERTIFICATE-----
MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBhrM3Mtc2Vy
-----END CERTIFICATE-----
"""


@pytest.fixture
def sa_dir(tmp_path: Path) -> Path:
    d = tmp_path / "serviceaccount"
    d.mkdir()
    (d / "token").write_text("tok-123")
    (d / "ca.crt").write_text(CA)
    (d / "namespace").write_text("dra-harness-qualify\n")
    return d


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def pod_env(sa_dir: Path, **extra: str) -> dict[str, str]:
    return {**POD_ENV, "DRA_HARNESS_SERVICE_ACCOUNT_DIR": str(sa_dir), **extra}


def test_a_pod_without_a_kubeconfig_uses_its_service_account(sa_dir: Path, home: Path) -> None:
    creds = choose_credentials(None, pod_env(sa_dir), home)
    token, ca = sa_dir / "token", sa_dir / "ca.crt"
    assert creds == InCluster("https://10.96.0.1:443", token, ca, "dra-harness-qualify")


@pytest.mark.parametrize(
    ("given", "extra", "expected"),
    [
        ("/given", {}, "/given"),
        (None, {"KUBECONFIG": "/from/env"}, "/from/env"),
        ("/given", {"KUBECONFIG": "/from/env"}, "/given"),
    ],
)
def test_a_kubeconfig_named_wins_over_the_pod(
    sa_dir: Path, home: Path, given: str | None, extra: dict[str, str], expected: str
) -> None:
    assert choose_credentials(given, pod_env(sa_dir, **extra), home) == Path(expected)


def test_a_kubeconfig_at_home_wins_over_the_pod(sa_dir: Path, home: Path) -> None:
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text("{}")
    assert choose_credentials(None, pod_env(sa_dir), home) == home / ".kube" / "config"


def test_not_a_pod_falls_back_to_the_default_path(sa_dir: Path, home: Path) -> None:
    """No service host, or no token mounted: ~/.kube/config, whose absence is reported later."""
    no_host = {"DRA_HARNESS_SERVICE_ACCOUNT_DIR": str(sa_dir)}
    assert choose_credentials(None, no_host, home) == home / ".kube" / "config"
    (sa_dir / "token").unlink()
    assert choose_credentials(None, pod_env(sa_dir), home) == home / ".kube" / "config"
    assert in_cluster(pod_env(sa_dir)) is None


def test_an_ipv6_service_address_is_bracketed(sa_dir: Path) -> None:
    creds = in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}, sa_dir)
    assert creds is not None
    assert creds.server == "https://[fd00::1]:6443"


def test_the_written_kubeconfig_loads_as_the_service_account(sa_dir: Path, tmp_path: Path) -> None:
    creds = in_cluster(pod_env(sa_dir))
    assert creds is not None
    path = write_kubeconfig(creds, tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert "tok-123" not in path.read_text(), "the file names the token, it does not copy it"
    api = new_api_client(path)
    cfg = api.configuration
    assert cfg.host == "https://10.96.0.1:443"
    assert cfg.api_key["BearerToken"] == "Bearer tok-123"
    assert cfg.ssl_ca_cert == str(sa_dir / "ca.crt")


def test_qualify_s_reproduce_command_names_no_temporary_kubeconfig() -> None:
    from harness.qualify.run import QualifyRequest

    req = QualifyRequest(
        Path("/run/keys/in-cluster.kubeconfig"), "gpu.x", "gpu.x", "nvidia.com/gpu", in_cluster=True
    )
    assert req.command() == (
        "dra-harness qualify --driver-name=gpu.x --device-class=gpu.x --extended-resource=nvidia.com/gpu"
    )
