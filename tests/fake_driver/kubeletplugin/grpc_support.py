"""Playing the kubelet against the kubelet plugin: the fleet, claims as the scheduler writes
them, the plugin's gRPC calls, and CDI specs resolved as a container runtime does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from fake_driver._generated import dra_v1_pb2
from fake_driver.fleetspec.fleet import Fleet
from fake_driver.kubeletplugin.client import channel, dra_stub
from fake_driver.kubeletplugin.plugin import KubeletPlugin, StaticClaimSource, StatusWriter
from fake_driver.kubeletplugin.server import PluginServer

MINOR = (1, 37)
DRIVER = "gpu.nvidia.com"
FLEET = """
pools:
  - {name: h100, count: 1, profile: h100-80gb-hbm3, gpus: 2, personality: nvidia-v25.12}
  - name: mig
    count: 1
    profile: h100-80gb-hbm3
    gpus: 1
    personality: nvidia-v25.12
    mig: {mode: static, layout: [3g.40gb, 3g.40gb]}
"""
NODE = "h100-0"
# CDI spec rules (cncf-tags/container-device-interface specs-go / pkg/parser): kind is
# "<vendor>/<class>", device names are alphanumerics plus "_.:-", env entries are KEY=VALUE.
CDI_KIND = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?/[a-zA-Z0-9]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$")
CDI_NAME = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_.:-]*[a-zA-Z0-9])?$")
ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=.*$")


def make_plugin(
    fleet: Fleet,
    root: Path,
    claims: StaticClaimSource,
    node: str = NODE,
    *,
    shared: bool = False,
    status: StatusWriter | None = None,
) -> KubeletPlugin:
    """`shared`: one of several instances on one checkpoint (a rolling update); `status`: where
    a pool with device_status writes."""
    return KubeletPlugin(
        fleet.node(node),
        MINOR,
        claims,
        plugin_dir=root / "plugins" / DRIVER,
        cdi_root=root / "cdi",
        faults_file=root / "faults.json",
        shared=shared,
        status=status,
    )


def claim(uid: str, name: str, *devices: tuple[str, str], node: str = NODE, namespace: str = "ns") -> Any:
    """A ResourceClaim allocated to (request, device) pairs on `node`, as the scheduler writes it."""
    results = [{"request": r, "driver": DRIVER, "pool": node, "device": d} for r, d in devices]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"namespace": namespace, "name": name, "uid": uid},
        "status": {"allocation": {"devices": {"results": results}}} if devices else {},
    }


def prepare(server: PluginServer, *refs: tuple[str, str], api: Any = dra_v1_pb2) -> Any:
    with channel(server.dra_socket) as ch:
        stub = dra_stub(ch, "v1" if api is dra_v1_pb2 else "v1beta1")
        req = api.NodePrepareResourcesRequest(
            claims=[api.Claim(namespace="ns", uid=uid, name=name) for uid, name in refs]
        )
        return stub.NodePrepareResources(req, timeout=10)


def unprepare(server: PluginServer, *refs: tuple[str, str]) -> Any:
    with channel(server.dra_socket) as ch:
        stub = dra_stub(ch)
        req = dra_v1_pb2.NodeUnprepareResourcesRequest(
            claims=[dra_v1_pb2.Claim(namespace="ns", uid=uid, name=name) for uid, name in refs]
        )
        return stub.NodeUnprepareResources(req, timeout=10)


def devices_of(resp: Any, uid: str) -> list[tuple[list[str], str, str, list[str]]]:
    return [
        (list(d.request_names), d.pool_name, d.device_name, list(d.cdi_device_ids))
        for d in resp.claims[uid].devices
    ]


def cdi_specs(cdi_root: Path) -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in sorted(cdi_root.glob("*.json"))}


def resolve_cdi(cdi_root: Path, device_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Resolve a fully qualified CDI device ID the way a runtime does: (spec, device)."""
    kind, _, name = device_id.partition("=")
    for spec in cdi_specs(cdi_root).values():
        if spec["kind"] == kind:
            for d in spec["devices"]:
                if d["name"] == name:
                    return spec, d
    raise AssertionError(f"CDI device {device_id} is in no spec under {cdi_root}")


def check_cdi_spec(spec: dict[str, Any]) -> None:
    assert set(spec) == {"cdiVersion", "kind", "devices", "containerEdits"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", spec["cdiVersion"])
    assert CDI_KIND.match(spec["kind"]), spec["kind"]
    assert spec["devices"], "a CDI spec needs at least one device"
    for d in spec["devices"]:
        assert CDI_NAME.match(d["name"]), d["name"]
        assert all(ENV.match(e) for e in d["containerEdits"]["env"])
    assert all(ENV.match(e) for e in spec["containerEdits"]["env"])


def env(spec: dict[str, Any], device: dict[str, Any]) -> dict[str, str]:
    """What a container gets: spec-level edits, then the device's own."""
    pairs = [*spec["containerEdits"]["env"], *device["containerEdits"]["env"]]
    return dict(e.split("=", 1) for e in pairs)
