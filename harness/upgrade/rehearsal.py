"""DRA workloads for an upgrade rehearsal: what `suites/upgrade` and `dra-harness upgrade`
create on a LocalCluster before a control-plane step and check after it.

    fleet = install_fleet(kube, objects, namespace, minor)
    made = create_workloads(kube, objects, fleet, "before", gang=True)
    before = allocations(kube, namespace)
    ... cluster.upgrade("1.37") ...
    assert survivors(kube, fleet, made) ...

Every kind a GPU fleet runs: a bridged pod (`nvidia.com/gpu` through the DeviceClass's
extendedResourceName, KEP-5004), a claim-template pod, a MIG pod (static MIG, a profile
selector) and, where the minor has the Workload API, a gang of two claim-template pods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from fake_driver.facts.personalities import get_personality
from fake_driver.fleetspec.fleet import Fleet, fleet_from_dict
from fake_driver.publishing.publisher import Publisher
from fake_driver.rendering.deviceclasses import render_device_classes
from harness.clusters.local.kubelets import DEFAULT_KUBELET_MODE
from harness.clusters.local.upgrade import (
    UpgradeRefused,
    crossed_removal_writers,
    served_kinds,
    stored_in_dropped_versions,
)
from harness.clusters.nodes import KwokPoolSpec, create_pool, delete_pool
from harness.core.errors import HarnessError
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of, wait_claims_gone
from harness.kit.gang import gang_api, gang_objects, join_gang
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created
from harness.kit.pods import phase
from harness.kit.waits import TIMEOUTS, wait_for

if TYPE_CHECKING:
    from harness.clusters.local.cluster import LocalCluster

PROFILE = "h100-80gb-hbm3"
PERSONALITY = "nvidia-v25.12"  # the first NVIDIA release whose gpu class maps nvidia.com/gpu
MIG_LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
ONE_G = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
Device = tuple[str, str, str]  # (driver, pool, device)


@dataclass(frozen=True)
class RehearsalFleet:
    namespace: str
    gpu_selector: dict[str, str]
    mig_selector: dict[str, str]
    extended_resource: str  # what the gpu class's extendedResourceName maps
    gpu_class: str = "gpu.nvidia.com"
    mig_class: str = "mig.nvidia.com"


@dataclass
class Workloads:
    """Pod names per kind made in one phase; `gang` is the gang's name, or "" without one."""

    pods: dict[str, list[str]] = field(default_factory=dict)
    gang: str = ""

    def names(self) -> list[str]:
        return [p for pods in self.pods.values() for p in pods]


def install_fleet(
    kube: Kube, objects: Created, namespace: str, minor: str, *, gpus: int = 8
) -> RehearsalFleet:
    """Two kwok GPU nodes, one static-MIG node, their slices and the personality's classes
    under their real names (the cluster is the rehearsal's own)."""
    personality = get_personality(PERSONALITY)
    pools = [KwokPoolSpec(f"{namespace}-gpu", 2), KwokPoolSpec(f"{namespace}-mig", 1)]
    for pool in pools:
        create_pool(kube, pool)
        objects.defer(f"delete pool {pool.name}", partial(delete_pool, kube, pool))
    fleet: Fleet = fleet_from_dict(
        {
            "pools": [
                {
                    "name": "gpu",
                    "nodes": pools[0].node_names(),
                    "gpus": gpus,
                    "personality": PERSONALITY,
                    "profile": PROFILE,
                },
                {
                    "name": "mig",
                    "nodes": pools[1].node_names(),
                    "gpus": 2,
                    "profile": PROFILE,
                    "personality": PERSONALITY,
                    "mig": {"mode": "static", "layout": MIG_LAYOUT},
                },
            ]
        }
    )
    publisher = Publisher(kube.api_client, fleet, minor)
    publisher.publish_all()
    objects.defer("remove the fleet's slices", publisher.remove_all)
    classes = render_device_classes(personality, compute_domains=False)
    for dc in classes:
        objects.create(dc)
    mapped = {c["metadata"]["name"]: c["spec"].get("extendedResourceName") for c in classes}
    return RehearsalFleet(
        namespace=namespace,
        gpu_selector={"dra-harness.io/pool": pools[0].name},
        mig_selector={"dra-harness.io/pool": pools[1].name},
        extended_resource=str(mapped["gpu.nvidia.com"]),
    )


def bridged_pod(fleet: RehearsalFleet, name: str) -> Obj:
    limits = {fleet.extended_resource: "1"}
    return b.pod(
        name, fleet.namespace, containers=[b.container(limits=limits)], node_selector=fleet.gpu_selector
    )


def _template_pod(objects: Created, name: str, request: Obj, selector: dict[str, str], ns: str) -> Obj:
    objects.create(b.claim_template(name, ns, [request]))
    return b.template_pod(name, ns, name, node_selector=selector)


def create_workloads(
    kube: Kube, objects: Created, fleet: RehearsalFleet, phase_name: str, *, gang_minor: str = ""
) -> Workloads:
    """One pod of every kind (and a gang of two on `gang_minor`'s Workload API), Running."""
    ns, made = fleet.namespace, Workloads()
    gpu = b.exact_request("gpu", fleet.gpu_class)
    mig = b.exact_request("gpu", fleet.mig_class, selectors=[ONE_G])
    pods = {
        "bridged": [bridged_pod(fleet, f"{phase_name}-bridged")],
        "template": [_template_pod(objects, f"{phase_name}-template", gpu, fleet.gpu_selector, ns)],
        "mig": [_template_pod(objects, f"{phase_name}-mig", mig, fleet.mig_selector, ns)],
    }
    if gang_minor:
        api, made.gang = gang_api(gang_minor), f"{phase_name}-gang"
        for obj in gang_objects(api, made.gang, ns, min_count=2):
            objects.create(obj)
        members = [_template_pod(objects, f"{made.gang}-{i}", gpu, fleet.gpu_selector, ns) for i in range(2)]
        pods["gang"] = [join_gang(p, api, made.gang) for p in members]
    for kind, bodies in pods.items():
        made.pods[kind] = [objects.create(body)["metadata"]["name"] for body in bodies]
    wait_running(kube, ns, made.names())
    return made


def wait_running(kube: Kube, namespace: str, names: list[str]) -> dict[str, str]:
    return wait_for(
        lambda: {n: phase(kube.get(*kinds.POD, n, namespace)) for n in names},
        lambda seen: all(p == "Running" for p in seen.values()),
        timeout=TIMEOUTS.pod_running,
        describe=f"pods {', '.join(names)} Running",
    )


def pod_allocations(
    kube: Kube, namespace: str, names: list[str]
) -> dict[str, list[tuple[str, str, list[Device]]]]:
    """pod -> [(claim name, claim uid, sorted devices)] for each of its claims."""
    return {
        n: sorted(
            (
                c["metadata"]["name"],
                c["metadata"]["uid"],
                sorted((r["driver"], r["pool"], r["device"]) for r in allocated_devices(c)),
            )
            for c in claims_of(kube, namespace, n)
        )
        for n in names
    }


def doubly_allocated(kube: Kube) -> dict[Device, list[str]]:
    """Devices that more than one claim of the cluster holds (none, in a healthy cluster)."""
    holders: dict[Device, list[str]] = {}
    for claim in kube.list(*kinds.RESOURCE_CLAIM):
        meta = claim["metadata"]
        for r in allocated_devices(claim):
            holders.setdefault((r["driver"], r["pool"], r["device"]), []).append(
                f"{meta['namespace']}/{meta['name']}"
            )
    return {d: h for d, h in holders.items() if len(h) > 1}


def delete_gang(kube: Kube, workloads: Workloads, namespace: str, minor: str) -> None:
    """The gang's pods and its Workload/PodGroup: what an upgrade across a Workload API
    version change needs first (harness.clusters.local.upgrade.STORAGE_DROPS)."""
    for name in workloads.pods.pop("gang", []):
        kube.delete(*kinds.POD, name, namespace)
    api = gang_api(minor)
    for obj in reversed(gang_objects(api, workloads.gang, namespace, min_count=2)):
        kube.delete(obj["apiVersion"], obj["kind"], workloads.gang, namespace)
    workloads.gang = ""


def rediscover(kube: Kube) -> None:
    """Forget the API discovery the client cached: the new minor serves other versions."""
    kube.dynamic.resources.invalidate_cache()


def has_gang(kube: Kube, minor: str) -> bool:
    """The minor has a Workload API and this cluster serves it (GenericWorkload, runtime-config)."""
    try:
        api = gang_api(minor)
    except HarnessError:
        return False
    return "workloads" in served_kinds(kube, api.api_version)


@dataclass
class StepResult:
    """What one control-plane step did to the workloads made before it."""

    before: str
    after: str
    seconds: float = 0.0
    refused_first: str = ""  # the refusal while objects of a dropped version still existed
    survivors: dict[str, str] = field(default_factory=dict)  # pod -> phase after the step
    allocations_kept: bool = False
    claims_left: list[str] = field(default_factory=list)  # claims of pods deleted at the step
    new: Workloads = field(default_factory=Workloads)  # later steps delete some of them
    new_kinds: list[str] = field(default_factory=list)  # of `new`, as made
    doubly_allocated: dict[Device, list[str]] = field(default_factory=dict)
    # objects written through a version `after` no longer serves: "<gv> <resource>/<name> by <managers>"
    removed_api_writers: list[str] = field(default_factory=list)


def step(
    cluster: LocalCluster,
    kube: Kube,
    objects: Created,
    fleet: RehearsalFleet,
    made: list[Workloads],
    to: str,
    kubelets: str = DEFAULT_KUBELET_MODE,
) -> StepResult:
    """One rehearsed step: stranded objects found first (the gang, when its Workload API
    version is dropped), a pod deleted while the step runs, the control plane replaced (and
    real nodes' kubelets as `kubelets` says: LocalCluster.upgrade), then survivors, their
    claims, garbage collection and fresh pods of every kind checked. The bridged pod deleted
    is the newest of `made[-1]`."""
    ns, result = fleet.namespace, StepResult(cluster.minor.name, to)
    for workloads in made:
        if workloads.gang and stored_in_dropped_versions(kube, result.before, to):
            try:
                cluster.upgrade(to, kubelets)
            except UpgradeRefused as err:
                result.refused_first = str(err)
            delete_gang(kube, workloads, ns, result.before)
            # Deletion is not instant (the PodGroup outlived it into the step in CI): the step
            # would refuse what is still stored.
            wait_for(
                partial(stored_in_dropped_versions, kube, result.before, to),
                lambda stranded: not stranded,
                timeout=TIMEOUTS.deletion,
                describe=f"the gang's objects that {to} cannot read gone",
            )
    result.removed_api_writers = [
        f"{w.removal.group_version} {w.resource}/{w.name} by {', '.join(w.managers)}"
        for w in crossed_removal_writers(kube, result.before, to)
    ]
    doomed = made[-1].pods["bridged"].pop()
    doomed_claims = [c["metadata"]["name"] for c in claims_of(kube, ns, doomed)]
    survivors = [p for w in made for p in w.names()]
    kept = pod_allocations(kube, ns, survivors)
    kube.delete(*kinds.POD, doomed, ns)
    result.seconds = cluster.upgrade(to, kubelets)
    rediscover(kube)
    result.survivors = wait_running(kube, ns, survivors)
    result.allocations_kept = pod_allocations(kube, ns, survivors) == kept
    wait_claims_gone(kube, ns, doomed_claims)
    result.claims_left = []
    result.new = create_workloads(
        kube, objects, fleet, f"after-{to}", gang_minor=to if has_gang(kube, to) else ""
    )
    result.new_kinds = list(result.new.pods)
    result.doubly_allocated = doubly_allocated(kube)
    return result
