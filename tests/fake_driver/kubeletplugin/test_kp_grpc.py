"""gRPC contract of the kubelet plugin: this test plays the kubelet on the plugin's unix sockets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fake_driver._generated import (
    dra_v1_pb2,
    dra_v1beta1_pb2,
    pluginregistration_v1_pb2,
)
from fake_driver.fleetspec.fleet import Fleet
from fake_driver.kubeletplugin.client import channel, registration_stub
from fake_driver.kubeletplugin.plugin import ClaimRef, StaticClaimSource
from fake_driver.kubeletplugin.server import PluginServer, RegistrationStatus
from fake_driver.rendering.slices import RenderedPool, render_node
from tests.fake_driver.kubeletplugin.grpc_support import (
    DRIVER,
    MINOR,
    NODE,
    cdi_specs,
    check_cdi_spec,
    claim,
    devices_of,
    env,
    make_plugin,
    prepare,
    resolve_cdi,
    unprepare,
)

# --- registration ----------------------------------------------------------------------------


def test_registration_handshake(server: PluginServer, root: Path) -> None:
    assert server.registration_socket == root / "registry" / f"{DRIVER}-reg.sock"
    with channel(server.registration_socket) as ch:
        stub = registration_stub(ch)
        info = stub.GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=10)
        assert (info.type, info.name, info.endpoint, list(info.supported_versions)) == (
            "DRAPlugin",
            DRIVER,
            str(root / "plugins" / DRIVER / "dra.sock"),
            ["v1.DRAPlugin", "v1beta1.DRAPlugin"],
        )
        assert Path(info.endpoint).is_socket()
        stub.NotifyRegistrationStatus(
            pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=True), timeout=10
        )
    assert server.wait_notified(5) == RegistrationStatus(True, "")


def test_unsupported_versions_are_advertised_and_the_kubelet_refusal_recorded(
    fleet: Fleet, root: Path, claims: StaticClaimSource
) -> None:
    refusal = "none of services supported by the plugin v9.DRAPlugin are supported by the kubelet"
    with PluginServer(
        make_plugin(fleet, root, claims),
        registry_dir=root / "registry",
        plugins_dir=root / "plugins",
        supported_versions=["v9.DRAPlugin"],
    ) as server:
        assert server.wait_notified(0) is None
        with channel(server.registration_socket) as ch:
            stub = registration_stub(ch)
            info = stub.GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=10)
            stub.NotifyRegistrationStatus(
                pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=False, error=refusal),
                timeout=10,
            )
        assert list(info.supported_versions) == ["v9.DRAPlugin"]
        assert server.wait_notified(5) == RegistrationStatus(False, refusal)
    assert not server.registration_socket.exists()
    assert not server.dra_socket.exists()


# --- prepare / unprepare -----------------------------------------------------------------------


def test_prepare_returns_the_allocated_device_and_its_cdi_spec(
    server: PluginServer, claims: StaticClaimSource, rendered: RenderedPool, root: Path
) -> None:
    claims.put(claim("uid-1", "one-gpu", ("gpu", "gpu-1")))

    resp = prepare(server, ("uid-1", "one-gpu"))

    assert resp.claims["uid-1"].error == ""
    assert devices_of(resp, "uid-1") == [(["gpu"], NODE, "gpu-1", [f"k8s.{DRIVER}/claim=uid-1-gpu-1"])]
    spec, device = resolve_cdi(root / "cdi", f"k8s.{DRIVER}/claim=uid-1-gpu-1")
    check_cdi_spec(spec)
    assert list(cdi_specs(root / "cdi")) == [f"k8s.{DRIVER}-claim_uid-1.json"]
    gpu1 = rendered.gpus[1].uuid
    assert env(spec, device) == {
        "NVIDIA_VISIBLE_DEVICES": gpu1,
        "DRA_CLAIM": "ns/one-gpu",
        "DRA_DEVICE_GPU_1": gpu1,
    }


def test_multi_device_claim_sees_every_gpu(
    server: PluginServer, claims: StaticClaimSource, rendered: RenderedPool, root: Path
) -> None:
    claims.put(claim("uid-2", "two", ("a", "gpu-0"), ("b", "gpu-1")))

    resp = prepare(server, ("uid-2", "two"))

    assert [d[2] for d in devices_of(resp, "uid-2")] == ["gpu-0", "gpu-1"]
    spec, device = resolve_cdi(root / "cdi", f"k8s.{DRIVER}/claim=uid-2-gpu-0")
    check_cdi_spec(spec)
    uuids = [g.uuid for g in rendered.gpus]
    assert env(spec, device)["NVIDIA_VISIBLE_DEVICES"] == ",".join(uuids)
    assert [d["containerEdits"]["env"] for d in spec["devices"]] == [
        [f"DRA_DEVICE_GPU_0={uuids[0]}"],
        [f"DRA_DEVICE_GPU_1={uuids[1]}"],
    ]


def test_static_mig_device_is_visible_by_its_mig_uuid(
    fleet: Fleet, root: Path, claims: StaticClaimSource
) -> None:
    node = fleet.node("mig-0")
    mig_dev = render_node(node, MINOR).slices[0]["spec"]["devices"][0]
    assert mig_dev["attributes"]["type"] == {"string": "mig"}
    claims.put(claim("uid-m", "mig", ("mig", mig_dev["name"]), node="mig-0"))
    with PluginServer(
        make_plugin(fleet, root, claims, node="mig-0"),
        registry_dir=root / "registry",
        plugins_dir=root / "plugins",
    ) as server:
        resp = prepare(server, ("uid-m", "mig"))
    (dev_id,) = devices_of(resp, "uid-m")[0][3]
    spec, device = resolve_cdi(root / "cdi", dev_id)
    mig_uuid = mig_dev["attributes"]["uuid"]["string"]
    assert mig_uuid.startswith("MIG-")
    assert env(spec, device)["NVIDIA_VISIBLE_DEVICES"] == mig_uuid


def test_prepare_twice_and_after_a_restart_returns_the_same_devices(
    fleet: Fleet, server: PluginServer, claims: StaticClaimSource, root: Path
) -> None:
    claims.put(claim("uid-1", "one-gpu", ("gpu", "gpu-0")))
    first = prepare(server, ("uid-1", "one-gpu"))
    spec_file = root / "cdi" / f"k8s.{DRIVER}-claim_uid-1.json"
    written = spec_file.read_text()

    second = prepare(server, ("uid-1", "one-gpu"))

    assert second == first
    assert spec_file.read_text() == written
    # A restarted plugin answers from its checkpoint, even with the claim gone from the API.
    restarted = make_plugin(fleet, root, StaticClaimSource())
    assert list(restarted.prepared) == ["uid-1"]
    again = restarted.prepare([ClaimRef("ns", "uid-1", "one-gpu")])["uid-1"]
    assert again.error == ""
    assert [(d.pool, d.device, d.cdi_device_ids) for d in again.devices] == [
        (NODE, "gpu-0", (f"k8s.{DRIVER}/claim=uid-1-gpu-0",))
    ]


def test_unprepare_twice_succeeds_and_removes_spec_and_checkpoint_entry(
    server: PluginServer, claims: StaticClaimSource, root: Path
) -> None:
    claims.put(claim("uid-1", "one-gpu", ("gpu", "gpu-0")))
    prepare(server, ("uid-1", "one-gpu"))
    checkpoint = root / "plugins" / DRIVER / "checkpoint.json"
    assert list(json.loads(checkpoint.read_text())["claims"]) == ["uid-1"]

    for _ in range(2):
        resp = unprepare(server, ("uid-1", "one-gpu"))
        assert dict(resp.claims) == {"uid-1": dra_v1_pb2.NodeUnprepareResourceResponse(error="")}
        assert cdi_specs(root / "cdi") == {}
        assert json.loads(checkpoint.read_text()) == {"version": 1, "claims": {}}


@pytest.mark.parametrize(
    ("stored", "error"),
    [
        (None, "ResourceClaim ns/c not found"),
        (
            claim("other-uid", "c", ("gpu", "gpu-0")),
            "ResourceClaim ns/c has UID other-uid, the kubelet asked for u",
        ),
        (claim("u", "c"), "ResourceClaim ns/c is not allocated"),
        (
            claim("u", "c", ("gpu", "gpu-0"), node="h100-9"),
            "ResourceClaim ns/c: device h100-9/gpu-0 is not on node h100-0",
        ),
        (
            claim("u", "c", ("gpu", "gpu-7")),
            "ResourceClaim ns/c: device gpu-7 is not published on node h100-0",
        ),
    ],
    ids=["unknown-claim", "recreated-claim", "not-allocated", "other-node", "unknown-device"],
)
def test_claims_that_cannot_be_prepared_get_an_error_and_nothing_is_written(
    server: PluginServer, claims: StaticClaimSource, root: Path, stored: Any, error: str
) -> None:
    if stored is not None:
        claims.put(stored)

    resp = prepare(server, ("u", "c"))

    assert list(resp.claims) == ["u"]
    assert resp.claims["u"].error == error
    assert list(resp.claims["u"].devices) == []
    assert cdi_specs(root / "cdi") == {}


def test_unprepare_of_an_unknown_claim_succeeds(server: PluginServer) -> None:
    resp = unprepare(server, ("never-prepared", "x"))
    assert dict(resp.claims) == {"never-prepared": dra_v1_pb2.NodeUnprepareResourceResponse(error="")}


def test_v1beta1_service_prepares_the_same_devices(server: PluginServer, claims: StaticClaimSource) -> None:
    claims.put(claim("uid-b", "beta", ("gpu", "gpu-1")))

    resp = prepare(server, ("uid-b", "beta"), api=dra_v1beta1_pb2)

    assert isinstance(resp, dra_v1beta1_pb2.NodePrepareResourcesResponse)
    assert devices_of(resp, "uid-b") == [(["gpu"], NODE, "gpu-1", [f"k8s.{DRIVER}/claim=uid-b-gpu-1"])]
