"""Simulated nodes: Node objects the kwok controller keeps Ready (lease heartbeats) and
whose bound pods it moves to Running (and to Succeeded/Failed on request)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from fake_driver.api.ownership import is_owned, owner_labels
from harness.kit import kinds
from harness.kit.kube import Kube, NotFoundError, Obj
from harness.kit.waits import TIMEOUTS, wait_for

POOL_LABEL = "dra-harness.io/pool"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_VALUE = "fake"  # the kwok controller manages the nodes carrying this (harness.clusters.kwok)


@dataclass(frozen=True)
class KwokPoolSpec:
    name: str
    count: int
    labels: Mapping[str, str] = field(default_factory=dict)
    cpu: str = "128"
    memory: str = "1Ti"
    pods: str = "110"
    # Extended resources the node advertises itself (the legacy device-plugin path).
    extended_resources: Mapping[str, str] = field(default_factory=dict)

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]


def node_manifest(pool: KwokPoolSpec, name: str) -> Obj:
    resources = {"cpu": pool.cpu, "memory": pool.memory, "pods": pool.pods, **pool.extended_resources}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                POOL_LABEL: pool.name,
                **owner_labels(),
                **pool.labels,
            },
            "annotations": {KWOK_ANNOTATION: KWOK_VALUE},
        },
        "spec": {},
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def node_ready(node: Obj) -> bool:
    """Ready, and the node lifecycle controller has lifted its not-ready taint (a pod tried
    before that is rejected once and waits out the scheduler's backoff)."""
    conditions = node.get("status", {}).get("conditions") or []
    taints = node.get("spec", {}).get("taints") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) and not any(
        t["key"] == "node.kubernetes.io/not-ready" for t in taints
    )


def create_pool(kube: Kube, pool: KwokPoolSpec, *, wait_ready: bool = True) -> list[str]:
    names = pool.node_names()
    for name in names:
        kube.create(node_manifest(pool, name))
    if wait_ready:
        wait_for(
            lambda: {
                n["metadata"]["name"]: node_ready(n)
                for n in kube.list(*kinds.NODE, label_selector=f"{POOL_LABEL}={pool.name}")
            },
            lambda seen: len(seen) == len(names) and all(seen.values()),
            timeout=TIMEOUTS.node_ready,
            describe=f"{len(names)} nodes of pool {pool.name} Ready",
        )
    return names


def delete_pool(kube: Kube, pool: KwokPoolSpec) -> None:
    """Deletes the pool's nodes that we created (the owner label): a node of the same name
    on an existing cluster that is not ours stays."""
    for name in pool.node_names():
        with contextlib.suppress(NotFoundError):
            if is_owned(kube.get(*kinds.NODE, name)):
                kube.delete(*kinds.NODE, name)
