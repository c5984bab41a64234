"""The migration guide's recommended rollout, one labeled node pool at a time, as plain
functions over a Kube and a pool description:

    label -> cordon -> drain -> exclude from the device plugin -> install the DRA driver
          -> ensure the DeviceClass (extendedResourceName) -> uncordon

and `rollback_pool`, the reverse for one pool:

    cordon -> drain -> uninstall the DRA driver -> readmit the device plugin (relabel)
           -> uncordon

Every step waits (bounded, named) until its effect is observable, and `migrate_pool` /
`rollback_pool` call `on_step(name)` after each one, so a caller can assert its invariants
at every step. Device-plugin exclusion is pluggable (`DevicePlugin`): the simulated plugin
(fake_driver.legacy: node status stops advertising `nvidia.com/gpu`), or a real plugin's
DaemonSet, whose node affinity gets `STACK_LABEL NotIn [dra]` so labelled pools lose it.
The driver install/uninstall is a callable (e.g. publishing the fake driver's slices, or
`helm install` for a real one); the step waits for the pool's ResourceSlices.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from kubernetes import client

from fake_driver import legacy
from fake_driver.fleet import Fleet
from harness.builders import resource_api
from harness.kube import Kube, NotFoundError, Obj
from harness.verification import devices_per_node
from harness.waits import TIMEOUTS, wait_for

STACK_LABEL = "dra-harness.io/gpu-stack"  # which mechanism manages the node's GPUs
STACK_DRA = "dra"
STACK_DEVICE_PLUGIN = "device-plugin"
RESOURCE_V1 = resource_api()

ClassOutcome = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class Pool:
    """A node pool to move: its name, its nodes and the DRA driver that takes it over."""

    name: str
    nodes: tuple[str, ...]
    driver: str  # e.g. gpu.nvidia.com
    resource: str = legacy.LEGACY_RESOURCE  # the legacy name the DeviceClass maps


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    uid: str
    node: str


@dataclass
class RolloutReport:
    steps: list[str] = field(default_factory=list)
    drained: list[PodRef] = field(default_factory=list)
    device_class: ClassOutcome | None = None


OnStep = Callable[[str], object]


# -- small API helpers ---------------------------------------------------------------------


def _nodes(kube: Kube, names: Iterable[str]) -> dict[str, Obj]:
    wanted = set(names)
    return {n["metadata"]["name"]: n for n in kube.list("v1", "Node") if n["metadata"]["name"] in wanted}


# -- steps ---------------------------------------------------------------------------------


def label_pool(kube: Kube, nodes: Iterable[str], labels: Mapping[str, str | None]) -> None:
    """Set (or, with None, remove) labels on every node of the pool."""
    for name in nodes:
        kube.patch("v1", "Node", name, {"metadata": {"labels": dict(labels)}})


def cordon(kube: Kube, nodes: Iterable[str], unschedulable: bool = True) -> None:
    names = list(nodes)
    for name in names:
        kube.patch("v1", "Node", name, {"spec": {"unschedulable": unschedulable or None}})
    wait_for(
        lambda: {n: bool(o["spec"].get("unschedulable")) for n, o in _nodes(kube, names).items()},
        lambda seen: seen == dict.fromkeys(names, unschedulable),
        timeout=TIMEOUTS.api_object,
        describe=f"nodes {', '.join(names)} {'cordoned' if unschedulable else 'uncordoned'}",
    )


def uncordon(kube: Kube, nodes: Iterable[str]) -> None:
    cordon(kube, nodes, unschedulable=False)


def _daemonset_owned(pod: Obj) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in pod["metadata"].get("ownerReferences") or [])


def pods_on(kube: Kube, nodes: Iterable[str], *, daemonsets: bool = False) -> list[Obj]:
    """Pods bound to `nodes` (all namespaces); DaemonSet pods only with daemonsets=True."""
    out = []
    for node in nodes:
        for p in kube.list("v1", "Pod", field_selector=f"spec.nodeName={node}"):
            if daemonsets or not _daemonset_owned(p):
                out.append(p)
    return out


def drain(kube: Kube, nodes: Iterable[str], *, evict: bool = True) -> list[PodRef]:
    """Evict (or delete) every pod on `nodes` except DaemonSet pods, like
    `kubectl drain --ignore-daemonsets --force`, and wait until they are gone."""
    names = list(nodes)
    doomed = [
        PodRef(p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["uid"], p["spec"]["nodeName"])
        for p in pods_on(kube, names)
    ]
    core = client.CoreV1Api(kube.api_client)
    for ref in doomed:
        try:
            if evict:
                core.create_namespaced_pod_eviction(
                    ref.name,
                    ref.namespace,
                    client.V1Eviction(
                        metadata=client.V1ObjectMeta(name=ref.name, namespace=ref.namespace),
                        delete_options=client.V1DeleteOptions(
                            preconditions=client.V1Preconditions(uid=ref.uid)
                        ),
                    ),
                )
            else:
                kube.delete("v1", "Pod", ref.name, ref.namespace)
        except client.exceptions.ApiException as err:
            if err.status != 404:
                raise
    uids = {r.uid for r in doomed}
    wait_for(
        lambda: sorted(
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in pods_on(kube, names)
            if p["metadata"]["uid"] in uids
        ),
        lambda left: left == [],
        timeout=TIMEOUTS.deletion,
        describe=f"pods drained from {', '.join(names)}",
    )
    return doomed


class DevicePlugin(Protocol):
    """How a pool is taken away from (and given back to) the legacy device plugin."""

    def exclude(self, nodes: Sequence[str]) -> None: ...

    def wait_excluded(self, nodes: Sequence[str]) -> None: ...

    def include(self, nodes: Sequence[str]) -> None: ...

    def wait_included(self, nodes: Sequence[str]) -> None: ...


def _advertised(kube: Kube, nodes: Sequence[str]) -> dict[str, int]:
    return {n: legacy.advertised(o) for n, o in _nodes(kube, nodes).items()}


@dataclass
class SimulatedDevicePlugin:
    """fake_driver.legacy: the plugin's effect on node status, patched directly."""

    kube: Kube
    fleet: Fleet

    def exclude(self, nodes: Sequence[str]) -> None:
        legacy.withdraw(self.kube.api_client, nodes)

    def wait_excluded(self, nodes: Sequence[str]) -> None:
        wait_for(
            lambda: _advertised(self.kube, nodes),
            lambda seen: seen == dict.fromkeys(nodes, 0),
            timeout=TIMEOUTS.api_object,
            describe=f"{legacy.LEGACY_RESOURCE} no longer advertised on {', '.join(nodes)}",
        )

    def include(self, nodes: Sequence[str]) -> None:
        legacy.advertise(self.kube.api_client, self.fleet, nodes)

    def wait_included(self, nodes: Sequence[str]) -> None:
        want = {n: self.fleet.node(n).pool.gpus for n in nodes}
        wait_for(
            lambda: _advertised(self.kube, nodes),
            lambda seen: seen == want,
            timeout=TIMEOUTS.api_object,
            describe=f"{legacy.LEGACY_RESOURCE} advertised again on {', '.join(nodes)}",
        )


def exclusion_expression(key: str = STACK_LABEL, values: Sequence[str] = (STACK_DRA,)) -> Obj:
    return {"key": key, "operator": "NotIn", "values": sorted(set(values))}


def device_plugin_affinity(
    affinity: Obj | None, key: str = STACK_LABEL, values: Sequence[str] = (STACK_DRA,)
) -> Obj:
    """The DaemonSet's pod affinity with nodes labelled `key in values` excluded.

    nodeSelectorTerms are ORed, so the NotIn expression goes into every term (an existing
    NotIn on the same key gets the values added); with no required terms, one term is made.
    Everything else (preferred terms, pod affinity) is kept. Idempotent; the input is not
    modified."""
    out = copy.deepcopy(affinity) if affinity else {}
    node_affinity = out.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:
        exprs = term.setdefault("matchExpressions", [])
        same = [e for e in exprs if e.get("key") == key and e.get("operator") == "NotIn"]
        if same:
            same[0]["values"] = sorted({*same[0].get("values", []), *values})
        else:
            exprs.append(exclusion_expression(key, values))
    required["nodeSelectorTerms"] = terms
    return out


def patch_device_plugin_daemonset(
    kube: Kube, namespace: str, name: str, key: str = STACK_LABEL, values: Sequence[str] = (STACK_DRA,)
) -> Obj:
    """Exclude `key in values` nodes from the device-plugin DaemonSet (merge patch of its
    pod template's affinity, guarded by the resourceVersion read)."""
    ds = kube.get("apps/v1", "DaemonSet", name, namespace)
    current = ds["spec"]["template"]["spec"].get("affinity")
    wanted = device_plugin_affinity(current, key, values)
    if wanted == current:
        return ds
    body = {
        "metadata": {"resourceVersion": ds["metadata"]["resourceVersion"]},
        "spec": {"template": {"spec": {"affinity": wanted}}},
    }
    return kube.patch("apps/v1", "DaemonSet", name, body, namespace)


@dataclass
class DaemonSetDevicePlugin:
    """A device plugin running as a DaemonSet: nodes leave it through node affinity on
    STACK_LABEL (so `include` is the relabel done by `rollback_pool`; nothing to patch)."""

    kube: Kube
    namespace: str
    name: str

    def _pods(self, nodes: Sequence[str]) -> dict[str, str]:
        ds = self.kube.get("apps/v1", "DaemonSet", self.name, self.namespace)
        uid = ds["metadata"]["uid"]
        wanted = set(nodes)
        return {
            p["spec"]["nodeName"]: str((p.get("status") or {}).get("phase", ""))
            for p in self.kube.list("v1", "Pod", self.namespace)
            if p["spec"].get("nodeName") in wanted
            and not p["metadata"].get("deletionTimestamp")
            and any(o.get("uid") == uid for o in p["metadata"].get("ownerReferences") or [])
        }

    def exclude(self, nodes: Sequence[str]) -> None:
        patch_device_plugin_daemonset(self.kube, self.namespace, self.name)

    def rollout_status(self) -> dict[str, int]:
        ds = self.kube.get("apps/v1", "DaemonSet", self.name, self.namespace)
        status = ds.get("status") or {}
        return {
            "generation": ds["metadata"]["generation"],
            "observedGeneration": status.get("observedGeneration", 0),
            "desired": status.get("desiredNumberScheduled", 0),
            "updated": status.get("updatedNumberScheduled", 0),
            "available": status.get("numberAvailable", 0),
            "unavailable": status.get("numberUnavailable", 0),
        }

    def wait_excluded(self, nodes: Sequence[str]) -> None:
        """Gone from the pool, and the rollout the template change started has finished
        (`kubectl rollout status`): a pod template change replaces the plugin pod on every
        node, so patch the affinity once, before the first pool; later pools then leave the
        plugin by their label alone."""
        wait_for(
            lambda: (self._pods(nodes), self.rollout_status()),
            lambda seen: (
                seen[0] == {}
                and seen[1]["observedGeneration"] >= seen[1]["generation"]
                and seen[1]["updated"] == seen[1]["desired"] == seen[1]["available"]
                and seen[1]["unavailable"] == 0
            ),
            timeout=TIMEOUTS.deletion,
            describe=f"DaemonSet {self.namespace}/{self.name} gone from {', '.join(nodes)} and rolled out",
        )

    def include(self, nodes: Sequence[str]) -> None:
        """Nothing to patch: the pool's STACK_LABEL no longer says dra."""

    def wait_included(self, nodes: Sequence[str]) -> None:
        wait_for(
            lambda: self._pods(nodes),
            lambda seen: seen == dict.fromkeys(nodes, "Running"),
            timeout=TIMEOUTS.pod_running,
            describe=f"DaemonSet {self.namespace}/{self.name} Running on {', '.join(nodes)}",
        )


def exclude_from_device_plugin(nodes: Sequence[str], plugins: Sequence[DevicePlugin]) -> None:
    for p in plugins:
        p.exclude(nodes)
    for p in plugins:
        p.wait_excluded(nodes)


def readmit_to_device_plugin(nodes: Sequence[str], plugins: Sequence[DevicePlugin]) -> None:
    for p in plugins:
        p.include(nodes)
    for p in plugins:
        p.wait_included(nodes)


def install_driver(kube: Kube, pool: Pool, install: Callable[[Sequence[str]], object]) -> None:
    """Run `install(nodes)` and wait until every node of the pool has the driver's devices."""
    install(pool.nodes)
    wait_for(
        lambda: {n: devices_per_node(kube, pool.driver).get(n, 0) for n in pool.nodes},
        lambda seen: all(seen.values()),
        timeout=TIMEOUTS.api_object,
        describe=f"{pool.driver} ResourceSlices on every node of pool {pool.name}",
    )


def uninstall_driver(kube: Kube, pool: Pool, uninstall: Callable[[Sequence[str]], object]) -> None:
    """Run `uninstall(nodes)` and wait until no node of the pool has the driver's devices."""
    uninstall(pool.nodes)
    wait_for(
        lambda: {n: devices_per_node(kube, pool.driver).get(n, 0) for n in pool.nodes},
        lambda seen: not any(seen.values()),
        timeout=TIMEOUTS.deletion,
        describe=f"{pool.driver} ResourceSlices gone from pool {pool.name}",
    )


def gpu_device_class(name: str, driver: str, resource: str, api: str = "v1") -> Obj:
    """A DeviceClass selecting the driver's devices and mapping the legacy name."""
    return {
        "apiVersion": f"resource.k8s.io/{api}",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}],
            "extendedResourceName": resource,
        },
    }


def ensure_device_class(kube: Kube, body: Obj) -> ClassOutcome:
    """Create the class, or give an existing one of that name the body's
    extendedResourceName (its selectors are left alone: the driver's chart owns them)."""
    name = body["metadata"]["name"]
    want = body["spec"].get("extendedResourceName")
    try:
        current = kube.get(body["apiVersion"], "DeviceClass", name)
    except NotFoundError:
        kube.create(body)
        return "created"
    if (current.get("spec") or {}).get("extendedResourceName") == want:
        return "unchanged"
    kube.patch(body["apiVersion"], "DeviceClass", name, {"spec": {"extendedResourceName": want}})
    return "updated"


# -- the whole thing -----------------------------------------------------------------------


def _noop(step: str) -> None:
    return None


def migrate_pool(
    kube: Kube,
    pool: Pool,
    plugins: Sequence[DevicePlugin],
    install: Callable[[Sequence[str]], object],
    device_class: Obj,
    *,
    on_step: OnStep = _noop,
    evict: bool = True,
) -> RolloutReport:
    """Move one pool from the device plugin to the DRA driver, step by step."""
    report = RolloutReport()

    def step(name: str) -> None:
        report.steps.append(name)
        on_step(name)

    label_pool(kube, pool.nodes, {STACK_LABEL: STACK_DRA})
    step("label")
    cordon(kube, pool.nodes)
    step("cordon")
    report.drained = drain(kube, pool.nodes, evict=evict)
    step("drain")
    exclude_from_device_plugin(pool.nodes, plugins)
    step("exclude-device-plugin")
    install_driver(kube, pool, install)
    step("install-driver")
    report.device_class = ensure_device_class(kube, device_class)
    step("device-class")
    uncordon(kube, pool.nodes)
    step("uncordon")
    return report


def rollback_pool(
    kube: Kube,
    pool: Pool,
    plugins: Sequence[DevicePlugin],
    uninstall: Callable[[Sequence[str]], object],
    *,
    on_step: OnStep = _noop,
    evict: bool = True,
) -> RolloutReport:
    """Give one migrated pool back to the device plugin. The DeviceClass stays (other
    pools still use it); a device is managed by one mechanism at a time, so the driver's
    slices are gone before the plugin returns."""
    report = RolloutReport()

    def step(name: str) -> None:
        report.steps.append(name)
        on_step(name)

    cordon(kube, pool.nodes)
    step("cordon")
    report.drained = drain(kube, pool.nodes, evict=evict)
    step("drain")
    uninstall_driver(kube, pool, uninstall)
    step("uninstall-driver")
    # The relabel is what gives a DaemonSet plugin the pool back (its affinity excludes
    # STACK_LABEL=dra), so it happens only now, with the driver's slices gone.
    label_pool(kube, pool.nodes, {STACK_LABEL: STACK_DEVICE_PLUGIN})
    readmit_to_device_plugin(pool.nodes, plugins)
    step("readmit-device-plugin")
    uncordon(kube, pool.nodes)
    step("uncordon")
    return report
