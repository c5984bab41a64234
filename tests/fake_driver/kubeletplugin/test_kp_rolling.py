"""Two instances of the kubelet plugin side by side (a rolling update): sockets named per
instance as k8s.io/dynamic-resource-allocation@v0.37.2 kubeletplugin/draplugin.go names them,
and one shared state, so a claim prepared by one instance is unprepared by the other."""

from __future__ import annotations

import json
from pathlib import Path

from fake_driver.fleetspec.fleet import Fleet
from fake_driver.kubeletplugin.plugin import StaticClaimSource
from fake_driver.kubeletplugin.server import PluginServer, registration_socket_name, socket_paths
from tests.fake_driver.kubeletplugin.grpc_support import DRIVER, claim, make_plugin, prepare, unprepare

REGISTRY = Path("/var/lib/kubelet/plugins_registry")  # kubeletplugin.KubeletRegistryDir
UID = "0c8c2a9e-7f3c-4b1e-9d6a-2f5e1b7c3d40"


def test_sockets_are_named_per_instance_as_the_kubeletplugin_library_names_them() -> None:
    assert socket_paths(REGISTRY, Path("/p"), DRIVER) == (
        Path(f"/p/{DRIVER}/dra.sock"),
        REGISTRY / f"{DRIVER}-reg.sock",
    )
    assert socket_paths(REGISTRY, Path("/p"), DRIVER, UID) == (
        Path(f"/p/{DRIVER}/dra-{UID}.sock"),
        REGISTRY / f"{DRIVER}-{UID}-reg.sock",
    )


def test_a_long_registration_path_falls_back_to_hashed_names_that_fit() -> None:
    long_driver = "d" * 40 + ".example.com"
    hashed = registration_socket_name(REGISTRY, long_driver, UID)
    assert hashed.startswith(f"{long_driver}-")
    assert hashed.endswith("-reg.sock")
    assert len(hashed) == len(long_driver) + 1 + 11 + len("-reg.sock")  # base64url of 8 bytes
    shortest = registration_socket_name(REGISTRY, "e" * 80 + ".example.com", UID)
    assert shortest.startswith("dra-")
    assert len(shortest) == len("dra-") + 22 + len("-reg.sock")  # base64url of 16 bytes
    assert len(str(REGISTRY / shortest)) <= 108
    assert registration_socket_name(REGISTRY, long_driver, UID + "x") != hashed


def test_what_one_instance_prepared_the_other_unprepares(fleet: Fleet, root: Path) -> None:
    claims = StaticClaimSource([claim("uid-1", "c", ("gpu", "gpu-0"))])

    def server(instance: str) -> PluginServer:
        return PluginServer(
            make_plugin(fleet, root, claims, shared=True),
            registry_dir=root / "registry",
            plugins_dir=root / "plugins",
            instance=instance,
        )

    with server("a") as a, server("b") as b:
        assert a.dra_socket != b.dra_socket
        assert a.registration_socket != b.registration_socket
        assert prepare(a, ("uid-1", "c")).claims["uid-1"].error == ""
        assert list(b.plugin.prepared) == ["uid-1"]  # read afresh from the shared checkpoint

        assert unprepare(b, ("uid-1", "c")).claims["uid-1"].error == ""

        assert a.plugin.prepared == {}
    checkpoint = json.loads((root / "plugins" / DRIVER / "checkpoint.json").read_text())
    assert checkpoint == {"version": 1, "claims": {}}
    assert (root / "plugins" / DRIVER / "serialize.lock").exists()
    assert not list((root / "cdi").iterdir())
