"""The GPU fleet of a `dra-harness cluster up` cluster: kwok nodes for every pool of a
fake_driver fleet file, `nvidia.com/gpu` on its device-plugin pools, the personalities'
DeviceClasses, and the command of the fake driver's publisher, which the supervisor keeps
running. `fleet_status` is what `cluster status` prints per pool.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fake_driver.api.ownership import labelled
from fake_driver.core.errors import FakeDriverError
from fake_driver.fleetspec.fleet import Fleet, load_fleet
from fake_driver.publishing import installer, legacy
from harness.clusters.nodes import POOL_LABEL, KwokPoolSpec, node_manifest, node_ready
from harness.core.errors import HarnessError
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.waits import TIMEOUTS, wait_for

DEMO_FLEET = Path(__file__).with_name("demo-fleet.yaml")
FLEET_COPY = "fleet.yaml"  # in the cluster's state dir: the user may edit or delete theirs


def read_fleet(path: Path) -> Fleet:
    """The fleet file, or one line saying what is wrong with it."""
    try:
        return load_fleet(path)
    except (FakeDriverError, OSError) as err:
        raise HarnessError(f"fleet {path}: {err}") from None


def create_fleet(kube: Kube, fleet: Fleet) -> None:
    """Nodes (Ready), legacy capacity, then DeviceClasses: the order a publisher needs."""
    create_fleet_nodes(kube, fleet)
    print("fleet: installing DeviceClasses", flush=True)  # the supervisor's log
    for personality in {p.personality.name: p.personality for p in fleet.pools if p.dra}.values():
        # The chart's gpuResourcesEnabledOverride: the fleet file is the user's explicit choice,
        # double-stack pools included (the ledger and the scan name those).
        installer.install(kube.api_client, personality, fleet=fleet, gpu_resources_enabled_override=True)
    for raw_class in fleet.device_classes:  # the raw pools' drivers' own, as exported
        kube.create(labelled({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", **raw_class}))


def create_fleet_nodes(kube: Kube, fleet: Fleet) -> None:
    """The fleet's kwok nodes, Ready, with nvidia.com/gpu on its device-plugin pools; no
    DeviceClasses (where a chart brings them: charts/dra-harness-fake-gpu)."""
    names = {*fleet.node_names, *fleet.raw_node_names}
    print(f"fleet: {len(names)} nodes: creating", flush=True)  # the supervisor's log
    for pool, members in fleet.node_pools:
        for name in members:
            kube.create(node_manifest(KwokPoolSpec(pool, len(members)), name))

    def readiness() -> tuple[int, list[str]]:
        """Ready nodes, and the first few that are not: a short last state for a large fleet."""
        ready = {n["metadata"]["name"] for n in kube.list(*kinds.NODE) if node_ready(n)} & names
        return len(ready), sorted(names - ready)[:5]

    wait_for(
        readiness,
        lambda seen: seen[0] == len(names),
        timeout=TIMEOUTS.node_ready,
        describe=f"the fleet's {len(names)} nodes Ready (ready, first not ready)",
    )
    print("fleet: nodes Ready; advertising legacy GPUs", flush=True)
    legacy.advertise(kube.api_client, fleet)


def wait_published(kube: Kube, fleet: Fleet, publishing: Callable[[], None]) -> None:
    """Until every DRA node of the fleet has its driver's slices: `cluster up` says ready only
    then (the publisher's first pass takes a moment after it starts). `publishing` raises when
    the publisher has exited."""
    wanted = {(n, p.personality.driver) for p in fleet.pools if p.dra for n in p.node_names}
    wanted |= {(n, d) for p in fleet.raw_pools for d in p.drivers for n in p.node_names}
    print(f"fleet: waiting for the slices of {len(wanted)} DRA nodes", flush=True)

    def seen() -> set[tuple[str, str]]:
        publishing()
        slices = kube.list(*kinds.RESOURCE_SLICE)
        return {(s["spec"].get("nodeName"), s["spec"]["driver"]) for s in slices} & wanted

    wait_for(
        seen,
        lambda have: have == wanted,
        timeout=TIMEOUTS.node_ready,
        describe=f"the fleet's slices on its {len({n for n, _ in wanted})} DRA nodes",
    )


def publisher_argv(fleet_file: Path, kubeconfig: Path) -> list[str]:
    """The fake driver's publisher, reconciling every 5 s until SIGTERM (then it removes its slices)."""
    publish = ["publish", "--fleet", str(fleet_file), "--kubeconfig", str(kubeconfig), "--watch"]
    return [sys.executable, "-m", "fake_driver", *publish]


@dataclass(frozen=True)
class PoolStatus:
    pool: str
    nodes: int
    ready: int
    published: int  # DRA devices in the pool's ResourceSlices
    allocated: int  # of them, in allocated claims
    legacy: int  # nvidia.com/gpu allocatable (device plugin)
    legacy_requested: int  # nvidia.com/gpu requested by pods bound there


def fleet_status(kube: Kube) -> list[PoolStatus]:
    """Per pool label: nodes, GPUs published and allocated through DRA, and legacy GPUs."""
    nodes = kube.list(*kinds.NODE)
    pool_of = {n["metadata"]["name"]: n["metadata"].get("labels", {}).get(POOL_LABEL, "-") for n in nodes}
    published: Counter[str] = Counter()
    for s in kube.list(*kinds.RESOURCE_SLICE):
        published[pool_of.get(s["spec"].get("nodeName") or "", "-")] += len(s["spec"].get("devices") or [])
    allocated: Counter[str] = Counter()
    for claim in kube.list(*kinds.RESOURCE_CLAIM):
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
        for r in results or []:
            allocated[pool_of.get(r.get("pool", ""), "-")] += 1  # the fake driver's pool is its node
    requested: Counter[str] = Counter()
    for pod in kube.list(*kinds.POD):
        node = pod.get("spec", {}).get("nodeName")
        if node and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            for c in pod["spec"].get("containers", []):
                want = ((c.get("resources") or {}).get("requests") or {}).get(legacy.LEGACY_RESOURCE)
                requested[pool_of.get(node, "-")] += int(want or 0)
    return [
        PoolStatus(
            pool=pool,
            nodes=sum(1 for p in pool_of.values() if p == pool),
            ready=sum(1 for n in nodes if pool_of[n["metadata"]["name"]] == pool and node_ready(n)),
            published=published[pool],
            allocated=allocated[pool],
            legacy=sum(legacy.advertised(n) for n in nodes if pool_of[n["metadata"]["name"]] == pool),
            legacy_requested=requested[pool],
        )
        for pool in sorted(set(pool_of.values()))
    ]
