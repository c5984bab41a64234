"""The client against servers and kubeconfigs built to hold or rob it (issue 41): a whole
request has a deadline (a server answering one byte at a time is cut off), and the key a
client-certificate kubeconfig carries is never left on disk outside the process's private
directory, even when the process is killed with SIGKILL."""

from __future__ import annotations

import base64
import os
import signal
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fake_driver.api.apiclient import new_api_client
from harness.clusters.host.pki import ClusterPKI, generate_pki
from harness.core.versions import REPO_ROOT
from harness.kit.kube import API_ERRORS, Kube
from harness.kit.waits import TIMEOUTS, wait_for
from tests.support.hostile_server import HostileServer, shared_server
from tests.support.silent_server import SilentServer, silent_server

LIMIT = 30  # the promise: one line and exit within 30 s
SMOKE = "suites/smoke/test_local_cluster.py::test_pod_is_bound_to_a_simulated_node_and_runs"


@pytest.fixture(scope="module")
def server() -> HostileServer:
    return shared_server()


def test_a_drip_is_cut_off_at_the_clients_bound(server: HostileServer, tmp_path: Path) -> None:
    kube = Kube(new_api_client(server.kubeconfig(tmp_path / "kc", "drip"), timeout=1.0))
    start = time.monotonic()
    with pytest.raises(API_ERRORS) as err:
        kube.raw_get("/api/v1/nodes")
    took = time.monotonic() - start
    kube.close()
    assert str(kube.failure(err.value)) == f"the API server {server.url('drip')} did not answer within 1 s"
    assert 1.0 <= took < 2.0


@pytest.mark.parametrize("entry", ["pytest", "standin"])
def test_a_drip_ends_pytest_and_standin_with_one_line_within_30_s(
    server: HostileServer, entry: str, tmp_path: Path
) -> None:
    drip = f"drip-{entry}-{uuid.uuid4().hex[:8]}"  # its own first contact
    kubeconfig = server.kubeconfig(tmp_path / "kc", drip)
    argv = {
        "pytest": [
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--cluster-provider=existing",
            f"--kubeconfig={kubeconfig}",
            SMOKE,
        ],
        "standin": [
            "-m",
            "harness.qualify.standin",
            "down",
            "--kubeconfig",
            str(kubeconfig),
            "--driver-name",
            "gpu.acme.example",
        ],
    }[entry]
    done = subprocess.run(
        [sys.executable, *argv], cwd=REPO_ROOT, capture_output=True, text=True, timeout=4 * LIMIT, check=False
    )
    # From the first request, not from the start: a loaded machine's imports are not the bound.
    took = time.monotonic() - server.first_contact[drip]
    line = f"the API server {server.url(drip)} did not answer within {TIMEOUTS.api_request:g} s"
    if entry == "pytest":  # pytest.exit from the session fixture: on stdout, between '!' rules
        assert (done.returncode, done.stderr) == (3, "")
        named = [x.strip("! ") for x in done.stdout.splitlines() if server.url(drip) in x]
        assert named == [f"_pytest.outcomes.Exit: cluster: {line}"], done.stdout
    else:
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"dra-harness: {line}\n")
    assert TIMEOUTS.api_request - 1 <= took < LIMIT, f"{entry} took {took:.1f} s after its first request"


# ---- key material -------------------------------------------------------------------------


@pytest.fixture
def cert_server(tmp_path: Path) -> Iterator[tuple[SilentServer, ClusterPKI]]:
    """A TLS server that never answers, and the PKI whose admin key the kubeconfig carries."""
    pki = generate_pki(tmp_path / "pki")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pki.apiserver.cert, pki.apiserver.key)
    with silent_server(tls) as server:
        yield server, pki


def _client_cert_kubeconfig(path: Path, server: str, pki: ClusterPKI) -> Path:
    def data(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    user = {"client-certificate-data": data(pki.admin.cert), "client-key-data": data(pki.admin.key)}
    cluster = {"server": server, "certificate-authority-data": data(pki.ca.cert)}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


def _holding(root: Path, key: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.read_bytes() == key]


def test_a_sigkilled_scan_leaves_its_key_only_in_its_private_directory_which_the_next_run_removes(
    cert_server: tuple[SilentServer, ClusterPKI], tmp_path: Path
) -> None:
    server, pki = cert_server
    kubeconfig = _client_cert_kubeconfig(tmp_path / "kubeconfig", server.url, pki)
    temp = tmp_path / "tmp"  # where the client would write its temp files, and the keys' root
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"} | {"TMPDIR": str(temp)}
    scan = [sys.executable, "-m", "harness.cli.main", "scan", f"--kubeconfig={kubeconfig}"]
    proc = subprocess.Popen(
        scan, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:  # the request is in flight: the key has been written for the handshake
        wait_for(lambda: server.peers, timeout=20, describe="the scan's first request")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    key = pki.admin.key.read_bytes()
    private = temp / f"dra-harness-{os.getuid()}" / "keys"
    left = _holding(temp, key)
    assert left
    assert all(p.parent.parent == private and p.parent.name.startswith(f"{proc.pid}-") for p in left)
    assert oct(private.stat().st_mode & 0o777) == oct(private.parent.stat().st_mode & 0o777) == "0o700"

    # The next run (here one that fails at once, on a closed port) removes the dead owner's keys.
    (tmp_path / "closed").write_text(kubeconfig.read_text().replace(server.url, "https://127.0.0.1:1"))
    again = subprocess.run(
        [*scan[:-1], f"--kubeconfig={tmp_path / 'closed'}"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        timeout=LIMIT,
    )
    assert again.returncode == 1, again.stderr
    assert _holding(tmp_path, key) == [pki.admin.key]  # the PKI's own file, nothing else
    assert list(private.iterdir()) == []
