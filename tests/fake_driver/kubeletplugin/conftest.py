"""Fixtures of the kubelet plugin's gRPC tests: one fleet, a short temporary root (unix
socket paths have at most 107 bytes), the claims the plugin reads and the running server."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_driver.fleetspec.fleet import Fleet, parse_fleet
from fake_driver.kubeletplugin.plugin import StaticClaimSource
from fake_driver.kubeletplugin.server import PluginServer
from fake_driver.rendering.slices import RenderedPool, render_node
from tests.fake_driver.kubeletplugin.grpc_support import FLEET, MINOR, NODE, make_plugin


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return parse_fleet(FLEET)


@pytest.fixture(scope="module")
def rendered(fleet: Fleet) -> RenderedPool:
    return render_node(fleet.node(NODE), MINOR)


@pytest.fixture
def root() -> Iterator[Path]:
    # Short path: unix socket paths are limited to 107 bytes.
    d = Path(tempfile.mkdtemp(prefix="kp-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def claims() -> StaticClaimSource:
    return StaticClaimSource()


@pytest.fixture
def server(fleet: Fleet, root: Path, claims: StaticClaimSource) -> Iterator[PluginServer]:
    with PluginServer(
        make_plugin(fleet, root, claims), registry_dir=root / "registry", plugins_dir=root / "plugins"
    ) as s:
        yield s
