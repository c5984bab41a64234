"""Device plugin contract: this test plays the kubelet (Registration server + plugin client)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from fake_driver._generated import deviceplugin_v1beta1_pb2 as pb
from fake_driver._generated import deviceplugin_v1beta1_pb2_grpc as pb_grpc
from fake_driver.core.errors import FakeDriverError
from fake_driver.deviceplugin.server import DevicePluginServer
from fake_driver.fleetspec.fleet import Fleet, parse_fleet
from fake_driver.rendering.ledger import Ledger
from fake_driver.rendering.slices import render_node

NODE = "a100-0"
FLEET = "pools: [{name: a100, count: 1, profile: a100-40gb, gpus: 4, device_plugin: true}]"


class FakeKubelet:
    """The kubelet's v1beta1.Registration service: records what plugins register."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def Register(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.requests.append(request)
        return pb.Empty()


@pytest.fixture
def root() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="dp-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return parse_fleet(FLEET)


@pytest.fixture
def kubelet(root: Path) -> Iterator[FakeKubelet]:
    fake = FakeKubelet()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_RegistrationServicer_to_server(fake, server)  # type: ignore[no-untyped-call]
    server.add_insecure_port(f"unix://{root / 'kubelet.sock'}")
    server.start()
    yield fake
    server.stop(0).wait()


@pytest.fixture
def plugin(fleet: Fleet, root: Path) -> Iterator[DevicePluginServer]:
    with DevicePluginServer(fleet.node(NODE), plugin_dir=root) as s:
        yield s


def stub(plugin: DevicePluginServer, ch: grpc.Channel) -> Any:
    return pb_grpc.DevicePluginStub(ch)  # type: ignore[no-untyped-call]


def dial(plugin: DevicePluginServer) -> grpc.Channel:
    # The kubelet dials <plugin_dir>/<endpoint from RegisterRequest>.
    return grpc.insecure_channel(f"unix://{plugin.plugin_dir / plugin.socket.name}")


def test_registers_nvidia_gpu_with_the_kubelet(plugin: DevicePluginServer, kubelet: FakeKubelet) -> None:
    plugin.register()

    (req,) = kubelet.requests
    assert (req.version, req.endpoint, req.resource_name) == ("v1beta1", "nvidia-gpu.sock", "nvidia.com/gpu")
    assert (req.options.pre_start_required, req.options.get_preferred_allocation_available) == (False, True)
    with dial(plugin) as ch:
        opts = stub(plugin, ch).GetDevicePluginOptions(pb.Empty(), timeout=10)
    assert (opts.pre_start_required, opts.get_preferred_allocation_available) == (False, True)


def test_register_without_a_kubelet_is_one_line(plugin: DevicePluginServer, root: Path) -> None:
    with pytest.raises(FakeDriverError) as err:
        plugin.register(timeout=0.5)
    assert str(err.value) == (
        f"registering nvidia.com/gpu with the kubelet at {root / 'kubelet.sock'} failed: "
        "DEADLINE_EXCEEDED: Deadline Exceeded"
    )


def test_list_and_watch_advertises_the_gpus_dra_publishes_and_health_changes(
    plugin: DevicePluginServer, fleet: Fleet
) -> None:
    rendered = render_node(fleet.node(NODE), (1, 37))
    dra_uuids = [d["attributes"]["uuid"]["string"] for d in rendered.slices[0]["spec"]["devices"]]
    with dial(plugin) as ch:
        stream = stub(plugin, ch).ListAndWatch(pb.Empty(), timeout=10)
        first = next(stream)
        assert [(d.ID, d.health) for d in first.devices] == [(u, "Healthy") for u in dra_uuids]
        plugin.set_health([dra_uuids[2]], healthy=False)
        second = next(stream)
        stream.cancel()
    assert [(d.ID, d.health) for d in second.devices] == [
        (u, "Unhealthy" if k == 2 else "Healthy") for k, u in enumerate(dra_uuids)
    ]
    # The same physical GPUs on both stacks: the ledger's double-advertising view.
    assert len(Ledger.for_fleet(fleet, (1, 37)).double_advertised()[NODE]) == 4


def test_allocate_exposes_the_gpus_to_the_container(plugin: DevicePluginServer) -> None:
    uuids = [g.uuid for g in plugin.gpus]
    req = pb.AllocateRequest(
        container_requests=[
            pb.ContainerAllocateRequest(devices_ids=uuids[:2]),
            pb.ContainerAllocateRequest(devices_ids=[uuids[3]]),
        ]
    )
    with dial(plugin) as ch:
        resp = stub(plugin, ch).Allocate(req, timeout=10)
    assert [dict(c.envs) for c in resp.container_responses] == [
        {"NVIDIA_VISIBLE_DEVICES": f"{uuids[0]},{uuids[1]}"},
        {"NVIDIA_VISIBLE_DEVICES": uuids[3]},
    ]


def test_allocate_of_an_unknown_device_fails(plugin: DevicePluginServer) -> None:
    req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=["GPU-nope"])])
    with dial(plugin) as ch, pytest.raises(grpc.RpcError) as err:
        stub(plugin, ch).Allocate(req, timeout=10)
    call: Any = err.value
    assert (call.code(), call.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "invalid allocation request for 'nvidia.com/gpu': unknown device: GPU-nope",
    )


def test_preferred_allocation_keeps_must_include_first(plugin: DevicePluginServer) -> None:
    u = [g.uuid for g in plugin.gpus]
    req = pb.PreferredAllocationRequest(
        container_requests=[
            pb.ContainerPreferredAllocationRequest(
                available_deviceIDs=[u[1], u[2], u[3]], must_include_deviceIDs=[u[3]], allocation_size=2
            )
        ]
    )
    with dial(plugin) as ch:
        resp = stub(plugin, ch).GetPreferredAllocation(req, timeout=10)
    assert [list(c.deviceIDs) for c in resp.container_responses] == [[u[3], u[1]]]


def test_stop_removes_the_socket(fleet: Fleet, root: Path) -> None:
    server = DevicePluginServer(fleet.node(NODE), plugin_dir=root).start()
    assert server.socket.is_socket()
    server.stop()
    assert not server.socket.exists()


def test_time_slicing_replicas_advertise_each_gpu_n_times_and_a_container_sees_it_once(root: Path) -> None:
    fleet = parse_fleet(
        "pools: [{name: ts, count: 1, profile: a100-40gb, gpus: 2, device_plugin: true,"
        " time_slicing_replicas: 4}]"
    )
    with DevicePluginServer(fleet.node("ts-0"), plugin_dir=root) as plugin, dial(plugin) as ch:
        uuids = [g.uuid for g in plugin.gpus]
        stream = stub(plugin, ch).ListAndWatch(pb.Empty(), timeout=10)
        ids = [d.ID for d in next(stream).devices]
        stream.cancel()
        two_of_one = pb.ContainerAllocateRequest(devices_ids=[f"{uuids[1]}::0", f"{uuids[1]}::3"])
        resp = stub(plugin, ch).Allocate(pb.AllocateRequest(container_requests=[two_of_one]), timeout=10)

    assert ids == [f"{u}::{i}" for u in uuids for i in range(4)]
    assert [dict(c.envs) for c in resp.container_responses] == [{"NVIDIA_VISIBLE_DEVICES": uuids[1]}]
