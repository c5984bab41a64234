"""Credentials the real API server refuses: a bogus token is "rejected the credentials (401
Unauthorized)", a ServiceAccount without RBAC is "forbidden (403)" with the server's reason.
One line from each entry point, naming the server, never "unreachable"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fixtures.scan import MakeKubeconfig
from harness.core.versions import REPO_ROOT
from harness.kit import kinds
from harness.kit.kube import API_ERRORS, Kube

PYTEST = ("-m", "pytest", "-p", "no:cacheprovider", "--cluster-provider=existing")
SMOKE = "suites/smoke/test_local_cluster.py::test_pod_is_bound_to_a_simulated_node_and_runs"


def _server(kubeconfig: Path) -> str:
    return str(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"])


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def bogus_token(service_account_kubeconfig: MakeKubeconfig, tmp_path: Path) -> Path:
    """A ServiceAccount's kubeconfig with a token the server never issued."""
    doc = yaml.safe_load(service_account_kubeconfig(read=False).read_text())
    doc["users"][0]["user"]["token"] = "not-a-token"
    path = tmp_path / "bogus.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text("pools: [{name: x, profile: t4, gpus: 1}]\n")
    return path


@pytest.mark.parametrize("entry", ["scan", "publish", "pytest"])
def test_a_token_the_server_never_issued_is_rejected_credentials_in_one_line(
    entry: str, bogus_token: Path, fleet: Path
) -> None:
    line = f"the API server {_server(bogus_token)} rejected the credentials (401 Unauthorized)"
    if entry == "scan":
        done = _run("-m", "harness.cli.main", "scan", f"--kubeconfig={bogus_token}")
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"dra-harness: {line}\n")
    elif entry == "publish":
        done = _run("-m", "fake_driver", "publish", f"--fleet={fleet}", f"--kubeconfig={bogus_token}")
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"fake_driver: error: {line}\n")
    else:
        done = _run(*PYTEST, f"--kubeconfig={bogus_token}", SMOKE)
        # pytest.exit from the session fixture: pytest prints it on stdout, between '!' rules.
        assert (done.returncode, done.stderr) == (3, "")
        named = [x.strip("! ") for x in done.stdout.splitlines() if "401" in x]
        assert named == [f"_pytest.outcomes.Exit: cluster: {line}"], done.stdout


def test_the_fake_driver_names_the_request_a_user_without_rbac_may_not_make(
    service_account_kubeconfig: MakeKubeconfig, namespace: str, fleet: Path
) -> None:
    kubeconfig = service_account_kubeconfig(read=False)
    done = _run("-m", "fake_driver", "publish", f"--fleet={fleet}", f"--kubeconfig={kubeconfig}")
    user = f"system:serviceaccount:{namespace}:scanner-0"
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        f"fake_driver: error: the API server {_server(kubeconfig)} refused GET /api/v1/nodes as "
        f'forbidden (403): nodes is forbidden: User "{user}" cannot list resource "nodes" in API group '
        '"" at the cluster scope\n',
    )


def test_the_harness_names_what_a_user_without_rbac_may_not_do(
    service_account_kubeconfig: MakeKubeconfig, namespace: str
) -> None:
    kubeconfig = service_account_kubeconfig(read=False)
    kube = Kube.from_kubeconfig(kubeconfig)
    with pytest.raises(API_ERRORS) as refused:
        kube.list(*kinds.NODE)
    kube.close()
    assert str(kube.failure(refused.value, "the list of Node (v1)")) == (
        f"the API server {_server(kubeconfig)} refused the list of Node (v1) as forbidden (403): nodes is "
        f'forbidden: User "system:serviceaccount:{namespace}:scanner-0" cannot list resource "nodes" '
        'in API group "" at the cluster scope'
    )
