"""Taking a pool away from (and giving it back to) the legacy device plugin: the simulated
plugin (fake_driver.publishing.legacy: node status stops advertising `nvidia.com/gpu`), or a real
plugin's DaemonSet, whose node affinity gets `STACK_LABEL NotIn [dra]` so labelled pools
lose it."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

from fake_driver.fleetspec.fleet import Fleet
from fake_driver.publishing import legacy
from harness.kit import kinds
from harness.kit.kube import ConflictError, Kube, Obj
from harness.kit.waits import TIMEOUTS, wait_for
from harness.rollout.nodes import node_objects

STACK_LABEL = "dra-harness.io/gpu-stack"  # which mechanism manages the node's GPUs
STACK_DRA = "dra"
STACK_DEVICE_PLUGIN = "device-plugin"


class DevicePlugin(Protocol):
    """How a pool is taken away from (and given back to) the legacy device plugin."""

    def exclude(self, nodes: Sequence[str]) -> None: ...

    def wait_excluded(self, nodes: Sequence[str]) -> None: ...

    def include(self, nodes: Sequence[str]) -> None: ...

    def wait_included(self, nodes: Sequence[str]) -> None: ...


def _advertised(kube: Kube, nodes: Sequence[str]) -> dict[str, int]:
    return {n: legacy.advertised(o) for n, o in node_objects(kube, nodes).items()}


@dataclass
class SimulatedDevicePlugin:
    """fake_driver.publishing.legacy: the plugin's effect on node status, patched directly."""

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
        want = {n: legacy.advertised_count(self.fleet.node(n).pool) for n in nodes}
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
    pod template's affinity, guarded by the resourceVersion read; read again and retried when
    the DaemonSet controller wrote its status in between)."""
    conflict = retry_if_exception_type(ConflictError)
    for attempt in Retrying(retry=conflict, stop=stop_after_attempt(_CONFLICT_ATTEMPTS), reraise=True):
        with attempt:
            return _patch_affinity(kube, namespace, name, key, values)
    raise AssertionError("unreachable: Retrying reraises the last conflict")


_CONFLICT_ATTEMPTS = 5


def _patch_affinity(kube: Kube, namespace: str, name: str, key: str, values: Sequence[str]) -> Obj:
    ds = kube.get(*kinds.DAEMON_SET, name, namespace)
    current = ds["spec"]["template"]["spec"].get("affinity")
    wanted = device_plugin_affinity(current, key, values)
    if wanted == current:
        return ds
    body = {
        "metadata": {"resourceVersion": ds["metadata"]["resourceVersion"]},
        "spec": {"template": {"spec": {"affinity": wanted}}},
    }
    return kube.patch(*kinds.DAEMON_SET, name, body, namespace)


@dataclass
class DaemonSetDevicePlugin:
    """A device plugin running as a DaemonSet: nodes leave it through node affinity on
    STACK_LABEL (so `include` is the relabel done by `rollback_pool`; nothing to patch)."""

    kube: Kube
    namespace: str
    name: str

    def _pods(self, nodes: Sequence[str]) -> dict[str, str]:
        ds = self.kube.get(*kinds.DAEMON_SET, self.name, self.namespace)
        uid = ds["metadata"]["uid"]
        wanted = set(nodes)
        return {
            p["spec"]["nodeName"]: str((p.get("status") or {}).get("phase", ""))
            for p in self.kube.list(*kinds.POD, self.namespace)
            if p["spec"].get("nodeName") in wanted
            and not p["metadata"].get("deletionTimestamp")
            and any(o.get("uid") == uid for o in p["metadata"].get("ownerReferences") or [])
        }

    def exclude(self, nodes: Sequence[str]) -> None:
        patch_device_plugin_daemonset(self.kube, self.namespace, self.name)

    def rollout_status(self) -> dict[str, int]:
        ds = self.kube.get(*kinds.DAEMON_SET, self.name, self.namespace)
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
