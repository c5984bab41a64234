"""A server that accepts connections and never answers: each entry point gives up within its
bound with one line naming the server, and a timed-out request is not sent again. Watches
may stay silent for their timeoutSeconds; discovery is bounded like any request."""

from __future__ import annotations

import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fake_driver.api.apiclient import API_TIMEOUT, WATCH_LIMIT, new_api_client, request_timeout
from harness.clusters.host.pki import generate_pki
from harness.core.versions import REPO_ROOT
from harness.kit.kube import API_ERRORS, Kube
from harness.kit.waits import TIMEOUTS
from tests.support.silent_server import SilentServer, silent_server

PYTEST = ["-m", "pytest", "-p", "no:cacheprovider", "--cluster-provider=existing"]
SMOKE = "suites/smoke/test_local_cluster.py::test_pod_is_bound_to_a_simulated_node_and_runs"
OUTER = 120  # a hang fails this test instead of holding the run (imports on a loaded machine: ~35 s)
LIMIT = 30  # the promise: one line and exit within 30 s


def _entry_points(kubeconfig: Path, fleet: Path) -> dict[str, tuple[list[str], float]]:
    """argv after the interpreter, and the bound the command applies."""
    return {
        "scan": (["-m", "harness.cli.main", "scan", f"--kubeconfig={kubeconfig}"], TIMEOUTS.api_request),
        "publish": (
            ["-m", "fake_driver", "publish", f"--fleet={fleet}", f"--kubeconfig={kubeconfig}"],
            API_TIMEOUT,
        ),
        "pytest": (
            [*PYTEST, f"--kubeconfig={kubeconfig}", SMOKE],
            TIMEOUTS.api_request,
        ),
    }


@pytest.mark.parametrize("entry", ["scan", "publish", "pytest"])
def test_a_silent_server_ends_each_entry_point_with_one_line_within_30_s(entry: str, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("pools: [{name: x, profile: t4, gpus: 1}]\n")
    with silent_server() as server:  # no TLS: the client hangs in the handshake
        argv, bound = _entry_points(server.kubeconfig(tmp_path / "hung.kubeconfig"), fleet)[entry]
        done = subprocess.run(
            [sys.executable, *argv], cwd=REPO_ROOT, capture_output=True, text=True, timeout=OUTER, check=False
        )
        # From the first connection, not from the start: a loaded machine's imports are not the bound.
        assert server.first_contact is not None, f"{entry} never connected: {done.stderr[-2000:]}"
        took = time.monotonic() - server.first_contact
    line = f"the API server {server.url} did not answer within {bound:g} s"
    if entry == "pytest":
        # pytest.exit from the session fixture: pytest prints it on stdout, between '!' rules.
        assert (done.returncode, done.stderr) == (3, "")
        named = [x.strip("! ") for x in done.stdout.splitlines() if server.url in x]
        assert named == [f"_pytest.outcomes.Exit: cluster: {line}"], done.stdout
    else:
        prefix = {"scan": "dra-harness: ", "publish": "fake_driver: error: "}[entry]
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"{prefix}{line}\n")
    assert "Traceback" not in done.stdout + done.stderr
    assert bound - 1 <= took < LIMIT, f"{entry} took {took:.1f} s after its first connection"
    assert len(server.peers) == 1  # the timed-out request was not sent again


@pytest.fixture
def tls_silent(tmp_path: Path) -> Iterator[tuple[SilentServer, Path]]:
    """A server that completes the TLS handshake and then never answers, and a kubeconfig
    that trusts it."""
    pki = generate_pki(tmp_path / "pki")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pki.apiserver.cert, pki.apiserver.key)
    with silent_server(tls) as server:
        yield server, server.kubeconfig(tmp_path / "tls.kubeconfig", ca=pki.ca.cert)


def _seconds(call: Callable[[], object]) -> tuple[float, Exception]:
    start = time.monotonic()
    with pytest.raises(API_ERRORS) as err:
        call()
    return time.monotonic() - start, err.value


def test_a_server_silent_after_the_handshake_is_bounded_by_the_read_timeout(
    tls_silent: tuple[SilentServer, Path],
) -> None:
    server, kubeconfig = tls_silent
    kube = Kube(new_api_client(kubeconfig, timeout=1.0))
    took, err = _seconds(kube.server_version)
    kube.close()
    assert str(kube.failure(err)) == f"the API server {server.url} did not answer within 1 s"
    assert 1.0 <= took < 2.0
    assert len(server.peers) == 1


def test_a_watch_may_stay_silent_for_its_timeout_seconds_and_no_longer(
    tls_silent: tuple[SilentServer, Path],
) -> None:
    server, kubeconfig = tls_silent
    kube = Kube(new_api_client(kubeconfig, timeout=1.0))
    took, _ = _seconds(lambda: kube.raw_get("/api/v1/pods?watch=true&timeoutSeconds=2"))
    kube.close()
    assert 3.0 <= took < 4.0  # timeoutSeconds + the bound
    assert len(server.peers) == 1


def test_the_dynamic_clients_discovery_is_bounded(tmp_path: Path) -> None:
    with silent_server() as server:
        kube = Kube(new_api_client(server.kubeconfig(tmp_path / "hung.kubeconfig"), timeout=1.0))
        took, err = _seconds(lambda: kube.dynamic)
        kube.close()
    assert str(kube.failure(err)) == f"the API server {server.url} did not answer within 1 s"
    assert 1.0 <= took < 2.0


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://h/api/v1/pods", (7.0, 7.0)),
        ("https://h/api/v1/pods?watch=false&timeoutSeconds=30", (7.0, 7.0)),
        ("https://h/api/v1/pods?watch=true&timeoutSeconds=30", (7.0, 37.0)),
        ("https://h/api/v1/pods?labelSelector=a&watch=1&timeoutSeconds=5", (7.0, 12.0)),
        ("https://h/api/v1/pods?watch=true", (7.0, WATCH_LIMIT + 7.0)),
    ],
)
def test_a_watch_reads_for_its_timeout_seconds_plus_the_bound(
    url: str, expected: tuple[float, float]
) -> None:
    assert request_timeout(url, 7.0) == expected
