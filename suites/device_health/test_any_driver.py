"""device-health of any driver, never seen before (qualify's capability): a device made sick by
the vendor's --inject-fault-command must, within TIMEOUTS.device_sick, carry a taint whose
effect keeps new claims off it (NoSchedule or NoExecute) or be withdrawn from the slices; the
real scheduler then leaves a claim only that device satisfies Pending, and (tainted) gives it
to a claim tolerating the taint's key. Both ways are real drivers': sigs.k8s.io/dra-driver-
nvidia-gpu @v0.4.1 and @v0.5.0 taint (cmd/gpu-kubelet-plugin/device_health.go, gate
NVMLDeviceHealthCheck), NVIDIA's v25.x withdraws (the fake driver's nvidia-v25.12 personality,
from source reading). Driver-agnostic: the device is picked from the driver's slices on one of
its nodes and pinned by an attribute only it has there.

Qualify runs this file last: the device stays sick (no undo is known for a vendor's fault).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.artifacts.reporting import EVIDENCE
from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.requirements import provider_unmet, skip
from harness.clusters.base import Cluster
from harness.core.errors import HarnessError, WaitTimeout
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.fleet_inventory import Inventory
from harness.kit.kube import Kube, Obj
from harness.kit.nodepods import inject_fault
from harness.kit.pods import condition, scheduling_message, unschedulable_reasons
from harness.kit.waits import TIMEOUTS, wait_for

# Effects that keep new claims off a device (resource.k8s.io/v1 DeviceTaintEffect); None only warns.
KEEPS_OFF = ("NoSchedule", "NoExecute")
NO_INJECTOR = "how to make one of the driver's devices sick: no --inject-fault-command given"
CANNOT_ALLOCATE = "cannot allocate all claims"  # the scheduler's DRA filter, per node


def _devices(kube: Kube, driver: str, node: str) -> dict[str, tuple[str, Obj]]:
    """The driver's devices on `node` now: name -> (pool, device)."""
    return {
        d["name"]: (s["spec"]["pool"]["name"], d)
        for s in kube.list(*kinds.RESOURCE_SLICE)
        if s["spec"].get("driver") == driver and s["spec"].get("nodeName") == node
        for d in s["spec"].get("devices") or []
    }


def _state(devices: dict[str, tuple[str, Obj]], name: str) -> str:
    """One device as the driver publishes it: withdrawn, or its taints."""
    if name not in devices:
        return "withdrawn"
    taints = devices[name][1].get("taints") or []
    shown = [f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in taints]
    return "tainted " + ", ".join(shown) if taints else "published, no taint"


def _keeps_off(state: str) -> bool:
    taints = state.removeprefix("tainted ").split(", ") if state.startswith("tainted ") else []
    return state == "withdrawn" or any(t.rsplit(":", 1)[1] in KEEPS_OFF for t in taints)


def _selector(driver: str, name: str, devices: dict[str, tuple[str, Obj]]) -> str | None:
    """CEL that only device `name` of the node meets: an attribute value no other device has."""
    attrs: dict[str, Any] = devices[name][1].get("attributes") or {}
    for key in sorted(attrs):
        value = attrs[key]
        if not ({"string", "int"} & set(value)):
            continue
        others = [(d.get("attributes") or {}).get(key) for n, (_, d) in devices.items() if n != name]
        if value in others:
            continue
        domain, _, attr = key.rpartition("/")
        literal = json.dumps(value["string"]) if "string" in value else str(value["int"])
        return f"device.attributes['{domain or driver}'].{attr} == {literal}"
    return None


def _claim_pod(kube: Kube, ns: str, name: str, request: Obj, selector: dict[str, str]) -> None:
    kube.create(b.claim_template(name, ns, [request]))
    kube.create(b.template_pod(name, ns, name, node_selector=selector))


def _scheduled_or_not(kube: Kube, ns: str, name: str) -> Obj:
    """The pod once the scheduler has said: bound, or Unschedulable."""

    def said(p: Obj) -> bool:
        c = condition(p, "PodScheduled")
        return c is not None and (c["status"] == "True" or c.get("reason") == "Unschedulable")

    return wait_for(
        lambda: kube.get(*kinds.POD, name, ns),
        said,
        timeout=TIMEOUTS.pod_scheduled,
        describe=f"the scheduler's verdict on pod {ns}/{name}",
    )


def test_a_sick_device_is_kept_from_new_claims(
    cluster: Cluster,
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    external_inventory: Callable[[], Inventory],
    record_property: Callable[[str, object], None],
) -> None:
    if driver.source != "external":
        skip(
            provider_unmet(
                "an external driver (qualify's device-health; the fake driver's: suites/device_taints)"
            )
        )
    if not driver.inject_fault:
        skip(provider_unmet(NO_INJECTOR))
    pool = gpu_pool(nodes=1, gpus=1)
    [node] = pool.nodes
    # Of the class's devices: a device of another class (a MIG device on NVIDIA's node) would
    # leave the class's claim Pending whatever its health.
    [of_node] = [n for n in external_inventory().nodes if n.node == node]
    of_class = {d["name"] for d in of_node.matching}
    before = _devices(kube, driver.driver, node)
    chosen = [n for n in sorted(before) if n in of_class and not _keeps_off(_state(before, n))]
    if not chosen:
        pytest.fail(
            f"every device of class {driver.device_class} on {node} is already tainted or withdrawn",
            pytrace=False,
        )
    name = chosen[0]
    slice_pool = before[name][0]
    cel = _selector(driver.driver, name, before)
    if cel is None and len(of_class) > 1:
        skip(
            provider_unmet(
                f"an attribute only {name} has among {node}'s {len(before)} devices, to ask for it by"
            )
        )

    try:
        inject_fault(driver.inject_fault, node, name, kubeconfig=cluster.kubeconfig)
    except HarnessError as err:
        pytest.fail(f"making {name} of {node} sick: {err}", pytrace=False)
    try:
        state = wait_for(
            lambda: _state(_devices(kube, driver.driver, node), name),
            _keeps_off,
            timeout=TIMEOUTS.device_sick,
            describe=f"{name} of {node} tainted {'/'.join(KEEPS_OFF)} or withdrawn by {driver.driver}",
        )
    except WaitTimeout as err:
        pytest.fail(f"the fault changed nothing that keeps claims off {name}: {err}", pytrace=False)

    sel = pool.node_selector
    request = b.exact_request("gpu", driver.device_class, selectors=[cel] if cel else [])
    _claim_pod(kube, namespace, "sick", request, sel)
    pod = _scheduled_or_not(kube, namespace, "sick")
    got = [d for c in claims_of(kube, namespace, "sick") for d in allocated_devices(c)]
    assert got == [], f"the scheduler allocated {got} though {name} is {state}"
    reasons = unschedulable_reasons(scheduling_message(pod))
    assert reasons.get(CANNOT_ALLOCATE) == 1, scheduling_message(pod)
    line = f"on {node}, {name} after the fault: {state}; a claim only it meets: Pending ({CANNOT_ALLOCATE})"

    if state != "withdrawn":
        taints = [t for t in _taints(kube, driver.driver, node, name) if t["effect"] in KEEPS_OFF]
        key = taints[0]["key"]
        tolerant = b.exact_request(
            "gpu",
            driver.device_class,
            selectors=[cel] if cel else [],
            tolerations=[{"key": key, "operator": "Exists"}],
        )
        _claim_pod(kube, namespace, "tolerant", tolerant, sel)
        allocated, _ = wait_for(
            lambda: (
                [d for c in claims_of(kube, namespace, "tolerant") for d in allocated_devices(c)],
                scheduling_message(kube.get(*kinds.POD, "tolerant", namespace)),
            ),
            lambda seen: bool(seen[0]),
            timeout=TIMEOUTS.claim_allocated,
            describe=f"a claim tolerating {key} allocated (last: allocation, pod's scheduling message)",
        )
        [result] = allocated
        assert (result["driver"], result["pool"], result["device"]) == (driver.driver, slice_pool, name)
        t = taints[0]
        line += f"; a claim tolerating {key} got it (taint {key}={t.get('value', '')}:{t['effect']})"
    record_property(EVIDENCE, line)


def _taints(kube: Kube, driver: str, node: str, name: str) -> list[Obj]:
    """The device's taints as published now."""
    return list(_devices(kube, driver, node)[name][1].get("taints") or [])
