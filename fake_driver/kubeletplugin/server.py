"""gRPC servers of the kubelet plugin on unix sockets: registration and the DRA service.

Socket layout (DRAlib ``kubeletplugin`` defaults)::

    <registry_dir>/<driver>-reg.sock      pluginregistration.Registration
    <plugins_dir>/<driver>/dra.sock       k8s.io.kubelet.pkg.apis.dra.{v1,v1beta1}.DRAPlugin

and with an instance UID (its ``RollingUpdate(uid)`` option: two instances serve side by side
while the newer replaces the older; k8s.io/dynamic-resource-allocation@v0.37.2
kubeletplugin/draplugin.go)::

    <registry_dir>/<driver>-<uid>-reg.sock    (shorter names when the path is too long)
    <plugins_dir>/<driver>/dra-<uid>.sock

The DRA socket is served before the registration socket appears, so a kubelet that finds the
registration socket can always reach the endpoint it is given.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import socket as sockets
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

import grpc

from fake_driver._generated import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)
from fake_driver.core.errors import FakeDriverError, InUseError
from fake_driver.core.paths import socket_problem
from fake_driver.core.stopsignal import STOP_BOUND_SECONDS
from fake_driver.kubeletplugin.plugin import ClaimRef, ClaimResult, InjectedGrpcError, KubeletPlugin

DEFAULT_REGISTRY_DIR = Path("/var/lib/kubelet/plugins_registry")
DEFAULT_PLUGINS_DIR = Path("/var/lib/kubelet/plugins")
PLUGIN_TYPE = "DRAPlugin"  # pluginregistration constants.go
V1_SERVICE = "v1.DRAPlugin"
V1BETA1_SERVICE = "v1beta1.DRAPlugin"
DEFAULT_SUPPORTED_VERSIONS = (V1_SERVICE, V1BETA1_SERVICE)
UNIX_PATH_MAX = 108  # draplugin.go unixPathMax


def _b64_sha256(text: str, size: int) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()[:size]).decode().rstrip("=")


def registration_socket_name(registry_dir: Path, driver: str, instance: str = "") -> str:
    """draplugin.go RollingUpdateRegistrarSocketFile: the first of <driver>-<uid>-reg.sock,
    <driver>-<b64(sha256(uid)[:8])>-reg.sock, dra-<b64(sha256(driver NUL uid)[:16])>-reg.sock
    whose path fits; without an instance, <driver>-reg.sock."""
    if not instance:
        return f"{driver}-reg.sock"
    candidates = [
        f"{driver}-{instance}-reg.sock",
        f"{driver}-{_b64_sha256(instance, 8)}-reg.sock",
        f"dra-{_b64_sha256(driver + chr(0) + instance, 16)}-reg.sock",
    ]
    fits = [c for c in candidates if len(str(registry_dir / c)) <= UNIX_PATH_MAX]
    return fits[0] if fits else candidates[-1]


def socket_paths(registry_dir: Path, plugins_dir: Path, driver: str, instance: str = "") -> tuple[Path, Path]:
    """(DRA socket, registration socket) of one plugin instance."""
    dra = plugins_dir / driver / (f"dra-{instance}.sock" if instance else "dra.sock")
    return dra, registry_dir / registration_socket_name(registry_dir, driver, instance)


def _claims(request: Any) -> list[ClaimRef]:
    return [ClaimRef(c.namespace, c.uid, c.name) for c in request.claims]


class _DraService:
    """One servicer for both API versions: the messages differ only in package (and v1's share_id)."""

    def __init__(self, plugin: KubeletPlugin, pb: ModuleType, *, has_share_id: bool) -> None:
        self.plugin = plugin
        self.pb = pb
        self.has_share_id = has_share_id

    def NodePrepareResources(self, request: Any, context: grpc.ServicerContext) -> Any:
        results = self._call("NodePrepareResources", self.plugin.prepare, request, context)
        resp = self.pb.NodePrepareResourcesResponse()
        for uid, r in results.items():
            entry = resp.claims[uid]
            if r.error:
                entry.error = r.error
                continue
            for d in r.devices:
                dev = entry.devices.add(
                    request_names=list(d.requests),
                    pool_name=d.pool,
                    device_name=d.device,
                    cdi_device_ids=list(d.cdi_device_ids),
                )
                if self.has_share_id and d.share_id:
                    dev.share_id = d.share_id
        return resp

    def NodeUnprepareResources(self, request: Any, context: grpc.ServicerContext) -> Any:
        results = self._call("NodeUnprepareResources", self.plugin.unprepare, request, context)
        resp = self.pb.NodeUnprepareResourcesResponse()
        for uid, r in results.items():
            resp.claims[uid].error = r.error
        return resp

    @staticmethod
    def _call(method: str, fn: Any, request: Any, context: grpc.ServicerContext) -> dict[str, ClaimResult]:
        refs = _claims(request)
        # One line per call on stderr (the process log): which instance served which claim.
        print(f"{method} {' '.join(f'{r.key}/{r.uid}' for r in refs)}", file=sys.stderr, flush=True)
        try:
            result: dict[str, ClaimResult] = fn(refs)
        except InjectedGrpcError as err:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(err))
        return result


@dataclass(frozen=True)
class RegistrationStatus:
    registered: bool
    error: str


class _RegistrationService:
    def __init__(self, driver: str, endpoint: Path, supported_versions: Sequence[str]) -> None:
        self.driver = driver
        self.endpoint = endpoint
        self.supported_versions = tuple(supported_versions)
        self.statuses: list[RegistrationStatus] = []
        self.notified = threading.Event()

    def GetInfo(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pluginregistration_v1_pb2.PluginInfo(
            type=PLUGIN_TYPE,
            name=self.driver,
            endpoint=str(self.endpoint),
            supported_versions=list(self.supported_versions),
        )

    def NotifyRegistrationStatus(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.statuses.append(RegistrationStatus(request.plugin_registered, request.error))
        self.notified.set()
        return pluginregistration_v1_pb2.RegistrationStatusResponse()


def served(path: Path) -> bool:
    """Does a live process accept connections on the unix socket at `path`? (A stale socket
    file of a process that died refuses them.)"""
    if not path.is_socket():
        return False
    with sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM) as probe:
        probe.settimeout(2.0)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        except OSError:  # a full backlog or a slow accept: somebody is there
            return True
    return True


def _in_use(path: Path) -> InUseError:
    return InUseError(
        f"{path} is served by another live kubelet plugin; stop it first, or give this one other "
        "--registry-dir/--plugins-dir (or a --rolling-update-uid of its own)"
    )


@contextlib.contextmanager
def claim_sockets(dra: Path, registration: Path) -> Iterator[None]:
    """Hold this instance's sockets: refused with one line (InUseError) when another live
    process serves either of them, instead of unlinking its sockets from under it. A lock
    file beside the DRA socket, held while the claim lasts, settles two that start at once."""
    for path in (dra, registration):
        problem = socket_problem(path)
        if problem:
            raise FakeDriverError(problem)
    dra.parent.mkdir(parents=True, exist_ok=True)
    lock = dra.parent / f".{dra.name}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _in_use(dra) from None
        try:
            for path in (dra, registration):
                if served(path):  # another driver's plugin (or an instance without the lock)
                    raise _in_use(path)
            yield
        finally:
            lock.unlink(missing_ok=True)
    finally:
        os.close(fd)


class PluginServer:
    """Serves one KubeletPlugin on the kubelet's sockets until stop()."""

    def __init__(
        self,
        plugin: KubeletPlugin,
        *,
        registry_dir: Path = DEFAULT_REGISTRY_DIR,
        plugins_dir: Path = DEFAULT_PLUGINS_DIR,
        supported_versions: Sequence[str] = DEFAULT_SUPPORTED_VERSIONS,
        workers: int = 4,
        instance: str = "",
    ) -> None:
        self.plugin = plugin
        self.dra_socket, self.registration_socket = socket_paths(
            registry_dir, plugins_dir, plugin.driver, instance
        )
        self.registration = _RegistrationService(plugin.driver, self.dra_socket, supported_versions)
        self.workers = workers
        self._servers: list[grpc.Server] = []

    def start(self) -> PluginServer:
        dra = self._server(self.dra_socket)
        dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(  # type: ignore[no-untyped-call]
            _DraService(self.plugin, dra_v1_pb2, has_share_id=True), dra
        )
        dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server(  # type: ignore[no-untyped-call]
            _DraService(self.plugin, dra_v1beta1_pb2, has_share_id=False), dra
        )
        dra.start()
        reg = self._server(self.registration_socket)
        pluginregistration_v1_pb2_grpc.add_RegistrationServicer_to_server(  # type: ignore[no-untyped-call]
            self.registration, reg
        )
        reg.start()
        return self

    def _server(self, socket: Path) -> grpc.Server:
        socket.parent.mkdir(parents=True, exist_ok=True)
        socket.unlink(missing_ok=True)  # a stale socket from a previous run
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=self.workers))
        server.add_insecure_port(f"unix://{socket}")
        self._servers.append(server)
        return server

    def wait_notified(self, timeout: float) -> RegistrationStatus | None:
        """The kubelet's last NotifyRegistrationStatus, or None if it did not call within timeout."""
        if not self.registration.notified.wait(timeout):
            return None
        return self.registration.statuses[-1]

    def stop(self, grace: float = 1.0) -> None:
        # Registration first: the kubelet must not pick up an endpoint that is going away.
        for server in reversed(self._servers):
            server.stop(grace).wait(grace + STOP_BOUND_SECONDS)
        self._servers.clear()
        self.registration_socket.unlink(missing_ok=True)
        self.dra_socket.unlink(missing_ok=True)

    def __enter__(self) -> PluginServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
