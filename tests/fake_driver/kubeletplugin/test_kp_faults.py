"""The kubelet plugin under injected faults and a broken checkpoint, played as the kubelet
would over its unix sockets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest

from fake_driver.fleetspec.fleet import Fleet
from fake_driver.kubeletplugin.checkpoint import CheckpointError
from fake_driver.kubeletplugin.plugin import StaticClaimSource
from fake_driver.kubeletplugin.server import PluginServer
from tests.fake_driver.kubeletplugin.grpc_support import (
    DRIVER,
    cdi_specs,
    claim,
    devices_of,
    make_plugin,
    prepare,
    unprepare,
)

# --- faults ---------------------------------------------------------------------------------


def test_injected_claim_error_fails_only_that_claim(
    server: PluginServer, claims: StaticClaimSource, root: Path
) -> None:
    claims.put(claim("uid-a", "a", ("gpu", "gpu-0")))
    claims.put(claim("uid-b", "b", ("gpu", "gpu-1")))
    (root / "faults.json").write_text(
        json.dumps({"prepareErrors": {"ns/a": "injected: GPU fell off the bus"}})
    )

    resp = prepare(server, ("uid-a", "a"), ("uid-b", "b"))

    assert resp.claims["uid-a"].error == "injected: GPU fell off the bus"
    assert list(resp.claims["uid-a"].devices) == []
    assert [d[2] for d in devices_of(resp, "uid-b")] == ["gpu-1"]
    assert list(cdi_specs(root / "cdi")) == [f"k8s.{DRIVER}-claim_uid-b.json"]


def test_injected_unprepare_error_keeps_the_claim_prepared(
    server: PluginServer, claims: StaticClaimSource, root: Path
) -> None:
    claims.put(claim("uid-a", "a", ("gpu", "gpu-0")))
    prepare(server, ("uid-a", "a"))
    (root / "faults.json").write_text(json.dumps({"unprepareErrors": {"*": "injected: busy"}}))

    resp = unprepare(server, ("uid-a", "a"))

    assert resp.claims["uid-a"].error == "injected: busy"
    assert list(cdi_specs(root / "cdi")) == [f"k8s.{DRIVER}-claim_uid-a.json"]
    assert list(server.plugin.prepared) == ["uid-a"]


def test_injected_grpc_error_fails_the_call_and_the_retry_succeeds(
    server: PluginServer, claims: StaticClaimSource, root: Path
) -> None:
    claims.put(claim("uid-a", "a", ("gpu", "gpu-0")))
    faults = root / "faults.json"
    faults.write_text(json.dumps({"grpcError": "injected: plugin overloaded"}))

    with pytest.raises(grpc.RpcError) as err:
        prepare(server, ("uid-a", "a"))
    call: Any = err.value
    assert (call.code(), call.details()) == (grpc.StatusCode.UNAVAILABLE, "injected: plugin overloaded")
    assert server.plugin.prepared == {}

    faults.unlink()
    assert [d[2] for d in devices_of(prepare(server, ("uid-a", "a")), "uid-a")] == ["gpu-0"]


def test_unreadable_checkpoint_stops_the_plugin_with_one_line(
    fleet: Fleet, root: Path, claims: StaticClaimSource
) -> None:
    path = root / "plugins" / DRIVER / "checkpoint.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 2, "claims": {}}))

    with pytest.raises(CheckpointError) as err:
        make_plugin(fleet, root, claims)

    assert str(err.value) == f"checkpoint {path} has version 2; this plugin reads version 1"
