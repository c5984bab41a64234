"""One pool's migration to the DRA driver and its rollback, step by step (see the package's
docstring), with the driver install and the DeviceClass in between."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fake_driver.publishing import legacy
from harness.kit.checks.migration import detect_time_slicing
from harness.kit.drastate import devices_per_node
from harness.kit.kinds import resource_api
from harness.kit.kube import Kube, NotFoundError, Obj
from harness.kit.waits import TIMEOUTS, wait_for
from harness.rollout.deviceplugin import (
    STACK_DEVICE_PLUGIN,
    STACK_DRA,
    STACK_LABEL,
    DevicePlugin,
    exclude_from_device_plugin,
    readmit_to_device_plugin,
)
from harness.rollout.nodes import PodRef, cordon, drain, label_pool, node_objects, pods_on, uncordon

ClassOutcome = Literal["created", "updated", "unchanged"]
OnStep = Callable[[str], object]


@dataclass(frozen=True)
class PoolToMove:
    """A node pool to move: its name, its nodes and the DRA driver that takes it over."""

    name: str
    nodes: tuple[str, ...]
    driver: str  # e.g. gpu.nvidia.com
    resource: str = legacy.LEGACY_RESOURCE  # the legacy name the DeviceClass maps


@dataclass
class RolloutReport:
    steps: list[str] = field(default_factory=list)
    drained: list[PodRef] = field(default_factory=list)
    device_class: ClassOutcome | None = None
    warnings: list[str] = field(default_factory=list)  # found before the first step
    on_step: OnStep = field(default=lambda _: None, repr=False, compare=False)  # after each step
    on_warning: OnStep = field(default=lambda _: None, repr=False, compare=False)

    def step(self, name: str) -> None:
        self.steps.append(name)
        self.on_step(name)

    def warn(self, text: str) -> None:
        self.warnings.append(text)
        self.on_warning(text)


def sharing_warnings(kube: Kube, pool: PoolToMove) -> list[str]:
    """What the move takes from the pool's running pods that DRA does not give back: the device
    plugin's time-slicing (harness.kit.checks.migration.detect_time_slicing), one line a node."""
    nodes = list(node_objects(kube, pool.nodes).values())
    findings = detect_time_slicing(nodes, pods_on(kube, pool.nodes), pool.resource)
    return [f"{f.subject}: {f.message}; fix: {f.remediation}" for f in findings]


def install_driver(kube: Kube, pool: PoolToMove, install: Callable[[Sequence[str]], object]) -> None:
    """Run `install(nodes)` and wait until every node of the pool has the driver's devices."""
    install(pool.nodes)
    wait_for(
        lambda: {n: devices_per_node(kube, pool.driver).get(n, 0) for n in pool.nodes},
        lambda seen: all(seen.values()),
        timeout=TIMEOUTS.api_object,
        describe=f"{pool.driver} ResourceSlices on every node of pool {pool.name}",
    )


def uninstall_driver(kube: Kube, pool: PoolToMove, uninstall: Callable[[Sequence[str]], object]) -> None:
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
        "apiVersion": resource_api(api),
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


def migrate_pool(
    kube: Kube,
    pool: PoolToMove,
    plugins: Sequence[DevicePlugin],
    install: Callable[[Sequence[str]], object],
    device_class: Obj,
    *,
    on_step: OnStep = lambda _: None,
    on_warning: OnStep = lambda _: None,
    evict: bool = True,
) -> RolloutReport:
    """Move one pool from the device plugin to the DRA driver, step by step; what the move will
    break for the pool's pods (sharing_warnings) is reported through `on_warning` before any
    step, so a caller can stop before the drain."""
    report = RolloutReport(on_step=on_step, on_warning=on_warning)
    for text in sharing_warnings(kube, pool):
        report.warn(text)
    label_pool(kube, pool.nodes, {STACK_LABEL: STACK_DRA})
    report.step("label")
    cordon(kube, pool.nodes)
    report.step("cordon")
    report.drained = drain(kube, pool.nodes, evict=evict)
    report.step("drain")
    exclude_from_device_plugin(pool.nodes, plugins)
    report.step("exclude-device-plugin")
    install_driver(kube, pool, install)
    report.step("install-driver")
    report.device_class = ensure_device_class(kube, device_class)
    report.step("device-class")
    uncordon(kube, pool.nodes)
    report.step("uncordon")
    return report


def rollback_pool(
    kube: Kube,
    pool: PoolToMove,
    plugins: Sequence[DevicePlugin],
    uninstall: Callable[[Sequence[str]], object],
    *,
    on_step: OnStep = lambda _: None,
    evict: bool = True,
) -> RolloutReport:
    """Give one migrated pool back to the device plugin. The DeviceClass stays (other
    pools still use it); a device is managed by one mechanism at a time, so the driver's
    slices are gone before the plugin returns."""
    report = RolloutReport(on_step=on_step)
    cordon(kube, pool.nodes)
    report.step("cordon")
    report.drained = drain(kube, pool.nodes, evict=evict)
    report.step("drain")
    uninstall_driver(kube, pool, uninstall)
    report.step("uninstall-driver")
    # The relabel is what gives a DaemonSet plugin the pool back (its affinity excludes
    # STACK_LABEL=dra), so it happens only now, with the driver's slices gone.
    label_pool(kube, pool.nodes, {STACK_LABEL: STACK_DEVICE_PLUGIN})
    readmit_to_device_plugin(pool.nodes, plugins)
    report.step("readmit-device-plugin")
    uncordon(kube, pool.nodes)
    report.step("uncordon")
    return report
