"""The node steps of a rollout: label, cordon, drain (as `kubectl drain --ignore-daemonsets
--force`) and uncordon, each waiting until its effect is observable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.waits import TIMEOUTS, wait_for


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    uid: str
    node: str


def node_objects(kube: Kube, names: Iterable[str]) -> dict[str, Obj]:
    wanted = set(names)
    return {n["metadata"]["name"]: n for n in kube.list(*kinds.NODE) if n["metadata"]["name"] in wanted}


def label_pool(kube: Kube, nodes: Iterable[str], labels: Mapping[str, str | None]) -> None:
    """Set (or, with None, remove) labels on every node of the pool."""
    for name in nodes:
        kube.patch(*kinds.NODE, name, {"metadata": {"labels": dict(labels)}})


def cordon(kube: Kube, nodes: Iterable[str], unschedulable: bool = True) -> None:
    names = list(nodes)
    for name in names:
        kube.patch(*kinds.NODE, name, {"spec": {"unschedulable": unschedulable or None}})
    wait_for(
        lambda: {n: bool(o["spec"].get("unschedulable")) for n, o in node_objects(kube, names).items()},
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
        for p in kube.list(*kinds.POD, field_selector=f"spec.nodeName={node}"):
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
    for ref in doomed:  # one already gone is fine
        if evict:
            kube.evict(ref.name, ref.namespace, ref.uid)
        else:
            kube.delete(*kinds.POD, ref.name, ref.namespace)
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
