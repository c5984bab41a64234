"""The kubelet's side of the sockets, for tests and tools that play the kubelet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc

from fake_driver._generated import (
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2_grpc,
)


def channel(socket: Path | str) -> grpc.Channel:
    """An insecure channel to a unix socket, as the kubelet dials plugins."""
    return grpc.insecure_channel(f"unix://{socket}")


def registration_stub(ch: grpc.Channel) -> Any:
    return pluginregistration_v1_pb2_grpc.RegistrationStub(ch)  # type: ignore[no-untyped-call]


def dra_stub(ch: grpc.Channel, version: str = "v1") -> Any:
    """``v1`` or ``v1beta1`` DRAPlugin stub."""
    if version == "v1":
        return dra_v1_pb2_grpc.DRAPluginStub(ch)  # type: ignore[no-untyped-call]
    if version == "v1beta1":
        return dra_v1beta1_pb2_grpc.DRAPluginStub(ch)  # type: ignore[no-untyped-call]
    raise ValueError(f"unknown DRA API version {version!r}; valid: v1, v1beta1")
