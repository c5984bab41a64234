"""Prepare and Unprepare failing, then succeeding, under a real kubelet (upstream
test/e2e_node/dra_test.go: "must run pod if NodePrepareResources fails and then succeeds",
"must call NodeUnprepareResources again if it failed"). The fake plugin re-reads its faults
file on every call, so the failure ends when the file does."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from fake_driver.kubeletplugin.cdi import spec_path
from fixtures.real.realnodes import RealNodes
from harness.clusters.realnodes.node import RealNode
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import claims_of
from harness.kit.nodepods import container_env, device_env, env_pod
from harness.kit.pods import phase, wait_phase
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.real_node]
DRIVER = "gpu.nvidia.com"
WHY = "injected by the test"
# Before the injected failure, the kubelet may fetch the claim before the node authorizer's
# graph (fed by the API server's informers) links it to the node: a denial it retries
# (plugin/pkg/auth/authorizer/node/node_authorizer.go @ v1.37.2), seen under load.
GRAPH_LAG = "no relationship found between node"


@pytest.fixture
def dra_node(real_nodes: RealNodes, real_namespace: str) -> Iterator[RealNode]:
    assert real_nodes.cluster.real is not None
    node = real_nodes.cluster.real.node(real_nodes.node("dra"))
    cls = f"{real_namespace}-gpu"
    real_nodes.kube.create(b.device_class(cls, selectors=[f'device.driver == "{DRIVER}"']))
    real_nodes.kube.create(b.claim_template("one", real_namespace, [b.exact_request("gpu", cls)]))
    yield node
    node.faults_file.unlink(missing_ok=True)
    real_nodes.kube.delete(*kinds.DEVICE_CLASS, cls)


def event_messages(real_nodes: RealNodes, namespace: str, reason: str) -> list[str]:
    return [e.get("message", "") for e in real_nodes.kube.events(namespace) if e.get("reason") == reason]


def test_a_pod_starts_once_a_failing_prepare_succeeds(
    real_nodes: RealNodes, real_namespace: str, dra_node: RealNode
) -> None:
    kube, ns = real_nodes.kube, real_namespace
    dra_node.faults_file.write_text(json.dumps({"prepareErrors": {"*": WHY}}))
    kube.create(env_pod("p", ns, real_nodes.image, dra_node.name, claim_templates={"gpu": "one"}))
    failed = wait_for(
        lambda: event_messages(real_nodes, ns, "FailedPrepareDynamicResources"),
        lambda messages: any(WHY in m for m in messages),
        timeout=TIMEOUTS.pod_running,
        describe="the kubelet reports the injected Prepare failure",
    )
    assert phase(kube.get(*kinds.POD, "p", ns)) == "Pending"

    dra_node.faults_file.unlink()

    wait_phase(kube, ns, "p", "Running")
    [claim] = claims_of(kube, ns, "p")
    assert device_env(container_env(kube, ns, "p"))["DRA_CLAIM"] == f"{ns}/{claim['metadata']['name']}"
    assert [m for m in failed if WHY not in m and GRAPH_LAG not in m] == []


def test_a_failing_unprepare_is_retried_until_it_succeeds(
    real_nodes: RealNodes, real_namespace: str, dra_node: RealNode
) -> None:
    kube, ns = real_nodes.kube, real_namespace
    kube.create(env_pod("p", ns, real_nodes.image, dra_node.name, claim_templates={"gpu": "one"}))
    wait_phase(kube, ns, "p", "Running")
    [claim] = claims_of(kube, ns, "p")
    spec = spec_path(dra_node.layout.cdi_dir, DRIVER, claim["metadata"]["uid"])
    dra_node.faults_file.write_text(json.dumps({"unprepareErrors": {"*": WHY}}))

    kube.delete(*kinds.POD, "p", ns)
    wait_for(
        lambda: dra_node.kubelet_log_mentions(WHY),
        timeout=TIMEOUTS.deletion,
        describe="the kubelet got the injected Unprepare failure",
    )
    assert spec.exists()  # still prepared: the driver refused to let go

    dra_node.faults_file.unlink()

    wait_for(
        lambda: not spec.exists() and not claims_of(kube, ns, "p"),
        timeout=TIMEOUTS.deletion,
        describe="the retried Unprepare removed the CDI spec and the claim went away",
    )
