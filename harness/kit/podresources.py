"""The kubelet's PodResources API as GPU monitoring agents read it (List, Get) over the socket
`<kubelet root>/pod-resources/kubelet.sock`: which DRA devices each container holds (KEP-3695,
`dynamic_resources`; KubeletPodResourcesDynamicResources and KubeletPodResourcesGet beta and on
by default from 1.34, GA in 1.36: pkg/features/kube_features.go @ v1.34.4, v1.36.3, v1.37.2)
and which device-plugin devices (`devices`). Messages: k8s.io/kubelet@v0.37.2
pkg/apis/podresources/v1/api.proto (fake_driver/_generated/podresources_v1_pb2*)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from fake_driver._generated import podresources_v1_pb2 as pb
from fake_driver._generated import podresources_v1_pb2_grpc as pb_grpc
from harness.kit.waits import TIMEOUTS

SOCKET = Path("pod-resources") / "kubelet.sock"


@dataclass(frozen=True)
class Held:
    """One device a container holds, as the kubelet reports it."""

    container: str
    source: str  # "dra <claim namespace>/<claim name>" or "device-plugin <resource>"
    device: str  # "<driver>/<pool>/<device>" (DRA) or the device ID (device plugin)
    cdi: tuple[str, ...] = ()


def _held(pod: Any) -> list[Held]:
    out = []
    for c in pod.containers:
        for d in c.devices:
            out += [Held(c.name, f"device-plugin {d.resource_name}", i) for i in d.device_ids]
        for r in c.dynamic_resources:
            for cr in r.claim_resources:
                device = f"{cr.driver_name}/{cr.pool_name}/{cr.device_name}"
                cdi = tuple(x.name for x in cr.cdi_devices)
                out.append(Held(c.name, f"dra {r.claim_namespace}/{r.claim_name}", device, cdi))
    return out


def _stub(kubelet_root: Path) -> tuple[grpc.Channel, Any]:
    channel = grpc.insecure_channel(f"unix://{kubelet_root / SOCKET}")
    return channel, pb_grpc.PodResourcesListerStub(channel)  # type: ignore[no-untyped-call]


def list_held(kubelet_root: Path) -> dict[str, list[Held]]:
    """`namespace/name` -> what its containers hold, for every pod the kubelet lists."""
    channel, stub = _stub(kubelet_root)
    with channel:
        resp = stub.List(pb.ListPodResourcesRequest(), timeout=TIMEOUTS.api_request)
    return {f"{p.namespace}/{p.name}": _held(p) for p in resp.pod_resources}


def get_held(kubelet_root: Path, namespace: str, name: str) -> list[Held]:
    """What one pod's containers hold (Get); the kubelet answers NOT_FOUND-style errors for a
    pod it does not run, raised as grpc.RpcError."""
    channel, stub = _stub(kubelet_root)
    with channel:
        request = pb.GetPodResourcesRequest(pod_name=name, pod_namespace=namespace)
        resp = stub.Get(request, timeout=TIMEOUTS.api_request)
    return _held(resp.pod_resources)
