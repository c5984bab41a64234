"""The scale benchmark's four modes on one fleet: what each mode's pods ask for and the
switches that make the same nodes serve each mode.

  plain     pods with a CPU request only
  legacy    nodes advertise nvidia.com/gpu themselves (device plugin); pods request it
  bridged   no node advertises it; the DeviceClass maps nvidia.com/gpu (extendedResourceName)
            to the 8 DRA devices each node publishes, so the same pods get DRA devices
  claims    pods use a ResourceClaimTemplate with a CEL selector on productName

All modes share one cluster, one set of nodes and one set of ResourceSlices, so they run
interleaved, one round after another, and drift on a shared machine hits every mode alike.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fake_driver.facts.profiles import get_profile
from fake_driver.fleetspec.fleet import Fleet, fleet_from_dict
from fake_driver.publishing.publisher import Publisher
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.nodes import KwokPoolSpec, node_manifest, node_ready
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.waits import wait_for

MODES = ("plain", "legacy", "bridged", "claims")
GPU = "nvidia.com/gpu"
GPUS_PER_NODE = 8
DRIVER = "gpu.nvidia.com"
PROFILE = "h100-80gb-hbm3"
PERSONALITY = "nvidia-v25.12"
NAMESPACE = "bench"
POOL = "bench"
BENCH_LABEL = "dra-harness.io/bench"
CLAIM_MODES = frozenset({"bridged", "claims"})
# What the scheduler calls the events a switch causes (its event_handling_duration_seconds
# labels, Resource + ActionType, the same in 1.36 and 1.37).
NODE_ALLOCATABLE_EVENT = "NodeUpdateNodeAllocatable"
DEVICE_CLASS_EVENT = "resource.k8s.io/DeviceClassUpdate"
EVENT_QUEUE = 1000  # client-go tools/record maxQueuedEvents: a component's events beyond it drop


def parallel(fn: Callable[[Any], object], items: list[Any], workers: int = 32) -> None:
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fn, items))


class BenchFleet:
    """N simulated nodes x G GPUs, published as DRA devices, switchable between modes."""

    def __init__(self, kube: Kube, cluster: LocalCluster, nodes: int, gpus: int = GPUS_PER_NODE):
        self.kube, self.cluster, self.gpus = kube, cluster, gpus
        self.pool = KwokPoolSpec(POOL, nodes)
        self.api = cluster.minor.resource_api  # versions.toml: the resource.k8s.io version served
        self.legacy_capacity = False
        self.bridged_class = False

    def setup(self) -> None:
        names = self.pool.node_names()
        parallel(lambda name: self.kube.create(node_manifest(self.pool, name)), names)
        wait_for(
            lambda: sum(1 for n in self.kube.list(*kinds.NODE) if node_ready(n)),
            lambda ready: ready == len(names),
            timeout=120 + 0.25 * len(names),  # kwok readies ~10 nodes/s on 2 busy cores
            describe=f"{len(names)} bench nodes Ready",
        )
        self._await_registered_events(names)
        Publisher(
            self.kube.api_client, bench_fleet(names, self.gpus), self.cluster.minor.name, dry_run_first=False
        ).publish_all()
        self.kube.create(device_class(self.api))
        self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        wait_for(
            lambda: self.kube.get(*kinds.SERVICE_ACCOUNT, "default", NAMESPACE),
            timeout=60,
            describe="default ServiceAccount of the bench namespace",
        )
        self.kube.create(claim_template(self.api))

    def _await_registered_events(self, names: list[str]) -> None:
        """The node lifecycle controller posts one RegisteredNode event a node: 500 writes
        that would otherwise land in the first repetition. Its event broadcaster queues at most
        1,000 (client-go's maxQueuedEvents) and drops the rest of a burst, so a larger fleet
        is done once that many arrived and the count held still for a second."""
        wanted, seen = set(names), [-1]

        def registered() -> int:
            events = self.kube.list(*kinds.EVENT, "default", field_selector="reason=RegisteredNode")
            seen.append(len(wanted.intersection(e["involvedObject"]["name"] for e in events)))
            return seen[-1]

        wait_for(
            registered,
            lambda n: n == len(wanted) or (n >= EVENT_QUEUE and n == seen[-2]),
            timeout=60 + 0.1 * len(wanted),
            interval=1.0,
            describe=f"{len(names)} bench nodes registered by the node lifecycle controller (events)",
        )

    def switch_to(self, mode: str) -> dict[str, int]:
        """Nodes advertise the GPUs themselves only for legacy (where they do, allocatable wins
        over the bridge); the class maps nvidia.com/gpu only for bridged. Returns the scheduler
        events the switch causes, by label: until it has handled them it schedules the old mode."""
        events: dict[str, int] = {}
        if self.legacy_capacity != (mode == "legacy"):
            self.legacy_capacity = mode == "legacy"
            value = str(self.gpus) if self.legacy_capacity else None
            patch = {"status": {"capacity": {GPU: value}, "allocatable": {GPU: value}}}
            parallel(lambda n: self.kube.patch_status("v1", "Node", n, patch), self.pool.node_names())
            events[NODE_ALLOCATABLE_EVENT] = self.pool.count
        if self.bridged_class != (mode == "bridged"):
            self.bridged_class = mode == "bridged"
            self.kube.patch(
                kinds.resource_api(self.api),
                "DeviceClass",
                DRIVER,
                {"spec": {"extendedResourceName": GPU if self.bridged_class else None}},
            )
            events[DEVICE_CLASS_EVENT] = 1
        return events


def bench_fleet(names: list[str], gpus: int = GPUS_PER_NODE) -> Fleet:
    """The fake driver's fleet: every node N x the profile's GPUs under one personality."""
    pool = {
        "name": POOL,
        "nodes": names,
        "profile": PROFILE,
        "gpus": gpus,
        "personality": PERSONALITY,
    }
    return fleet_from_dict({"pools": [pool]})


def device_class(api: str, bridged: bool = False) -> Obj:
    """The class all modes share; bridged mode maps nvidia.com/gpu to it."""
    return b.device_class(
        DRIVER,
        selectors=[f'device.driver == "{DRIVER}"'],
        extended_resource_name=GPU if bridged else None,
        api=api,
    )


def claim_template(api: str) -> Obj:
    product = get_profile(PROFILE).product_name  # the hardware fact lives in the profile
    selector = f'device.attributes["{DRIVER}"].productName == "{product}"'
    return b.claim_template("gpu", NAMESPACE, [b.exact_request("gpu", DRIVER, selectors=[selector])], api=api)


def pod(mode: str, name: str) -> Obj:
    labels = {BENCH_LABEL: "1"}
    if mode == "plain":
        return b.pod(name, NAMESPACE, labels=labels, containers=[b.container(requests={"cpu": "10m"})])
    if mode in ("legacy", "bridged"):
        return b.pod(name, NAMESPACE, labels=labels, containers=[b.container(limits={GPU: "1"})])
    return b.template_pod(name, NAMESPACE, "gpu", labels=labels)
