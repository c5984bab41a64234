"""No secret in any artifact: a failing run, a hostile API server and a component log each
carry planted credentials; every file and stream they produce is searched for them."""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from harness.core.versions import load_matrix
from harness.kit import builders as b
from harness.kit.kube import Kube
from harness.reports.diagnostics import collect_diagnostics
from tests.support.cli import run_cli, run_suite_file

_M = load_matrix()
DEFAULT_CELL = f"{_M.default_minor}/{_M.default_personality}/{_M.default_profile}"

BEARER = "eyJplantedBearer.cGF5bG9hZA.c2lnbmF0dXJl"
TOKEN = "plantedTokenEq7f3a9c"
KEY_DATA = "LS0tplantedKeyData0tLS0K"
PEM_BODY = "MIIEplantedPemBodyQ2xhc3NpYw"
PLANTED = (BEARER, TOKEN, KEY_DATA, PEM_BODY)
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nAAAA+/==\n-----END RSA PRIVATE KEY-----"

FAILING_TESTS = f"""
import json, logging, sys
import pytest

BEARER, TOKEN, KEY_DATA, PEM = {BEARER!r}, {TOKEN!r}, {KEY_DATA!r}, {PEM!r}


@pytest.fixture
def login():
    raise RuntimeError(f"login refused: token={{TOKEN}}")


def test_the_server_echoes_credentials():
    print(f"GET /api/v1/pods Authorization: Bearer {{BEARER}}")
    print(f"users:\\n- name: admin\\n  user:\\n    client-key-data: {{KEY_DATA}}\\n", file=sys.stderr)
    logging.getLogger("kube").warning("body: %s", json.dumps({{"token": TOKEN}}))
    assert PEM == "", f"the server said: Bearer {{BEARER}} token={{TOKEN}}"


def test_a_fixture_fails(login):
    pass


@pytest.mark.parametrize("credentials", [pytest.param(f"password={{TOKEN}}", id="creds")])
def test_a_parameter_and_a_skip(credentials):
    pytest.skip(f"cannot use {{credentials}}")
"""


def _token_kubeconfig(path: Path, server: str, token: str) -> Path:
    path.write_text(yaml.safe_dump(b.token_kubeconfig({"server": server}, token)))
    return path


def _files_with(root: Path, secret: str) -> list[str]:
    return [
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()
    ]


def _allure_results(alluredir: Path) -> dict[str, dict[str, object]]:
    results = [json.loads(p.read_text()) for p in alluredir.glob("*-result.json")]
    return {r["name"]: r for r in results}


def test_a_failing_run_writes_no_planted_secret_to_any_artifact(pytester: pytest.Pytester) -> None:
    out = pytester.path / "out"
    result = run_suite_file(
        pytester,
        FAILING_TESTS,
        "-ra",
        "-vv",
        "-o",
        "junit_logging=all",  # captured output in junit.xml too
        f"--junitxml={out / 'junit.xml'}",
        f"--alluredir={out / 'allure-results'}",
        f"--summary-json={out / 'summary.json'}",
    )
    (out / "pytest.log").write_text(result.stdout.str() + result.stderr.str())  # as a matrix cell's

    result.assert_outcomes(failed=1, errors=1, skipped=1)
    assert {secret: _files_with(out, secret) for secret in PLANTED} == {secret: [] for secret in PLANTED}
    # ...and not because the failures went missing: each is there, redacted
    said = "the server said: Bearer <redacted> token=<redacted>"
    assert f"AssertionError: {said}" in (out / "pytest.log").read_text()
    failure = (
        ET.parse(out / "junit.xml").getroot().find(".//testcase[@name='test_the_server_echoes_credentials']")
    )
    assert failure is not None
    assert said in (failure.findtext("failure") or "")
    assert "client-key-data: <redacted>" in (failure.findtext("system-err") or "")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["totals"] == {"passed": 0, "failed": 1, "skipped": 1, "errors": 1}
    assert {t["outcome"]: t["message"] for t in summary["tests"]}[
        "skipped"
    ] == "cannot use password=<redacted>"
    allure = _allure_results(out / "allure-results")
    assert said in allure["test_the_server_echoes_credentials"]["statusDetails"]["message"]  # type: ignore[index]
    assert allure["test_a_parameter_and_a_skip[creds]"]["parameters"] == [
        {"name": "cell", "value": f"'{DEFAULT_CELL}'"},  # the cell's history is its own
        {"name": "credentials", "value": "'password=<redacted>'"},
    ]


class _EchoingServer(BaseHTTPRequestHandler):
    """A hostile API server: every answer is an error that repeats the request's credentials."""

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization", "")
        body = json.dumps({"kind": "Status", "message": f"you sent {auth}"}).encode()
        self.send_response(500, f"echo {auth}")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def echoing_kubeconfig(tmp_path: Path) -> Iterator[Path]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    path = _token_kubeconfig(
        tmp_path / "hostile.kubeconfig", f"http://127.0.0.1:{server.server_port}", BEARER
    )
    yield path
    server.shutdown()
    server.server_close()
    thread.join()


def test_the_scan_does_not_print_a_token_the_server_echoes(echoing_kubeconfig: Path, tmp_path: Path) -> None:
    done = run_cli("scan", f"--kubeconfig={echoing_kubeconfig}", f"--json={tmp_path / 'scan.json'}")

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("dra-harness: the API server http://127.0.0.1:")
    assert done.stderr.endswith("answered the request with 500: you sent Bearer <redacted>\n")
    assert BEARER not in done.stderr
    assert not (tmp_path / "scan.json").exists()


class _Logs:
    """Where a cluster keeps its components' logs: all collect_diagnostics asks of it."""

    def __init__(self, root: Path):
        self.root = root
        self.components = {"kube-apiserver": None}

    def log_path(self, component: str) -> Path:
        return self.root / f"{component}.log"


def test_attached_component_logs_are_redacted(tmp_path: Path) -> None:
    (tmp_path / "kube-apiserver.log").write_text(f"I0101 request Authorization: Bearer {BEARER}\n{PEM}\n")
    unreachable = _token_kubeconfig(tmp_path / "gone.kubeconfig", "http://127.0.0.1:1", TOKEN)
    kube = Kube.from_kubeconfig(unreachable)
    try:
        parts = dict(collect_diagnostics(kube, "ns", _Logs(tmp_path)))
    finally:
        kube.close()

    assert parts["log tail: kube-apiserver"] == (
        "I0101 request Authorization: <redacted>\n<redacted> private key"
    )
