"""The stand-in driver's rows of the bad-input catalogue (tests/test_bad_input.py):
`python -m harness.qualify.standin up|down`, the command docs/qualify.md gives for trying qualify.

Two rows need an API server that answers: one that refuses every request (401), and one that
already holds a `gpu.acme.example` DeviceClass it did not get from us (no owner label). A small
HTTP server in this process plays both, one per path prefix of the kubeconfig's server URL."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

from tests.support.badinput.common import Row, files

DRIVER = "gpu.acme.example"
STANDIN = "standin"
KC = "{tmp}/kubeconfig"
UP = ("up", "--kubeconfig", KC, "--driver-name", DRIVER)
DOWN = ("down", "--kubeconfig", KC, "--driver-name", DRIVER)
DENIED = (
    r"^dra-harness: the API server http://127\.0\.0\.1:\d+/deny rejected the credentials "
    r"\(401 Unauthorized\)$"
)
USAGE = r"^python -m harness\.qualify\.standin: error: "
FOREIGN_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": DRIVER, "labels": {"app.kubernetes.io/managed-by": "Helm"}, "resourceVersion": "7"},
    "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
}


class _Api(BaseHTTPRequestHandler):
    """/deny/...: 401 for everything. /foreign/...: the version, the foreign class, else 404."""

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path.startswith("/deny/"):
            self._send(401, {"kind": "Status", "status": "Failure", "reason": "Unauthorized", "code": 401})
        elif path == "/foreign/version":
            self._send(200, {"major": "1", "minor": "37", "gitVersion": "v1.37.2"})
        elif path == f"/foreign/apis/resource.k8s.io/v1/deviceclasses/{DRIVER}":
            self._send(200, FOREIGN_CLASS)
        else:
            self._send(404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404})

    do_POST = do_PUT = do_DELETE = do_GET

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


_server: ThreadingHTTPServer | None = None
_lock = threading.Lock()


def _url(prefix: str) -> str:
    global _server
    with _lock:
        if _server is None:
            _server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
            _server.daemon_threads = True
            threading.Thread(target=_server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{_server.server_address[1]}/{prefix}"


def _served_by(prefix: str) -> Callable[[Path], None]:
    """A setup: {tmp}/kubeconfig points at this process's server under `prefix`."""

    def setup(tmp: Path) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": _url(prefix)}}],
            "users": [{"name": "u", "user": {"token": "sekret-token-41"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        }
        (tmp / "kubeconfig").write_text(yaml.safe_dump(config))

    return setup


def sb(
    id: str, argv: tuple[str, ...], code: int, line: str, setup: Callable[[Path], None] | None = None
) -> Row:
    return Row(id, argv, code, line, STANDIN, setup)


CLOSED = files(
    {
        "kubeconfig": yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "abc"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    }
)

STANDIN_ROWS = [
    sb(
        "standin-pool-shape", (*UP, "--pool", "big"), 2, USAGE + r"argument --pool: pool 'big': expected name"
    ),
    sb("standin-pool-zero", (*UP, "--pool", "a:0:8"), 2, USAGE + r"argument --pool: pool 'a:0:8': expected"),
    sb("standin-no-pool", UP, 2, USAGE + r"up needs at least one --pool name:count:gpus"),
    sb(
        "standin-pool-64-gpus",
        (*UP, "--pool", "big:1:64"),
        1,
        r"^dra-harness: <fleet>: pool 'big': gpus must be an integer in \[1, 32\], got 64$",
    ),
    sb(
        "standin-pool-uppercase",
        (*UP, "--pool", "Big:1:4"),
        1,
        r"^dra-harness: <fleet>: pool 'Big': node name 'acme-Big-0' is not a DNS subdomain",
    ),
    sb(
        "standin-unknown-personality",
        (*UP, "--pool", "a:1:1", "--personality", "nvidia-v9"),
        1,
        r"^dra-harness: unknown personality 'nvidia-v9'; valid choices: example-v0\.4, nvidia-v0\.4",
    ),
    sb(
        "standin-missing-kubeconfig",
        ("down", "--kubeconfig", "{tmp}/nope", "--driver-name", DRIVER),
        1,
        r"^dra-harness: kubeconfig .*/nope does not exist$",
    ),
    sb(
        "standin-kubeconfig-not-yaml",
        DOWN,
        1,
        r"^dra-harness: kubeconfig .*/kubeconfig is not YAML: ",
        files({"kubeconfig": "{{{"}),
    ),
    sb(
        "standin-kubeconfig-no-context",
        DOWN,
        1,
        r"^dra-harness: kubeconfig .*/kubeconfig has no current-context$",
    ),
    sb(
        "standin-unreachable-up",
        (*UP, "--pool", "a:1:2"),
        1,
        r"^dra-harness: cannot reach the API server https://127\.0\.0\.1:1: connection refused$",
        CLOSED,
    ),
    sb(
        "standin-unreachable-down",
        DOWN,
        1,
        r"^dra-harness: cannot reach the API server https://127\.0\.0\.1:1: connection refused$",
        CLOSED,
    ),
    sb("standin-401-up", (*UP, "--pool", "a:1:2"), 1, DENIED, _served_by("deny")),
    sb("standin-401-down", DOWN, 1, DENIED, _served_by("deny")),
    sb(
        "standin-foreign-class",
        (*UP, "--pool", "a:1:2"),
        1,
        rf"^dra-harness: refusing to install: DeviceClass {DRIVER} exists and was not created by "
        r"dra-harness \(no label dra-harness\.io/managed-by=dra-harness\); nothing was changed$",
        _served_by("foreign"),
    ),
]
