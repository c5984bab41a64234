"""The last step of an upgrade: the kubelets of the real nodes that ran the old minor get the
new one, one node at a time, after the whole control plane (kubernetes/website
content/en/releases/version-skew-policy.md, "Supported component upgrade order": kubelets
after kube-apiserver, kube-controller-manager and kube-scheduler; "Optionally upgrade kubelet
instances ... or they can be left at" up to three minors older).

Modes, per upgrade:
- "drain" (the default, what upstream documents): cordon, evict the node's pods, swap the
  kubelet, uncordon. The version-skew policy's note says "Before performing a minor version
  kubelet upgrade, drain pods from that node. In-place minor version kubelet upgrades are not
  supported."; kubeadm's upgrade task does the same (content/en/docs/tasks/administer-cluster/
  kubeadm/kubeadm-upgrade.md: drain, upgrade kubelet, restart it, uncordon).
- "in-place": cordon, swap, uncordon, pods left running. Upstream does not support it: the
  rehearsal shows what an operator who skips the drain gets (running containers and prepared
  claims carried over by the new kubelet, or not).
- "keep": kubelets stay at their minor (the skew the policy allows).

Both swapping modes cordon: the scheduler must not bind a pod to a node whose kubelet is down.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from harness.clusters.realnodes.pools import RealNodes
from harness.controlplane.nodeparts import NodeBinaries, node_parts
from harness.core.errors import HarnessError
from harness.core.versions import GateProfile, Matrix, minor_number
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.waits import TIMEOUTS, wait_for


class KubeletCluster(Protocol):
    """What the kubelet swap reads of its cluster (LocalCluster is one; named here, not
    imported, since LocalCluster.upgrade imports this module)."""

    @property
    def matrix(self) -> Matrix: ...
    @property
    def profile(self) -> GateProfile: ...
    @property
    def kubeconfig(self) -> Path: ...
    @property
    def real(self) -> RealNodes | None: ...


KUBELET_MODES = ("drain", "in-place", "keep")
DEFAULT_KUBELET_MODE = "drain"


def nodes_to_swap(kubelets: Mapping[str, str], before: str, after: str, mode: str) -> list[str]:
    """Of `kubelets` (node -> minor of its kubelet), the nodes whose kubelet moves to `after`:
    those that ran `before`, on an upgrade, unless they are kept."""
    if mode not in KUBELET_MODES:
        raise HarnessError(f"kubelets={mode!r}: one of {', '.join(KUBELET_MODES)}")
    if mode == "keep" or minor_number(after) < minor_number(before):
        return []
    return sorted(n for n, m in kubelets.items() if m == before)


def kubelet_parts(cluster: KubeletCluster, after: str) -> NodeBinaries:
    """The built parts of `after`'s nodes; one line naming the build when the kubelet is not."""
    return node_parts(cluster.matrix.minor(after), cluster.matrix)


def swap_kubelets(
    cluster: KubeletCluster, names: list[str], after: str, parts: NodeBinaries, drain: bool
) -> None:
    """Node by node: cordon, (drain,) run the kubelet of `after`, wait for the Node to report
    it and be Ready, uncordon."""
    assert cluster.real is not None
    target = cluster.matrix.minor(after)
    gates = target.profile(cluster.profile.name).gates
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    try:
        for name in names:
            cordon(kube, name, True)
            if drain:
                drain_node(kube, name)
                # kubectl drain stops at the pods' deletion; pods deleted with grace period 0
                # (the harness's) are gone before the kubelet has unprepared their claims, and
                # a kubelet stopped then left them prepared (seen: the next one only killed
                # the orphaned containers).
                cluster.real.node(name).wait_unprepared()
            cluster.real.replace_kubelet(name, after, parts, gates)
            wait_kubelet_version(kube, name, target.kubernetes)
            cordon(kube, name, False)
        cluster.real.use_default_minor(after)
    finally:
        kube.close()


def wait_kubelet_version(kube: Kube, node: str, version: str) -> None:
    """Until the Node reports kubelet `version` (its nodeInfo, set by the kubelet at start) and
    is Ready."""

    def observe() -> tuple[str, bool]:
        status = kube.get(*kinds.NODE, node).get("status", {})
        conditions = status.get("conditions", [])
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        return status.get("nodeInfo", {}).get("kubeletVersion", ""), ready

    wait_for(
        observe,
        lambda seen: seen == (version, True),
        timeout=TIMEOUTS.node_ready,
        describe=f"node {node} Ready with kubelet {version}",
    )


def cordon(kube: Kube, node: str, unschedulable: bool) -> None:
    kube.patch(*kinds.NODE, node, {"spec": {"unschedulable": unschedulable or None}})


def drain_node(kube: Kube, node: str) -> None:
    """Evict every pod bound to `node` (policy/v1 Eviction, as `kubectl drain` does) and wait
    until they are gone: their containers stopped and their claims unprepared by the old
    kubelet. Mirror and DaemonSet pods do not exist on these nodes."""
    selector = f"spec.nodeName={node}"
    for pod in kube.list(*kinds.POD, field_selector=selector):
        meta = pod["metadata"]
        kube.evict(meta["name"], meta["namespace"], meta["uid"])
    wait_for(
        lambda: sorted(
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in kube.list(*kinds.POD, field_selector=selector)
        ),
        lambda left: not left,
        timeout=TIMEOUTS.deletion,
        describe=f"the pods of node {node} evicted",
    )
