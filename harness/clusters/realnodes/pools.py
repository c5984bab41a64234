"""Real node pools of a LocalCluster: the host slot they share, their bridge and addresses,
their nodes started side by side, and a teardown that leaves the host as it was.

    LocalCluster(real_pools=[RealPoolSpec("real", count=2, gpus=2)])
    LocalCluster(real_pools=[RealPoolSpec("ex", count=2, gpus=4, driver="example@v0.4.0")])
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fake_driver.facts.personalities import get_personality
from fake_driver.publishing.legacy import LEGACY_RESOURCE
from harness.clusters.host import state as hoststate
from harness.clusters.host.pki import ClusterPKI
from harness.clusters.nodes import POOL_LABEL, node_ready
from harness.clusters.realnodes.config import NodeLayout
from harness.clusters.realnodes.external import (
    check_driver_names,
    delete_slices,
    external_plugin,
    install_objects,
)
from harness.clusters.realnodes.node import NodeSpec, RealNode
from harness.controlplane.nodeparts import NodeBinaries, node_parts
from harness.core.errors import HarnessError
from harness.core.versions import Matrix, Minor
from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.waits import TIMEOUTS, wait_for

MAX_NODES = 8
REAL_LABEL = "dra-harness.io/real-node"


@dataclass(frozen=True)
class RealPoolSpec:
    """`count` real nodes named `<name>-<i>`, labelled like kwok pools (POOL_LABEL) plus
    `labels`; the fake driver serves `gpus` GPUs of `profile` on each (fake_driver fleet), or
    with `driver` ("example@v0.4.0", versions.toml [drivers]) that real driver's plugin serves
    `gpus` of its own, with `settings` mapped to its flags ({"partitions": 2})."""

    name: str = "real"
    count: int = 1
    minor: str | None = None  # default: the cluster's minor (a node may be older)
    labels: Mapping[str, str] = field(default_factory=dict)
    profile: str = "h100-80gb-hbm3"
    gpus: int = 2
    personality: str = "nvidia-v25.12"
    device_plugin: bool = False
    device_status: bool = False  # the fake driver's plugin writes the claims' status.devices
    driver: str = ""  # a real driver instead of the fake one: "example@v0.4.0"
    mutant: str = ""  # with `driver`: its planted-bug build of that name (mutants/, make mutants)
    settings: Mapping[str, Any] = field(default_factory=dict)
    # MIG as a fleet pool's `mig` ({mode: static, layout: [...], gpus: [...]}): the fake
    # driver's, or on a real NVIDIA driver's fake root what its NVML stand-in serves.
    mig: Mapping[str, Any] = field(default_factory=dict)

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]

    def plugin_settings(self) -> dict[str, Any]:
        """`settings`, and DynamicMIG's gate when the pool's MIG is dynamic (versions.toml
        [drivers.nvidia.settings] dynamic_mig)."""
        dynamic = bool(self.mig) and self.mig.get("mode") == "dynamic"
        return {**self.settings, **({"dynamic_mig": True} if dynamic else {})}

    def fleet_pool(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodes": self.node_names(),
            "profile": self.profile,
            "gpus": self.gpus,
            "personality": self.personality,
            "device_plugin": self.device_plugin,
            "device_status": self.device_status,
            **({"mig": dict(self.mig)} if self.mig else {}),
        }


def cluster_up_pool(count: int, driver: str = "", kubelet: str | None = None) -> RealPoolSpec:
    """The pool `cluster up --real-nodes N [--driver NAME@VERSION] [--kubelet MINOR]` starts."""
    return RealPoolSpec("real", count=count, minor=kubelet, gpus=4 if driver else 2, driver=driver)


def layout(slot: hoststate.Slot, run_dir: Path, name: str, index: int) -> NodeLayout:
    return NodeLayout(
        name=name,
        index=index,
        root=run_dir / "nodes" / name,
        state=slot.state_dir / str(index),
        cgroup=f"{slot.cgroup}/{name}",
        ip=f"10.250.{slot.index}.{10 + index}",
        pod_subnet=f"10.{240 + index}.{slot.index}.0/24",
        cni_bridge=f"{slot.link_prefix}n{index}",
    )


class RealNodes:
    """Every real node of one cluster."""

    def __init__(
        self,
        pools: Sequence[RealPoolSpec],
        parts: Mapping[str, NodeBinaries],
        run_dir: Path,
        gates: Mapping[str, Mapping[str, bool]],  # per minor
    ):
        if sum(p.count for p in pools) > MAX_NODES:
            raise HarnessError(f"at most {MAX_NODES} real nodes per cluster")
        self.plugins = {
            p.name: external_plugin(p.driver, p.plugin_settings(), p.mutant) for p in pools if p.driver
        }
        check_driver_names(self.driver_names(pools))
        self.pools = list(pools)
        self.parts = dict(parts)
        self.run_dir = run_dir
        self.gates = {m: dict(g) for m, g in gates.items()}
        self.slot: hoststate.Slot | None = None
        self.nodes: dict[str, RealNode] = {}
        self.minors: dict[str, str] = {}  # node -> the minor of its kubelet
        self.ready_seconds: float = 0.0
        self._cluster: tuple[str, ClusterPKI, Path, str]  # what start() was given, for add_pool

    @property
    def busybox_ref(self) -> str:
        """The busybox image every node imported: the image of the node side's pods."""
        return next(iter(self.parts.values())).busybox_ref

    def node(self, name: str) -> RealNode:
        return self.nodes[name]

    def driver_names(self, pools: Sequence[RealPoolSpec]) -> list[tuple[str, str]]:
        """(who, driver name) of each pool's plugin, for check_driver_names."""
        return [
            (p.driver, self.plugins[p.name].driver)
            if p.driver
            else ("the fake driver", get_personality(p.personality).driver)
            for p in pools
        ]

    def start(self, server: str, pki: ClusterPKI, admin_kubeconfig: Path, default_minor: str) -> None:
        started = time.monotonic()
        self._cluster = (server, pki, admin_kubeconfig, default_minor)
        self.slot = hoststate.claim()
        hoststate.ip("link", "add", self._bridge, "type", "bridge")
        hoststate.ip("link", "set", self._bridge, "up")
        fleet = self._fleet_file("real-fleet", [p for p in self.pools if p.count and not p.driver])
        self._start_nodes([node for pool in self.pools for node in self._add_nodes(pool, fleet)])
        self.ready_seconds = time.monotonic() - started

    @property
    def _bridge(self) -> str:
        assert self.slot is not None
        return f"{self.slot.link_prefix}x"

    def add_pool(self, pool: RealPoolSpec) -> list[RealNode]:
        """Another pool on the running cluster (a test's own nodes); Ready when this returns."""
        if sum(p.count for p in self.pools) + pool.count > MAX_NODES:
            raise HarnessError(f"at most {MAX_NODES} real nodes per cluster")
        if pool.driver:
            self.plugins[pool.name] = external_plugin(pool.driver, pool.plugin_settings(), pool.mutant)
        check_driver_names(self.driver_names([*self.pools, pool]))
        self.pools.append(pool)
        try:
            nodes = self._add_nodes(pool, self._fleet_file(f"fleet-{pool.name}", [pool]))
            self._start_nodes(nodes)
        except BaseException:
            self.remove_pool(pool.name)
            raise
        return nodes

    def remove_pool(self, name: str) -> None:
        """Stop the pool's nodes and give back what they held (cgroups, state, addresses); their
        Node objects stay for the caller to delete (their slices go with them)."""
        pool = next((p for p in self.pools if p.name == name), None)
        if pool is None:
            return
        nodes = [self.nodes.pop(n) for n in pool.node_names() if n in self.nodes]
        for node in nodes:
            node.stop()
        plugin = self.plugins.pop(pool.name, None)
        if plugin is not None and nodes:  # a real driver's slices outlive it
            self._with_kube(lambda kube: delete_slices(kube, plugin.driver, [n.name for n in nodes]))
        for node in nodes:
            self.minors.pop(node.name, None)
            for cgroup in (node.layout.cgroup, node.tracking_cgroup):
                hoststate.remove_cgroup(cgroup)
            hoststate.delete_links(node.layout.cni_bridge)
            subprocess.run(["ip", "addr", "del", f"{node.layout.ip}/32", "dev", self._bridge], check=False)
            shutil.rmtree(node.layout.state, ignore_errors=True)
            shutil.rmtree(node.layout.root / "containerd", ignore_errors=True)
        self.pools.remove(pool)

    def replace_kubelet(self, name: str, minor: str, parts: NodeBinaries, gates: Mapping[str, bool]) -> None:
        """Run the kubelet of `minor` (with `gates`) on node `name` in place of its own."""
        self.parts.setdefault(minor, parts)
        self.gates.setdefault(minor, dict(gates))
        self.nodes[name].replace_kubelet(parts, gates)
        self.minors[name] = minor

    def use_default_minor(self, minor: str) -> None:
        """Pools added from now on without a minor of their own run `minor`'s kubelet."""
        server, pki, admin_kubeconfig, _ = self._cluster
        self._cluster = (server, pki, admin_kubeconfig, minor)

    def _fleet_file(self, name: str, pools: Sequence[RealPoolSpec]) -> Path:
        """The fake driver's fleet for these pools: what each node's plugin publishes."""
        path = self.run_dir / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"pools": [p.fleet_pool() for p in pools]}))
        return path

    def _add_nodes(self, pool: RealPoolSpec, fleet_file: Path) -> list[RealNode]:
        assert self.slot is not None
        server, pki, admin_kubeconfig, default_minor = self._cluster
        made = []
        plugin = self.plugins.get(pool.name)
        for name in pool.node_names():
            index = min(set(range(MAX_NODES)) - {n.layout.index for n in self.nodes.values()})
            spec = NodeSpec(
                layout(self.slot, self.run_dir, name, index),
                {POOL_LABEL: pool.name, REAL_LABEL: "true", "type": "real", **pool.labels},
                fleet_file,
                pool.device_plugin,
                self.gates[pool.minor or default_minor],
                plugin.driver if plugin else get_personality(pool.personality).driver,
                pool.gpus,
                plugin,
                pool.profile,
                pool.mig,
            )
            parts = self.parts[pool.minor or default_minor]
            self.nodes[name] = node = RealNode(spec, parts, server, pki.ca, admin_kubeconfig)
            self.minors[name] = pool.minor or default_minor
            made.append(node)
            hoststate.ip("addr", "add", f"{spec.layout.ip}/32", "dev", self._bridge)
        return made

    def _start_nodes(self, nodes: list[RealNode]) -> None:
        # Side by side, step by step: the slow steps (containerd, kubelet start) overlap.
        for step in ("prepare", "start_namespace", "start_containerd", "start_kubelet"):
            for node in nodes:
                getattr(node, step)()
        admin_kubeconfig = self._cluster[2]
        self._wait_nodes(admin_kubeconfig, lambda n: True, "registered", [n.name for n in nodes])
        for plugin in {n.spec.external.label: n.spec.external for n in nodes if n.spec.external}.values():
            self._with_kube(lambda kube, p=plugin: install_objects(kube, p))
        for node in nodes:
            node.start_plugins()
        self._wait_nodes(admin_kubeconfig, self._ready, "Ready", [n.name for n in nodes])
        self._wait_slices(nodes)

    def _with_kube(self, act: Any) -> Any:
        kube = Kube.from_kubeconfig(self._cluster[2])
        try:
            return act(kube)
        finally:
            kube.close()

    def _wait_slices(self, nodes: list[RealNode]) -> None:
        """Until each node's plugin has published its node's slices: the kubelet reports a
        plugin connected before the plugin's first slice write has reached the API server."""
        wanted = {(n.name, n.spec.driver) for n in nodes}

        def published(kube: Kube) -> set[tuple[str, str]]:
            for node in nodes:
                node.check_running()
            return {
                (s["spec"].get("nodeName"), s["spec"]["driver"]) for s in kube.list(*kinds.RESOURCE_SLICE)
            } & wanted

        self._with_kube(
            lambda kube: wait_for(
                lambda: published(kube),
                lambda seen: seen == wanted,
                timeout=TIMEOUTS.node_ready,
                describe=f"the slices of real nodes {sorted(n.name for n in nodes)}",
            )
        )

    def wait_ready(self, kubeconfig: Path) -> None:
        self._wait_nodes(kubeconfig, self._ready, "Ready", list(self.nodes))

    def _ready(self, node: Obj) -> bool:
        """Ready, and a device-plugin node's GPUs in its allocatable: the kubelet reports them
        at its next status update, and until then the scheduler sees no device plugin there."""
        real = self.nodes.get(node["metadata"]["name"])
        advertised = int(node.get("status", {}).get("allocatable", {}).get(LEGACY_RESOURCE, "0"))
        return node_ready(node) and (real is None or not real.spec.device_plugin or advertised > 0)

    def _wait_nodes(self, kubeconfig: Path, check: Any, what: str, names: list[str]) -> None:
        kube = Kube.from_kubeconfig(kubeconfig)
        try:
            wait_for(
                lambda: {n: ok for n, ok in self._observe(kube, check).items() if n in names},
                lambda seen: len(seen) == len(names) and all(seen.values()),
                timeout=TIMEOUTS.node_ready,
                describe=f"real nodes {sorted(names)} {what}",
            )
        finally:
            kube.close()

    def _observe(self, kube: Kube, check: Any) -> dict[str, bool]:
        for node in self.nodes.values():
            node.check_running()
        nodes = kube.list(*kinds.NODE, label_selector=f"{REAL_LABEL}=true")
        return {n["metadata"]["name"]: bool(check(n)) for n in nodes if n["metadata"]["name"] in self.nodes}

    def stop(self) -> None:
        for node in reversed(list(self.nodes.values())):
            node.stop()
        if self.slot is not None:
            hoststate.release(self.slot)
            self.slot = None
        for node in self.nodes.values():  # images and snapshots are bulk; the logs stay
            shutil.rmtree(node.layout.root / "containerd", ignore_errors=True)

    def pids(self) -> dict[str, int]:
        return {
            f"{name}/{c}": proc.pid
            for name, node in self.nodes.items()
            for c, proc in node.components.items()
            if proc.running()
        }


def real_node_parts(matrix: Matrix, minor: Minor, pools: Sequence[RealPoolSpec]) -> dict[str, NodeBinaries]:
    """The built parts per minor the pools ask for, then the host; one line naming what is
    missing first (how to build it, what the host lacks)."""
    minors = {p.minor or minor.name for p in pools}
    parts = {m: node_parts(matrix.minor(m), matrix) for m in sorted(minors)}
    why = hoststate.missing_requirement()
    if why is not None:
        raise HarnessError(why)
    return parts


def real_node_apiserver_flags(pki: ClusterPKI) -> list[str]:
    """Logs, exec and metrics reach a kubelet by its InternalIP (there is no DNS for node
    names), as a client the kubelet's webhook authorizer lets in."""
    return [
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={pki.admin.cert}",
        f"--kubelet-client-key={pki.admin.key}",
    ]
