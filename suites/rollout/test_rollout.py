"""The recommended rollout, automated: one labeled pool moves from the device plugin to the
DRA driver (label, cordon, drain, exclude from the plugin's DaemonSet and stop advertising,
install the driver, ensure the DeviceClass, uncordon), and back again. At every step: the
other pool's workloads are undisturbed, the physical-device ledger shows no over-promise,
no node is served by both stacks, and the cluster invariants hold."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from fake_driver.api.apilimits import parse_minor
from fake_driver.publishing.legacy import advertised
from fake_driver.rendering.ledger import Ledger
from fixtures.driver import DriverUnderTest
from fixtures.fake_driver import FLEET_LABEL, GpuFleet, GpuPoolSpec, MakeGpuFleet
from fixtures.requirements import provider_unmet, skip, version_unmet
from harness import rollout
from harness.clusters.base import Cell
from harness.clusters.nodes import POOL_LABEL
from harness.core.expectations import bridge_reaches_nodes_a_device_plugin_left
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.detectors import detect_double_stack
from harness.kit.checks.invariants import (
    check_cluster,
    collect,
    double_allocations,
    orphaned_claims,
    over_promises,
    stale_reservations,
)
from harness.kit.checks.verification import verify
from harness.kit.drastate import allocated_devices, claims_of, devices_per_node
from harness.kit.kube import Kube, Obj
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.feature_gate("DRAExtendedResource"), pytest.mark.bridged]

PLUGIN_DS = "nvidia-device-plugin"


@pytest.fixture(autouse=True)
def _runs_here(driver: DriverUnderTest, cell: Cell) -> None:
    if driver.source != "fake":
        skip(provider_unmet("the rollout suite installs and removes the driver itself: fake driver only"))
    # 1.34: bridged pods never reach a pool the device plugin left (its `nvidia.com/gpu: 0`);
    # suites/bridging/test_device_plugin_leftover.py asserts that on every minor.
    if not bridge_reaches_nodes_a_device_plugin_left(cell.number) and (reason := version_unmet(cell, "1.35")):
        skip(reason)


def _plugin_daemonset(namespace: str) -> Obj:
    """A device-plugin stand-in: runs on this test's fleet nodes that carry a pool label."""
    labels = {"app": PLUGIN_DS}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": PLUGIN_DS, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {FLEET_LABEL: namespace},
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": POOL_LABEL, "operator": "Exists"}]}
                                ]
                            }
                        }
                    },
                    "tolerations": [{"operator": "Exists"}],
                    "terminationGracePeriodSeconds": 0,
                    "containers": [b.container("plugin")],
                },
            },
        },
    }


@dataclass
class Watch:
    """What each rollout step must leave alone, and what it looked like after each step."""

    kube: Kube
    namespace: str
    driver: DriverUnderTest
    fleet: GpuFleet
    cell: Cell
    moving: tuple[str, ...]
    bystanders: dict[str, Obj]  # pods of the other pool (and its plugin pod), by name
    seen: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def _pods(self) -> dict[str, Obj]:
        return {p["metadata"]["name"]: p for p in self.kube.list(*kinds.POD, self.namespace)}

    def __call__(self, step: str) -> None:
        pods = self._pods()
        # Other pools undisturbed: same pods (uid), same node, Running, never bridged.
        for name, before in self.bystanders.items():
            now = pods.get(name)
            assert now is not None, f"after {step}: pod {name} of the other pool is gone"
            assert (now["metadata"]["uid"], now["spec"]["nodeName"], now["status"]["phase"]) == (
                before["metadata"]["uid"],
                before["spec"]["nodeName"],
                "Running",
            ), f"after {step}: pod {name} of the other pool disturbed"
            assert "extendedResourceClaimStatus" not in now["status"], f"after {step}: {name} bridged"
        # Never: one device twice, a GPU promised beyond the node, a node served by both stacks.
        snap = collect(self.kube, [self.namespace])
        nodes = [n for n in self.kube.list(*kinds.NODE) if n["metadata"]["name"] in self.fleet.node_names]
        legacy = {n["metadata"]["name"]: advertised(n) for n in nodes}
        ledger = Ledger.for_fleet(self.fleet.fleet, parse_minor(self.cell.minor), legacy=legacy)
        never = (
            double_allocations(snap.all_claims, snap.slices)
            + over_promises(
                ledger, self.fleet.node_names, snap.pods, snap.claims, self.driver.extended_resource
            )
            + [
                f.message
                for f in detect_double_stack(
                    nodes, snap.slices, [], self.driver.extended_resource, [self.driver.driver]
                )
            ]
        )
        assert never == [], f"after {step}"
        # Eventually (the claim controller and garbage collector catch up): no stale
        # reservation, no orphaned scheduler-created claim.
        wait_for(
            lambda: (lambda s: stale_reservations(s.claims, s.pods) + orphaned_claims(s.claims, s.pods))(
                collect(self.kube, [self.namespace])
            ),
            lambda problems: problems == [],
            timeout=TIMEOUTS.deletion,
            describe=f"claims consistent with pods after step {step}",
        )
        by_node = {n["metadata"]["name"]: n for n in nodes}
        devices = devices_per_node(self.kube, self.driver.driver)
        self.seen[step] = (
            sorted(n for n, p in pods.items() if not n.startswith(PLUGIN_DS)),
            [legacy[n] for n in self.moving],
            [devices.get(n, 0) for n in self.moving],
            [bool(by_node[n]["spec"].get("unschedulable")) for n in self.moving],
            sorted(
                p["spec"]["nodeName"]
                for n, p in pods.items()
                if n.startswith(PLUGIN_DS) and not p["metadata"].get("deletionTimestamp")
            ),
        )


def _plugin_pods(kube: Kube, namespace: str, count: int) -> dict[str, Obj]:
    """The DaemonSet's pods by name, once `count` of them run."""
    pods = wait_for(
        lambda: [
            p
            for p in kube.list(*kinds.POD, namespace, label_selector=f"app={PLUGIN_DS}")
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ],
        lambda running: len(running) == count,
        timeout=TIMEOUTS.pod_running,
        describe=f"{count} device-plugin DaemonSet pods Running",
    )
    return {p["metadata"]["name"]: p for p in pods}


def _two_pools(gpu_fleet: MakeGpuFleet, driver: DriverUnderTest, moving_nodes: int) -> GpuFleet:
    """Pool a (moving, `moving_nodes` x 2 GPUs) and pool b (staying, 1 x 2 GPUs), both on
    the device plugin, the DRA driver not yet installed anywhere."""
    personality = driver.personality or "nvidia-v25.12"
    return gpu_fleet(
        GpuPoolSpec(gpus=2, nodes=moving_nodes, device_plugin=True, suffix="a", personality=personality),
        GpuPoolSpec(gpus=2, nodes=1, device_plugin=True, suffix="b", personality=personality),
        classes=False,
        publish=False,
    )


def _pool(fleet: GpuFleet, namespace: str, driver: DriverUnderTest) -> rollout.PoolToMove:
    return rollout.PoolToMove(
        f"{namespace}-a", tuple(fleet.pool_nodes[0]), driver.driver, driver.extended_resource
    )


def _install(fleet: GpuFleet) -> Callable[[Sequence[str]], object]:
    return lambda nodes: [fleet.publisher.publish_node(n) for n in nodes]


def test_pool_migrates_to_dra_and_recreated_legacy_pods_land_there(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_fleet: MakeGpuFleet, cell: Cell
) -> None:
    gpu = driver.extended_resource
    fleet = _two_pools(gpu_fleet, driver, moving_nodes=2)
    (a0, a1), (b0,) = fleet.pool_nodes
    kube.create(_plugin_daemonset(namespace))
    for name, pool in (("a-0", "a"), ("a-1", "a"), ("b-0", "b")):
        kube.create(b.legacy_pod(name, namespace, gpu, 2, node_selector={POOL_LABEL: f"{namespace}-{pool}"}))
    before = {name: wait_phase(kube, namespace, name, "Running") for name in ("a-0", "a-1", "b-0")}
    assert sorted(before[n]["spec"]["nodeName"] for n in ("a-0", "a-1")) == [a0, a1]
    _plugin_pods(kube, namespace, 3)
    # The plugin's own pod on pool b is no workload: the affinity patch rolls it (see
    # DaemonSetDevicePlugin.wait_excluded); the plugin must stay on b, which `seen` records.
    bystanders = {"b-0": before["b-0"]}
    watch = Watch(kube, namespace, driver, fleet, cell, (a0, a1), bystanders)
    plugins: list[rollout.DevicePlugin] = [
        rollout.SimulatedDevicePlugin(kube, fleet.fleet),
        rollout.DaemonSetDevicePlugin(kube, namespace, PLUGIN_DS),
    ]
    device_class = rollout.gpu_device_class(driver.device_class, driver.driver, gpu)

    report = rollout.migrate_pool(
        kube, _pool(fleet, namespace, driver), plugins, _install(fleet), device_class, on_step=watch
    )

    assert report.steps == [
        "label",
        "cordon",
        "drain",
        "exclude-device-plugin",
        "install-driver",
        "device-class",
        "uncordon",
    ]
    assert sorted((r.name, r.node) for r in report.drained) == [
        ("a-0", before["a-0"]["spec"]["nodeName"]),
        (
            "a-1",
            before["a-1"]["spec"]["nodeName"],
        ),
    ]
    assert report.device_class == "unchanged"  # the session's class already maps the name
    everywhere = [a0, a1, b0]
    assert watch.seen == {
        "label": (["a-0", "a-1", "b-0"], [2, 2], [0, 0], [False, False], everywhere),
        "cordon": (["a-0", "a-1", "b-0"], [2, 2], [0, 0], [True, True], everywhere),
        "drain": (["b-0"], [2, 2], [0, 0], [True, True], everywhere),
        "exclude-device-plugin": (["b-0"], [0, 0], [0, 0], [True, True], [b0]),
        "install-driver": (["b-0"], [0, 0], [2, 2], [True, True], [b0]),
        "device-class": (["b-0"], [0, 0], [2, 2], [True, True], [b0]),
        "uncordon": (["b-0"], [0, 0], [2, 2], [False, False], [b0]),
    }
    ds = kube.get(*kinds.DAEMON_SET, PLUGIN_DS, namespace)
    assert ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ] == {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": POOL_LABEL, "operator": "Exists"},
                    {"key": rollout.STACK_LABEL, "operator": "NotIn", "values": [rollout.STACK_DRA]},
                ]
            }
        ]
    }

    # The drained workloads come back unchanged, free to go anywhere in the fleet: pool b is
    # full, so they land on the migrated pool, through DRA.
    for name in ("a-0", "a-1"):
        kube.create(b.legacy_pod(name, namespace, gpu, 2, node_selector={FLEET_LABEL: namespace}))
    after = [wait_phase(kube, namespace, name, "Running") for name in ("a-0", "a-1")]

    assert sorted(p["spec"]["nodeName"] for p in after) == [a0, a1]
    for pod in after:
        [claim] = claims_of(kube, namespace, pod["metadata"]["name"])
        assert pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == claim["metadata"]["name"]
        assert [(r["driver"], r["pool"]) for r in allocated_devices(claim)] == [
            (driver.driver, pod["spec"]["nodeName"])
        ] * 2
    assert verify(kube, driver.driver, (a0, a1), after) == []
    watch("recreated")
    assert watch.seen["recreated"] == (["a-0", "a-1", "b-0"], [0, 0], [2, 2], [False, False], [b0])
    assert check_cluster(kube, [namespace], running=[(namespace, n) for n in ("a-0", "a-1", "b-0")]) == []


def test_rollback_returns_a_migrated_pool_to_the_device_plugin(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_fleet: MakeGpuFleet, cell: Cell
) -> None:
    gpu = driver.extended_resource
    fleet = _two_pools(gpu_fleet, driver, moving_nodes=1)
    (a0,), (b0,) = fleet.pool_nodes
    pool = _pool(fleet, namespace, driver)
    kube.create(_plugin_daemonset(namespace))
    kube.create(b.legacy_pod("b-0", namespace, gpu, 1, node_selector={POOL_LABEL: f"{namespace}-b"}))
    plugins: list[rollout.DevicePlugin] = [
        rollout.SimulatedDevicePlugin(kube, fleet.fleet),
        rollout.DaemonSetDevicePlugin(kube, namespace, PLUGIN_DS),
    ]
    rollout.migrate_pool(
        kube,
        pool,
        plugins,
        _install(fleet),
        rollout.gpu_device_class(driver.device_class, driver.driver, gpu),
    )
    kube.create(b.legacy_pod("on-dra", namespace, gpu, 2, node_selector={POOL_LABEL: pool.name}))
    on_dra = wait_phase(kube, namespace, "on-dra", "Running")
    assert on_dra["status"]["extendedResourceClaimStatus"]["requestMappings"][0]["resourceName"] == gpu
    bystanders = {"b-0": wait_phase(kube, namespace, "b-0", "Running")} | _plugin_pods(kube, namespace, 1)
    watch = Watch(kube, namespace, driver, fleet, cell, (a0,), bystanders)

    def uninstall(nodes: Sequence[str]) -> None:
        for n in nodes:
            fleet.publisher.remove_node(n)

    report = rollout.rollback_pool(kube, pool, plugins, uninstall, on_step=watch)

    assert report.steps == ["cordon", "drain", "uninstall-driver", "readmit-device-plugin", "uncordon"]
    assert [(r.name, r.uid) for r in report.drained] == [("on-dra", on_dra["metadata"]["uid"])]
    assert watch.seen == {
        "cordon": (["b-0", "on-dra"], [0], [2], [True], [b0]),
        "drain": (["b-0"], [0], [2], [True], [b0]),
        "uninstall-driver": (["b-0"], [0], [0], [True], [b0]),
        "readmit-device-plugin": (["b-0"], [2], [0], [True], [a0, b0]),
        "uncordon": (["b-0"], [2], [0], [False], [a0, b0]),
    }
    assert claims_of(kube, namespace, "on-dra") == []

    # The same workload on the rolled-back pool: served by the device plugin, no claim.
    kube.create(b.legacy_pod("back", namespace, gpu, 2, node_selector={POOL_LABEL: pool.name}))
    back = wait_phase(kube, namespace, "back", "Running")

    assert back["spec"]["nodeName"] == a0
    assert "extendedResourceClaimStatus" not in back["status"]
    assert claims_of(kube, namespace, "back") == []
    watch("back")
    assert watch.seen["back"] == (["b-0", "back"], [2], [0], [False], [a0, b0])
    assert check_cluster(kube, [namespace], running=[(namespace, "b-0"), (namespace, "back")]) == []
