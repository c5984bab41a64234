"""The fake driver's kubelet plugin restarted, replaced and its pods force-deleted under a real
kubelet, as upstream's DRA tests do (test/e2e_node/dra_test.go: "must keep pod running when
plugin is restarted", "must run pod if NodePrepareResources ... after plugin restart";
test/e2e/dra/dra.go: "must unprepare resources for force-deleted pod")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from fake_driver.kubeletplugin.cdi import spec_path
from fixtures.real.realnodes import RealNodes, node_component_down
from harness.clusters.realnodes.node import RealNode
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import claims_of
from harness.kit.kube import Kube, NotFoundError, Obj
from harness.kit.nodepods import container_env, device_env, dra_calls, env_pod
from harness.kit.pods import phase, wait_phase
from harness.kit.waits import TIMEOUTS, assert_stays, wait_for

pytestmark = [pytest.mark.real_node]
DRIVER = "gpu.nvidia.com"
UNPREPARE = ("NodeUnprepareResources", "OK")
PREPARE = "NodePrepareResources"
MAX_PODS = 20


def driver_slices(kube: Kube, node: str) -> list[str]:
    return [
        s["metadata"]["name"]
        for s in kube.list(*kinds.RESOURCE_SLICE)
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
    pod = kube.get(*kinds.POD, "p", ns)
    assert phase(pod) == "Running"
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert pod["status"]["startTime"] == running["status"]["startTime"]
    assert device_env(container_env(kube, ns, "p")) == env
    assert spec.exists()


def wait_one_unprepare(kube: Kube, node: str, before: int, what: str) -> None:
    """The kubelet's NodeUnprepareResources count rose by exactly one from `before`."""
    wait_for(
        lambda: dra_calls(kube, node).get(UNPREPARE, 0) - before,
        lambda n: n == 1,
        timeout=TIMEOUTS.deletion,
        describe=f"one NodeUnprepareResources {what} on {node}",
    )


def node_of(real_nodes: RealNodes, pool: str) -> RealNode:
    assert real_nodes.cluster.real is not None
    return real_nodes.cluster.real.node(real_nodes.node(pool))


@pytest.fixture
def one_gpu(real_nodes: RealNodes, real_namespace: str) -> Iterator[str]:
    cls = f"{real_namespace}-gpu"
    real_nodes.kube.create(b.device_class(cls, selectors=[f'device.driver == "{DRIVER}"']))
    real_nodes.kube.create(b.claim_template("one", real_namespace, [b.exact_request("gpu", cls)]))
    yield "one"
    real_nodes.kube.delete(*kinds.DEVICE_CLASS, cls)


def test_plugin_restart_re_registers_and_the_running_pod_keeps_its_device(
    real_nodes: RealNodes, real_namespace: str, one_gpu: str
) -> None:
    kube, ns, node = real_nodes.kube, real_namespace, node_of(real_nodes, "dra")
    running, env, spec = running_pod(real_nodes, ns, node, one_gpu)

    node.restart("kubelet-plugin")  # returns once the kubelet logged the new registration

    assert_kept(kube, ns, running, env, spec)
    before = dra_calls(kube, node.name).get(UNPREPARE, 0)
    kube.delete(*kinds.POD, "p", ns)
    wait_one_unprepare(kube, node.name, before, "by the restarted plugin")
    assert not spec.exists()


def test_a_pod_created_while_the_plugin_is_down_starts_once_it_registers(
    real_nodes: RealNodes, real_namespace: str, one_gpu: str
) -> None:
    kube, ns, node = real_nodes.kube, real_namespace, node_of(real_nodes, "dra")
    with node_component_down(node, "kubelet-plugin"):
        kube.create(env_pod("p", ns, real_nodes.image, node.name, claim_templates={"gpu": one_gpu}))
        assert_stays(
            lambda: phase(kube.get(*kinds.POD, "p", ns)),
            lambda p: p == "Pending",
            duration=5.0,
            describe="the pod waits for the driver's plugin",
        )

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
    kube.delete(*kinds.POD, "p", ns)
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
    with node_component_down(node, "kubelet-plugin"):
        wait_for(slices, lambda names: names == [], timeout=60.0, describe=f"{node.name}'s slices wiped")
    wait_for(
        slices, lambda names: len(names) == 1, timeout=TIMEOUTS.api_object, describe="slices republished"
    )


def test_a_force_deleted_pod_is_unprepared_and_its_claim_deallocated(
    real_nodes: RealNodes, real_namespace: str, one_gpu: str
) -> None:
    """The pod object is gone at once (grace period 0) while its container still runs; the
    kubelet still tears it down and calls NodeUnprepareResources, and the claim, reserved by
    no pod any more, is deallocated."""
    kube, ns, node = real_nodes.kube, real_namespace, node_of(real_nodes, "dra")
    kube.create(b.resource_claim("external", ns, [b.exact_request("gpu", f"{ns}-gpu")]))
    kube.create(env_pod("p", ns, real_nodes.image, node.name, claims={"gpu": "external"}))
    wait_phase(kube, ns, "p", "Running")
    uid = kube.get(*kinds.RESOURCE_CLAIM, "external", ns)["metadata"]["uid"]
    spec = spec_path(node.layout.cdi_dir, DRIVER, uid)
    assert spec.exists()
    assert uid in node.prepared_claims()
    before = dra_calls(kube, node.name).get(UNPREPARE, 0)

    kube.delete(*kinds.POD, "p", ns, grace=0)

    with pytest.raises(NotFoundError):
        kube.get(*kinds.POD, "p", ns)
    wait_one_unprepare(kube, node.name, before, "for the force-deleted pod")
    assert not spec.exists()
    assert uid not in node.prepared_claims()
    claim = wait_for(
        lambda: kube.get(*kinds.RESOURCE_CLAIM, "external", ns),
        lambda c: not c.get("status", {}).get("allocation"),
        timeout=TIMEOUTS.deletion,
        describe="claim external deallocated",
    )
    assert not claim["status"].get("reservedFor")


def prepare_failures(kube: Kube, node: str) -> int:
    return sum(n for (method, code), n in dra_calls(kube, node).items() if method == PREPARE and code != "OK")


def failed_prepares(kube: Kube, ns: str) -> list[str]:
    """The kubelet's FailedPrepareDynamicResources messages, but for its reads of a claim the
    node authorizer refused ("no relationship found between node"): its graph can trail the
    kubelet's pod informer by a moment (plugin/pkg/auth/authorizer/node), the kubelet retries,
    and no plugin was called."""
    return [
        e.get("message", "")
        for e in kube.events(ns)
        if e.get("reason") == "FailedPrepareDynamicResources"
        and "no relationship found between node" not in e.get("message", "")
    ]


def churn(real_nodes: RealNodes, ns: str, node: str, stage: list[str], seen: list[tuple[str, str]]) -> None:
    """Pods p0, p1, ... one after another, each created, Running and deleted, until two ran in
    the last stage of the swap (at most MAX_PODS); `seen` gets (pod, the stage of the swap when
    it was created) once it ran."""
    kube = real_nodes.kube
    for i in range(MAX_PODS):
        name, at = f"p{i}", stage[-1]
        kube.create(env_pod(name, ns, real_nodes.image, node, claim_templates={"gpu": "one"}))
        wait_phase(kube, ns, name, "Running")
        seen.append((name, at))
        kube.delete(*kinds.POD, name, ns)
        if ran_in(seen, "b") >= 2:
            return


def ran_in(seen: list[tuple[str, str]], stage: str) -> int:
    return sum(at == stage for _, at in seen)


def wait_two_ran(seen: list[tuple[str, str]], stage: str, pods: Future[None]) -> None:
    def ran() -> int:
        if pods.done():
            pods.result()  # the churn's own error, if it failed
        return ran_in(seen, stage)

    wait_for(
        ran,
        lambda n: n >= 2,
        timeout=TIMEOUTS.pod_running * 2,
        describe=f"2 pods ran while the plugin instances were {stage!r}",
    )


@pytest.fixture
def dra_node_without_its_plugin(real_nodes: RealNodes) -> Iterator[RealNode]:
    """dra-0 with its usual plugin stopped; afterwards every instance a test started is
    stopped and the usual plugin is back."""
    node = node_of(real_nodes, "dra")
    node.stop_component("kubelet-plugin")
    yield node
    for component in [c for c in node.components if c.startswith("kubelet-plugin@")]:
        node.stop_component(component)
    node.start_component("kubelet-plugin")


def test_a_rolling_update_of_the_plugin_fails_no_prepare_and_the_new_instance_serves(
    real_nodes: RealNodes, real_namespace: str, one_gpu: str, dra_node_without_its_plugin: RealNode
) -> None:
    """Upstream's seamless upgrade (kubeletplugin RollingUpdate): instance B registers beside A
    on sockets of its own, the kubelet calls the newest connected instance
    (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go get()), then A leaves; pods keep starting."""
    kube, ns, node = real_nodes.kube, real_namespace, dra_node_without_its_plugin
    a = node.start_plugin_instance(f"a{uuid.uuid4().hex[:8]}")
    failures = prepare_failures(kube, node.name)
    stage, seen = ["a"], list[tuple[str, str]]()
    with ThreadPoolExecutor(1) as pool:
        pods = pool.submit(churn, real_nodes, ns, node.name, stage, seen)
        wait_two_ran(seen, "a", pods)
        b_ = node.start_plugin_instance(f"b{uuid.uuid4().hex[:8]}")
        stage.append("both")
        wait_two_ran(seen, "both", pods)
        node.stop_component(a)
        stage.append("b")
        pods.result(timeout=TIMEOUTS.pod_running * 2)

    assert [name for name, _ in seen] == [f"p{i}" for i in range(len(seen))]  # every pod ran
    assert ran_in(seen, "b") == 2
    assert prepare_failures(kube, node.name) == failures
    assert failed_prepares(kube, ns) == []
    served = {c.rsplit("-gpu-", 1)[0] for c in node.plugin_calls(b_, PREPARE)}
    assert {f"{ns}/{name}" for name, at in seen if at != "a"} <= served  # B, once it was there
    assert f"{ns}/p0" in {c.rsplit("-gpu-", 1)[0] for c in node.plugin_calls(a, PREPARE)}
