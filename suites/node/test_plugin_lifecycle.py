"""The fake driver's kubelet plugin restarted under a real kubelet, as upstream's e2e_node
DRA tests do (test/e2e_node/dra_test.go: "must keep pod running when plugin is restarted",
"must run pod if NodePrepareResources ... after plugin restart")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_driver.kubeletplugin.cdi import spec_path
from fixtures.realnodes import RealNodes
from harness import builders as b
from harness.clusters.realnode import RealNode
from harness.drastate import claims_of
from harness.kube import Kube, Obj
from harness.nodepods import container_env, device_env, dra_calls, env_pod
from harness.pods import phase, wait_phase
from harness.waits import TIMEOUTS, assert_stays, wait_for

pytestmark = [pytest.mark.real_node]
DRIVER = "gpu.nvidia.com"
UNPREPARE = ("NodeUnprepareResources", "OK")


def driver_slices(kube: Kube, node: str) -> list[str]:
    return [
        s["metadata"]["name"]
        for s in kube.list(b.resource_api(), "ResourceSlice")
        if s["spec"].get("nodeName") == node and s["spec"]["driver"] == DRIVER
    ]


def running_pod(
    real_nodes: RealNodes, ns: str, node: RealNode, template: str
) -> tuple[Obj, dict[str, str], Path]:
    """Pod `p` with a claim from `template` on `node`, Running: (pod, device env, CDI spec)."""
    kube = real_nodes.kube
    kube.create(env_pod("p", ns, real_nodes.image, node.name, claim_templates={"gpu": template}))
    running = wait_phase(kube, ns, "p", "Running")
    [claim] = claims_of(kube, ns, "p")
    spec = spec_path(node.layout.cdi_dir, DRIVER, claim["metadata"]["uid"])
    return running, device_env(container_env(kube, ns, "p")), spec


def assert_kept(kube: Kube, ns: str, running: Obj, env: dict[str, str], spec: Path) -> None:
    """Pod `p` still runs its first container, with the same devices, still prepared."""
    pod = kube.get("v1", "Pod", "p", ns)
    assert phase(pod) == "Running"
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert pod["status"]["startTime"] == running["status"]["startTime"]
    assert device_env(container_env(kube, ns, "p")) == env
    assert spec.exists()


def node_of(real_nodes: RealNodes, pool: str) -> RealNode:
    assert real_nodes.cluster.real is not None
    return real_nodes.cluster.real.node(real_nodes.node(pool))


@pytest.fixture
def one_gpu(real_nodes: RealNodes, real_namespace: str) -> Iterator[str]:
    cls = f"{real_namespace}-gpu"
    real_nodes.kube.create(b.device_class(cls, selectors=[f'device.driver == "{DRIVER}"']))
    real_nodes.kube.create(b.claim_template("one", real_namespace, [b.exact_request("gpu", cls)]))
    yield "one"
    real_nodes.kube.delete(b.resource_api(), "DeviceClass", cls)


def test_plugin_restart_re_registers_and_the_running_pod_keeps_its_device(
    real_nodes: RealNodes, real_namespace: str, one_gpu: str
) -> None:
    kube, ns, node = real_nodes.kube, real_namespace, node_of(real_nodes, "dra")
    running, env, spec = running_pod(real_nodes, ns, node, one_gpu)

    node.restart("kubelet-plugin")  # returns once the kubelet logged the new registration

    assert_kept(kube, ns, running, env, spec)
    before = dra_calls(kube, node.name).get(UNPREPARE, 0)
    kube.delete("v1", "Pod", "p", ns)
    wait_for(
        lambda: dra_calls(kube, node.name).get(UNPREPARE, 0) - before,
        lambda n: n == 1,
        timeout=TIMEOUTS.deletion,
        describe=f"the restarted plugin unprepared the claim on {node.name}",
    )
    assert not spec.exists()


def test_a_pod_created_while_the_plugin_is_down_starts_once_it_registers(
    real_nodes: RealNodes, real_namespace: str, one_gpu: str
) -> None:
    kube, ns, node = real_nodes.kube, real_namespace, node_of(real_nodes, "dra")
    node.stop_component("kubelet-plugin")
    try:
        kube.create(env_pod("p", ns, real_nodes.image, node.name, claim_templates={"gpu": one_gpu}))
        assert_stays(
            lambda: phase(kube.get("v1", "Pod", "p", ns)),
            lambda p: p == "Pending",
            duration=5.0,
            describe="the pod waits for the driver's plugin",
        )
    finally:
        node.start_component("kubelet-plugin")

    wait_phase(kube, ns, "p", "Running")
    assert device_env(container_env(kube, ns, "p"))["DRA_CLAIM"].startswith(f"{ns}/p-gpu-")


def test_a_kubelet_restart_keeps_the_prepared_pod_running_and_unprepares_it_later(
    real_nodes: RealNodes, real_namespace: str, one_gpu: str
) -> None:
    """Upstream: the kubelet restores prepared claims from its checkpoint
    (pkg/kubelet/cm/dra/state), so the pod keeps its devices and is unprepared on delete."""
    kube, ns, node = real_nodes.kube, real_namespace, node_of(real_nodes, "dra")
    running, env, spec = running_pod(real_nodes, ns, node, one_gpu)

    node.restart("kubelet")  # returns once the new kubelet answers /healthz

    real_nodes.cluster.real.wait_ready(real_nodes.cluster.kubeconfig)  # type: ignore[union-attr]
    assert_kept(kube, ns, running, env, spec)
    # The new kubelet wiped the node's slices at start; the plugin publishes them again.
    wait_for(
        lambda: driver_slices(kube, node.name),
        lambda names: len(names) == 1,
        timeout=TIMEOUTS.api_object,
        describe=f"{node.name}'s slices published again",
    )
    kube.delete("v1", "Pod", "p", ns)
    wait_for(spec.exists, lambda there: not there, timeout=TIMEOUTS.deletion, describe="the CDI spec removed")
    wait_for(
        lambda: dra_calls(kube, node.name).get(UNPREPARE, 0),  # the new kubelet's own counters
        lambda n: n == 1,
        timeout=TIMEOUTS.api_object,
        describe=f"one NodeUnprepareResources by the restarted kubelet on {node.name}",
    )


def test_the_kubelet_removes_the_nodes_slices_when_the_plugin_is_gone(
    real_nodes: RealNodes, real_namespace: str
) -> None:
    """pkg/kubelet/cm/dra/manager.go defaultWipingDelay: 30 s after the plugin unregisters,
    the kubelet deletes the node's ResourceSlices of that driver; a new instance publishes
    them again."""
    kube, node = real_nodes.kube, node_of(real_nodes, "dra")

    def slices() -> list[str]:
        return driver_slices(kube, node.name)

    assert len(slices()) == 1
    node.stop_component("kubelet-plugin")
    try:
        wait_for(slices, lambda names: names == [], timeout=60.0, describe=f"{node.name}'s slices wiped")
    finally:
        node.start_component("kubelet-plugin")
    wait_for(
        slices, lambda names: len(names) == 1, timeout=TIMEOUTS.api_object, describe="slices republished"
    )
