"""Device plugin server (``v1beta1.DevicePlugin``) and its registration with the kubelet.

    <plugin_dir>/kubelet.sock         the kubelet's v1beta1.Registration (we call Register)
    <plugin_dir>/nvidia-gpu.sock      our v1beta1.DevicePlugin

Device IDs are the GPU UUIDs (NVIDIA's default), taken from the same rendering as the DRA
slices, so the ledger can see one physical GPU advertised by both stacks. With the pool's
time-slicing replicas N > 1 every GPU is N devices `<uuid>::<i>` (NVIDIA/k8s-device-plugin
internal/rm/devices.go NewAnnotatedID), and a container given several of one GPU sees it once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

from fake_driver._generated import deviceplugin_v1beta1_pb2 as pb
from fake_driver._generated import deviceplugin_v1beta1_pb2_grpc as pb_grpc
from fake_driver.core.errors import FakeDriverError
from fake_driver.core.stopsignal import STOP_BOUND_SECONDS
from fake_driver.fleetspec.fleet import NodeSpec
from fake_driver.publishing.legacy import LEGACY_RESOURCE
from fake_driver.rendering.slices import PhysicalGpu, physical_gpus

API_VERSION = "v1beta1"
DEFAULT_PLUGIN_DIR = Path("/var/lib/kubelet/device-plugins")
KUBELET_SOCKET = "kubelet.sock"
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"


def replica_ids(uuid: str, replicas: int) -> list[str]:
    """The device IDs the plugin advertises for one GPU."""
    return [uuid] if replicas == 1 else [f"{uuid}::{i}" for i in range(replicas)]


def physical_id(device_id: str) -> str:
    return device_id.split("::", 1)[0]


def socket_name(resource: str) -> str:
    """NVIDIA's naming: ``nvidia-`` + resource name without the domain + ``.sock``."""
    return f"nvidia-{resource.rsplit('/', 1)[-1]}.sock"


class _Service:
    def __init__(self, owner: DevicePluginServer) -> None:
        self.owner = owner

    def GetDevicePluginOptions(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pb.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True)

    def ListAndWatch(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        seen = -1
        while context.is_active():
            with self.owner._changed:
                self.owner._changed.wait_for(
                    lambda seen=seen: self.owner._generation != seen or self.owner._stopping,  # type: ignore[misc]
                    timeout=1.0,
                )
                if self.owner._stopping:
                    return
                if self.owner._generation == seen:
                    continue
                seen = self.owner._generation
                devices = [pb.Device(ID=uuid, health=h) for uuid, h in self.owner.health.items()]
            yield pb.ListAndWatchResponse(devices=devices)

    def GetPreferredAllocation(self, request: Any, context: grpc.ServicerContext) -> Any:
        resp = pb.PreferredAllocationResponse()
        for req in request.container_requests:
            chosen = list(req.must_include_deviceIDs)
            for d in req.available_deviceIDs:
                if len(chosen) >= req.allocation_size:
                    break
                if d not in chosen:
                    chosen.append(d)
            resp.container_responses.add(deviceIDs=chosen)
        return resp

    def Allocate(self, request: Any, context: grpc.ServicerContext) -> Any:
        resp = pb.AllocateResponse()
        for req in request.container_requests:
            unknown = [d for d in req.devices_ids if d not in self.owner.health]
            if unknown:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"invalid allocation request for '{self.owner.resource}': unknown device: {unknown[0]}",
                )
            gpus = dict.fromkeys(physical_id(d) for d in req.devices_ids)
            resp.container_responses.add(envs={VISIBLE_DEVICES_ENV: ",".join(gpus)})
        return resp

    def PreStartContainer(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pb.PreStartContainerResponse()


class DevicePluginServer:
    def __init__(
        self,
        node: NodeSpec,
        *,
        plugin_dir: Path = DEFAULT_PLUGIN_DIR,
        resource: str = LEGACY_RESOURCE,
    ) -> None:
        self.node = node
        self.resource = resource
        self.plugin_dir = plugin_dir
        self.socket = plugin_dir / socket_name(resource)
        self.gpus: tuple[PhysicalGpu, ...] = physical_gpus(node.name, node.pool.gpus)
        replicas = node.pool.time_slicing_replicas
        self.health: dict[str, str] = {i: HEALTHY for g in self.gpus for i in replica_ids(g.uuid, replicas)}
        self._changed = threading.Condition()
        self._generation = 0
        self._stopping = False
        self._server: grpc.Server | None = None

    def start(self) -> DevicePluginServer:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)
        self._stopping = False
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        pb_grpc.add_DevicePluginServicer_to_server(_Service(self), server)  # type: ignore[no-untyped-call]
        server.add_insecure_port(f"unix://{self.socket}")
        server.start()
        self._server = server
        return self

    def register(self, kubelet_socket: Path | None = None, timeout: float = 10.0) -> None:
        """Call the kubelet's Registration.Register (the kubelet then dials our socket)."""
        path = kubelet_socket or self.plugin_dir / KUBELET_SOCKET
        req = pb.RegisterRequest(
            version=API_VERSION,
            endpoint=self.socket.name,
            resource_name=self.resource,
            options=pb.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True),
        )
        try:
            with grpc.insecure_channel(f"unix://{path}") as ch:
                stub = pb_grpc.RegistrationStub(ch)  # type: ignore[no-untyped-call]
                stub.Register(req, timeout=timeout, wait_for_ready=True)
        except grpc.RpcError as err:
            call: Any = err
            raise FakeDriverError(
                f"registering {self.resource} with the kubelet at {path} failed: "
                f"{call.code().name}: {call.details()}"
            ) from None

    def set_health(self, uuids: Sequence[str], healthy: bool) -> None:
        """Mark GPUs (every replica of each) (un)healthy; ListAndWatch streams send the new list."""
        with self._changed:
            for u in uuids:
                ids = [i for i in self.health if physical_id(i) == u]
                if not ids:
                    raise FakeDriverError(f"unknown device {u!r} on node {self.node.name}")
                for i in ids:
                    self.health[i] = HEALTHY if healthy else UNHEALTHY
            self._generation += 1
            self._changed.notify_all()

    def stop(self, grace: float = 1.0) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._server is not None:
            self._server.stop(grace).wait(grace + STOP_BOUND_SECONDS)
            self._server = None
        self.socket.unlink(missing_ok=True)

    def __enter__(self) -> DevicePluginServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
