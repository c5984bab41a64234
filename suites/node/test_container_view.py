"""The node side of any driver, seen from inside the container: what the driver's kubelet plugin
prepared (NodePrepareResources, the CDI edits containerd applied) must show exactly the devices
the scheduler allocated, to the container that claims them and to no other, and be undone when
the pod goes (NodeUnprepareResources). The harness compares what the container reports (the
driver's container view: `--container-command` and `--container-device-pattern`, or `qualify
--driver-spec`) with the claim's allocation and the node's ResourceSlices.

These run on an external driver (`qualify`); the fake driver's node side has its own real-node
tests beside this file (test_dra_on_real_nodes.py), which check its CDI files from the host.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.artifacts.reporting import EVIDENCE
from fixtures.driver import DriverNodes, DriverUnderTest, MakeGpuPool
from fixtures.requirements import provider_unmet, skip
from harness.clusters.base import Cluster
from harness.core.drivers import ContainerView
from harness.core.errors import HarnessError, WaitTimeout
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import API_ERRORS, Kube, Obj
from harness.kit.nodepods import (
    CDI_DYNAMIC_DIR,
    REAL_KUBELET_GRACE_SECONDS,
    cdi_specs_naming,
    container_output,
    dra_calls,
    dra_operations,
    restart_plugin,
    view_container,
)
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for

PREPARE, UNPREPARE = ("NodePrepareResources", "OK"), ("NodeUnprepareResources", "OK")


@pytest.fixture
def view(driver: DriverUnderTest) -> ContainerView:
    if driver.source != "external":
        skip(provider_unmet("the fake driver's node side runs in suites/node's real_node tests"))
    if driver.container_view is None:
        skip(
            provider_unmet(
                "how the driver shows devices in a container: --container-command and "
                "--container-device-pattern (qualify --driver-spec)"
            )
        )
    return driver.container_view


def _node_devices(kube: Kube, driver: str, node: str) -> set[str]:
    """Names of the devices the driver publishes for `node` (its node-local slices)."""
    return {
        d["name"]
        for s in kube.list(*kinds.RESOURCE_SLICE)
        if s["spec"]["driver"] == driver and s["spec"].get("nodeName") == node
        for d in s["spec"].get("devices") or []
    }


def _calls(kube: Kube, node: str, driver: str) -> dict[tuple[str, str], int]:
    """The kubelet's DRA call counts for the driver. A read that fails (no nodes/proxy, which
    preflight checks; a kubelet that does not answer) fails the test with the error: a count
    nobody could read is no evidence the calls were made."""
    try:
        return dra_calls(kube, node, driver)
    except (HarnessError, *API_ERRORS) as err:
        pytest.fail(f"reading the kubelet's DRA call counts on {node}: {err}", pytrace=False)


def _settled_calls(kube: Kube, node: str, driver: str) -> dict[tuple[str, str], int]:
    """The node's call counts once every Prepare has had its Unprepare: an earlier test's pod
    may still be unpreparing, and its call would land in this test's delta (the counts are the
    node's, not the claim's). As they are if they never balance in time (other workloads hold
    claims on the node)."""
    try:
        return wait_for(
            lambda: _calls(kube, node, driver),
            lambda calls: calls.get(PREPARE, 0) == calls.get(UNPREPARE, 0),
            timeout=TIMEOUTS.deletion,
            describe=f"every NodePrepareResources of {driver} on {node} unprepared",
        )
    except WaitTimeout:
        return _calls(kube, node, driver)


Counts = tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]


def _counts(kube: Kube, node: str, driver: str) -> Counts:
    """The driver's gRPC calls and the node's DRA operations, as the kubelet counts them."""
    try:
        return dra_calls(kube, node, driver), dra_operations(kube, node)
    except (HarnessError, *API_ERRORS) as err:
        pytest.fail(f"reading the kubelet's DRA counts on {node}: {err}", pytrace=False)


def _failures(kube: Kube, node: str, driver: str, before: Counts) -> list[str]:
    """What failed since `before`: the driver's gRPC calls with a status other than OK (a
    Prepare that outlasted the kubelet's timeout is DeadlineExceeded) and the kubelet's DRA
    operations that ended in an error (a claim the plugin answered with an error, in an OK call)."""
    calls, ops = _counts(kube, node, driver)
    failed = [
        f"{n - before[0].get(k, 0)} {k[0]} {k[1]}" for k, n in sorted(calls.items()) if k[1] != "OK"
    ] + [f"{n - before[1].get(k, 0)} {k[0]} with an error" for k, n in sorted(ops.items()) if k[1] == "true"]
    return [f for f in failed if not f.startswith("0 ")]


def _failures_once_reported(kube: Kube, node: str, driver: str, before: Counts) -> list[str]:
    """`_failures` after the pod missed its wait: a Prepare still hanging is reported by the
    kubelet only when its own call deadline ends, which on a loaded host can come after our
    wait; so wait (bounded) for the kubelet to report a failure, else say none was reported."""
    try:
        return wait_for(
            lambda: _failures(kube, node, driver, before),
            bool,
            timeout=TIMEOUTS.pod_running,
            describe=f"the kubelet's report of a failed DRA call of {driver} on {node}",
        )
    except WaitTimeout:
        return []


def _cdi_specs(kube: Kube, ns: str, node: str, image: str, claim: Obj, name: str) -> list[str]:
    return cdi_specs_naming(kube, ns, node, image, claim["metadata"]["uid"], name)


def _prepared_specs(kube: Kube, ns: str, node: str, image: str, claim: Obj) -> tuple[list[str], str]:
    """The CDI specs naming a prepared claim, or none and why its specs' removal cannot be
    checked: a driver writing them elsewhere, or a cluster that refuses a read-only hostPath
    pod (Pod Security) says nothing about the driver, so it is no failure."""
    try:
        specs = _cdi_specs(kube, ns, node, image, claim, "cdi-prepared")
    except (HarnessError, WaitTimeout, *API_ERRORS) as err:
        why = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return [], f"{CDI_DYNAMIC_DIR} on {node} could not be read ({why}): the spec's removal not checked"
    return (
        specs,
        "" if specs else f"no CDI spec in {CDI_DYNAMIC_DIR} names the claim: its removal not checked",
    )


def _view_pod(name: str, ns: str, pool: DriverNodes, view: ContainerView, image: str) -> Obj:
    pod = b.pod(
        name,
        ns,
        containers=[
            view_container("claims", image, view.command, claims=["gpu"]),
            view_container("plain", image, view.command),
        ],
        claim_templates={"gpu": "one"},
        node_selector=pool.node_selector,
        grace_seconds=REAL_KUBELET_GRACE_SECONDS,
    )
    pod["spec"]["automountServiceAccountToken"] = False
    return pod


def _pod_node(kube: Kube, ns: str, pod: str) -> str:
    return str(kube.get(*kinds.POD, pod, ns)["spec"]["nodeName"])


def test_the_container_sees_exactly_its_claimed_device_and_its_neighbour_none(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    view: ContainerView,
    record_property: Callable[[str, object], None],
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    kube.create(b.claim_template("one", namespace, [b.exact_request("gpu", driver.device_class)]))
    kube.create(_view_pod("p", namespace, pool, view, driver.container_image))

    wait_phase(kube, namespace, "p", "Running")

    node = _pod_node(kube, namespace, "p")
    [claim] = claims_of(kube, namespace, "p")
    [result] = allocated_devices(claim)
    assert (result["driver"], result["device"] in _node_devices(kube, driver.driver, node)) == (
        driver.driver,
        True,
    ), f"allocated {result} is not a device the driver publishes for node {node}"
    seen = view.devices(container_output(kube, namespace, "p", "claims"))
    assert seen == [result["device"]], f"the claiming container shows {seen}, allocated {result['device']}"
    neighbour = view.devices(container_output(kube, namespace, "p", "plain"))
    assert neighbour == []
    record_property(
        EVIDENCE,
        f"on {node}, `{' '.join(view.command)}` in the claiming container shows {seen} "
        f"(allocated: {result['pool']}/{result['device']}); in the other container: {neighbour}",
    )


def test_prepare_and_unprepare_are_called_once_and_the_claim_is_released(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    view: ContainerView,
    record_property: Callable[[str, object], None],
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    [node] = pool.nodes
    before = _settled_calls(kube, node, driver.driver)
    counts = _counts(kube, node, driver.driver)
    kube.create(b.claim_template("one", namespace, [b.exact_request("gpu", driver.device_class)]))
    kube.create(_view_pod("p", namespace, pool, view, driver.container_image))
    try:
        wait_phase(kube, namespace, "p", "Running")
    except WaitTimeout as err:
        failed = _failures_once_reported(kube, node, driver.driver, counts)
        pytest.fail(f"{err}; failed on {node}: {failed}", pytrace=False)
    [claim] = claims_of(kube, namespace, "p")
    specs, unchecked = _prepared_specs(kube, namespace, node, driver.container_image, claim)

    kube.delete(*kinds.POD, "p", namespace)

    name = claim["metadata"]["name"]  # made from the template: deleted once the pod is gone
    try:
        wait_for(
            lambda: [c["metadata"]["name"] for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)],
            lambda names: name not in names,
            timeout=TIMEOUTS.deletion,
            describe=f"claim {namespace}/{name} released with its pod",
        )
    except WaitTimeout as err:
        pytest.fail(f"{err}; failed on {node}: {_failures(kube, node, driver.driver, counts)}", pytrace=False)
    after = wait_for(
        lambda: _calls(kube, node, driver.driver),
        lambda calls: calls.get(UNPREPARE, 0) - before.get(UNPREPARE, 0) >= 1,
        timeout=TIMEOUTS.deletion,
        describe=f"a NodeUnprepareResources of {driver.driver} on {node}",
    )
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in (PREPARE, UNPREPARE)}
    assert delta == {PREPARE: 1, UNPREPARE: 1}
    failed = _failures(kube, node, driver.driver, counts)
    assert failed == [], f"the kubelet's DRA calls for the claim failed on {node}: {failed}"
    left = _cdi_specs(kube, namespace, node, driver.container_image, claim, "cdi-unprepared") if specs else []
    assert left == [], f"CDI spec of claim {name} left on {node} after NodeUnprepareResources: {left}"
    record_property(
        EVIDENCE,
        f"on {node}, one NodePrepareResources and one NodeUnprepareResources, none failed; "
        + (unchecked or f"the claim's CDI spec {specs} gone after"),
    )


@pytest.mark.bridged
def test_an_unchanged_extended_resource_pod_gets_its_device_in_the_container(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, view: ContainerView
) -> None:
    pool = gpu_pool(nodes=1, gpus=1)
    container = view_container("main", driver.container_image, view.command)
    container["resources"] = {"limits": {driver.extended_resource: "1"}}
    pod = b.pod(
        "legacy",
        namespace,
        containers=[container],
        node_selector=pool.node_selector,
        grace_seconds=REAL_KUBELET_GRACE_SECONDS,
    )
    kube.create(pod)

    wait_phase(kube, namespace, "legacy", "Running")

    status = kube.get(*kinds.POD, "legacy", namespace).get("status", {})
    special = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    assert special, f"no extendedResourceClaimStatus on the pod: {status.get('conditions')}"
    claim = kube.get(*kinds.RESOURCE_CLAIM, special, namespace)
    [result] = allocated_devices(claim)
    assert view.devices(container_output(kube, namespace, "legacy", "main")) == [result["device"]]


def test_a_plugin_restart_keeps_the_running_pod_and_serves_a_new_one(
    cluster: Cluster,
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    view: ContainerView,
    record_property: Callable[[str, object], None],
) -> None:
    if not driver.plugin_restart:
        skip(provider_unmet("how to restart the driver's kubelet plugin on a node: --plugin-restart-command"))
    pool = gpu_pool(nodes=1, gpus=2)
    [node] = pool.nodes
    kube.create(b.claim_template("one", namespace, [b.exact_request("gpu", driver.device_class)]))
    kube.create(_view_pod("before", namespace, pool, view, driver.container_image))
    wait_phase(kube, namespace, "before", "Running")

    try:
        restart_plugin(driver.plugin_restart, node, kubeconfig=cluster.kubeconfig)
    except HarnessError as err:
        pytest.fail(f"restarting the plugin on {node}: {err}", pytrace=False)
    kube.create(_view_pod("after", namespace, pool, view, driver.container_image))
    wait_phase(kube, namespace, "after", "Running")

    seen = {}
    for name in ("before", "after"):
        status = kube.get(*kinds.POD, name, namespace)["status"]
        restarts = [c["restartCount"] for c in status["containerStatuses"]]
        assert (status["phase"], restarts) == ("Running", [0, 0]), name
        [result] = allocated_devices(claims_of(kube, namespace, name)[0])
        seen[name] = view.devices(container_output(kube, namespace, name, "claims"))
        assert seen[name] == [result["device"]], name
    assert seen["before"] != seen["after"]
    objs = {p: claims_of(kube, namespace, p)[0] for p in ("before", "after")}
    claims = {c["metadata"]["name"] for c in objs.values()}
    # the spec of the claim prepared before the restart: the restarted plugin must undo it too
    image = driver.container_image
    specs, unchecked = _prepared_specs(kube, namespace, node, image, objs["before"])
    for name in ("before", "after"):
        kube.delete(*kinds.POD, name, namespace)
    wait_for(  # the restarted plugin unprepares both (the kubelet deletes template claims after)
        lambda: {c["metadata"]["name"] for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)},
        lambda left: not (left & claims),
        timeout=TIMEOUTS.deletion,
        describe=f"claims {sorted(claims)} released with their pods",
    )
    left = _cdi_specs(kube, namespace, node, image, objs["before"], "cdi-unprepared") if specs else []
    assert left == [], (
        f"CDI spec of claim {objs['before']['metadata']['name']}, prepared before the plugin restart, "
        f"left on {node} after NodeUnprepareResources: {left}"
    )
    record_property(
        EVIDENCE,
        f"on {node}, after a plugin restart the running pod kept {seen['before']} (0 restarts) and "
        f"a new pod got {seen['after']}; both unprepared after" + (f" ({unchecked})" if unchecked else ""),
    )
