"""What tests/e2e/test_chart_kind.py reads of a kind cluster the chart installed the fake driver
on: its workers and pools, both DaemonSets' rollout, each worker's published GPUs, the kubelet's
registration of the plugin, the plugin's log and the CDI environment a claim's container gets."""

from __future__ import annotations

from typing import Any

import yaml

from fake_driver.facts.personalities import get_personality
from fake_driver.kubeletplugin.cdi import CLAIM_ENV, VISIBLE_DEVICES_ENV, device_env_name
from fake_driver.publishing.legacy import LEGACY_RESOURCE
from harness.chart.generate import MANIFEST_VALUES
from harness.clusters.kind.config import DEFAULT_POOLS
from harness.clusters.kind.provider import DRIVER_IMAGE
from harness.clusters.nodes import POOL_LABEL
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, node_slices
from harness.kit.kube import Kube, Obj
from harness.kit.nodepods import log_until
from harness.kit.waits import wait_for

TARGET = "make test-chart"
RELEASE, NAMESPACE = "fake-gpu", "fake-gpu"
KUBELET_PLUGIN, DEVICE_PLUGIN = "fake-driver-kubelet-plugin", "fake-driver-device-plugin"
BASE_VALUES = yaml.safe_load(MANIFEST_VALUES.read_text())
DRIVER = get_personality(BASE_VALUES["personality"]).driver
GPU_CLASS = DRIVER  # the personality's GPU class is named as its driver (files/personalities.yaml)
GPUS = {p["name"]: p["gpus"] for p in BASE_VALUES["fleet"]["pools"]}
DRA_POOL = next(p.name for p in DEFAULT_POOLS if not p.device_plugin)  # no device plugin there
LEGACY_POOL = next(p.name for p in DEFAULT_POOLS if p.device_plugin)
REPOSITORY, TAG = DRIVER_IMAGE.rsplit(":", 1)
# What kind needs on top of the kind path's values: the chart's classes (the manifests leave them
# to `python -m fake_driver install`), one bridging nvidia.com/gpu, the local image never pulled.
KIND_VALUES = {
    "deviceClass": {"create": True, "extendedResourceName": LEGACY_RESOURCE},
    "image": {"repository": REPOSITORY, "tag": TAG, "pullPolicy": "Never"},
    "kubeletPlugin": {"enabled": True},
    "devicePlugin": {"enabled": True},
}
# Bounds, with margin for three kind nodes on two busy cores: the plugins' pods started and
# Ready (the provider's own rollout bound); a claim pod through the scheduler, the kubelet's
# Prepare and containerd; the kubelet drops a gone plugin's slices after 30 s (docs/suites.md).
ROLLOUT_TIMEOUT, SLICES_TIMEOUT, POD_TIMEOUT = 180.0, 120.0, 120.0
SLICES_GONE_TIMEOUT = NAMESPACE_GONE_TIMEOUT = 120.0
HELM_WAIT = "120s"  # helm uninstall --wait


def workers(kube: Kube) -> dict[str, str]:
    """Worker node -> the pool its label names (kind workers are labelled by pool)."""
    nodes = kube.list(*kinds.NODE, label_selector=POOL_LABEL)
    return {n["metadata"]["name"]: n["metadata"]["labels"][POOL_LABEL] for n in nodes}


def worker(kube: Kube, pool: str) -> str:
    [node] = [n for n, p in workers(kube).items() if p == pool]
    return node


def pod_state(pod: Obj) -> str:
    """'Running, ready', or the phase and what its containers wait on (ErrImageNeverPull, ...)."""
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    if status.get("phase") == "Running" and containers and all(c.get("ready") for c in containers):
        return "Running, ready"
    waiting = [
        f"{c['name']} {w.get('reason')}: {w.get('message', '')}".strip()
        for c in containers
        if (w := (c.get("state") or {}).get("waiting"))
    ]
    return "; ".join([str(status.get("phase")), *waiting])


def rollout(kube: Kube) -> dict[str, dict[str, Any]]:
    """Per DaemonSet: its status counts and node -> state of each of its pods."""
    out: dict[str, dict[str, Any]] = {}
    for ds in (KUBELET_PLUGIN, DEVICE_PLUGIN):
        obj = kube.get(*kinds.DAEMON_SET, ds, NAMESPACE)
        status = obj.get("status") or {}
        pods = kube.list(*kinds.POD, NAMESPACE, label_selector=f"app.kubernetes.io/name={ds}")
        out[ds] = {
            "generation": (obj["metadata"].get("generation"), status.get("observedGeneration")),
            "desired": status.get("desiredNumberScheduled", 0),
            "updated": status.get("updatedNumberScheduled", 0),
            "available": status.get("numberAvailable", 0),
            "pods": {p["spec"].get("nodeName") or p["metadata"]["name"]: pod_state(p) for p in pods},
        }
    return out


def wait_rolled_out(kube: Kube, nodes: dict[str, str]) -> dict[str, dict[str, str]]:
    """Both DaemonSets rolled out: a ready pod on each node they select, none elsewhere."""
    legacy = {n for n, pool in nodes.items() if pool == LEGACY_POOL}
    want = {KUBELET_PLUGIN: set(nodes), DEVICE_PLUGIN: legacy}

    def done(state: dict[str, dict[str, Any]]) -> bool:
        return all(
            s["generation"][0] == s["generation"][1]
            and s["desired"] == s["updated"] == s["available"] == len(want[ds])
            and s["pods"] == dict.fromkeys(want[ds], "Running, ready")
            for ds, s in state.items()
        )

    state = wait_for(
        lambda: rollout(kube),
        done,
        timeout=ROLLOUT_TIMEOUT,
        interval=1,
        describe=f"{KUBELET_PLUGIN} on {sorted(want[KUBELET_PLUGIN])}, {DEVICE_PLUGIN} on {sorted(legacy)}",
    )
    return {ds: s["pods"] for ds, s in state.items()}


def published(kube: Kube, node: str) -> dict[str, str]:
    """Device -> GPU UUID of the driver's slices of `node`."""
    return {
        d["name"]: d["attributes"]["uuid"]["string"]
        for s in node_slices(kube, node, DRIVER)
        for d in s["spec"].get("devices") or ()
    }


def wait_published(kube: Kube, node: str, count: int) -> dict[str, str]:
    return wait_for(
        lambda: published(kube, node),
        lambda found: len(found) == count,
        timeout=SLICES_TIMEOUT,
        describe=f"{count} {DRIVER} devices in the slices of {node}",
    )


def expected_env(kube: Kube, node: str, claim: Obj) -> dict[str, str]:
    """What the plugin's CDI spec gives a container of the claim: its devices' UUIDs as published."""
    uuids = published(kube, node)
    devices = [r["device"] for r in allocated_devices(claim)]
    env = {device_env_name(d): uuids[d] for d in devices}
    meta = claim["metadata"]
    visible = ",".join(uuids[d] for d in devices)
    return env | {VISIBLE_DEVICES_ENV: visible, CLAIM_ENV: f"{meta['namespace']}/{meta['name']}"}


def registered(kube: Kube, node: str) -> list[str]:
    """The kubelet's plugin_manager_total_plugins lines of the driver's registration socket in its
    actual state of the world (registered; pkg/kubelet/pluginmanager/metrics @ v1.35.4)."""
    status, body = kube.raw_get(f"/api/v1/nodes/{node}/proxy/metrics")
    assert status == 200, body[:300]
    return [
        line
        for line in body.splitlines()
        if line.startswith("plugin_manager_total_plugins{") and DRIVER in line and "actual_state" in line
    ]


def wait_registered(kube: Kube, node: str) -> list[str]:
    return wait_for(
        lambda: registered(kube, node),
        lambda lines: any(line.endswith(" 1") for line in lines),
        timeout=SLICES_TIMEOUT,
        describe=f"{DRIVER}'s plugin registered with the kubelet of {node}",
    )


def plugin_log(kube: Kube, node: str) -> str:
    [pod] = kube.list(
        *kinds.POD,
        NAMESPACE,
        label_selector=f"app.kubernetes.io/name={KUBELET_PLUGIN}",
        field_selector=f"spec.nodeName={node}",
    )
    name, describe = pod["metadata"]["name"], f"the kubelet plugin on {node} serving (its log)"
    return log_until(kube, NAMESPACE, name, "serving ", describe)


def plugin_pods(kube: Kube) -> list[tuple[str, str, str, str]]:
    pods = kube.list(
        *kinds.POD, NAMESPACE, label_selector=f"app.kubernetes.io/name in ({KUBELET_PLUGIN},{DEVICE_PLUGIN})"
    )
    return [("v1", "Pod", NAMESPACE, p["metadata"]["name"]) for p in pods]
