"""`dra-harness cluster upgrade --to 1.38` of a named 1.37 cluster with two real nodes: the
control plane steps, then each real node is drained, runs 1.38's kubelet and is uncordoned
(the rehearsal's step: harness.clusters.local.kubelets), the command says per node the
kubeletVersion before and after and that kwok nodes stay as they are, and a DRA claim pod runs
on each upgraded node. Bad input first: a step down the skew policy forbids with 1.37 kubelets
and an unknown cluster are one line each and change nothing."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator

import pytest

from fixtures.requirements import provider_unmet, skip
from harness.clusters.local.upgrade import SKEW_POLICY
from harness.clusters.named import records
from harness.controlplane.build import controlplane_built
from harness.controlplane.nodeparts import ensure_busybox, kubelet_built
from harness.core.versions import load_matrix
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of, wait_claims_gone
from harness.kit.kube import Kube
from harness.kit.nodepods import container_env, device_env, env_pod
from harness.upgrade.rehearsal import wait_running
from tests.e2e.lifecycle_probe import cli, finish, remove_cluster

pytestmark = [pytest.mark.real_node]

BEFORE, AFTER = "1.37", "1.38"
NODES = ["real-0", "real-1"]  # the supervisor's pool: RealPoolSpec("real", count=2)
NS = "default"
HEADER = re.compile(
    r"^# cluster '(?P<name>[^']+)' upgraded (?P<before>[\d.]+) -> (?P<to>[\d.]+) in [\d.]+s "
    r"\(kube-apiserver [\d.]+s, kube-controller-manager [\d.]+s, kube-scheduler [\d.]+s\)$"
)


@pytest.fixture
def name() -> Iterator[str]:
    matrix = load_matrix()
    for minor in (matrix.minor(BEFORE), matrix.minor(AFTER)):
        if not controlplane_built(minor) or kubelet_built(minor) is None:
            skip(provider_unmet(f"Kubernetes {minor.kubernetes} not built: make nodeparts K8S={minor.name}"))
    cluster = f"t{os.getpid()}-up138"
    yield cluster
    remove_cluster(cluster)


def _claim_pod(kube: Kube, pod: str, node: str, image: str) -> str:
    """Pod `pod` on `node` with a claim from template `one-gpu`, Running with its device in its
    env; its claim's name."""
    kube.create(env_pod(pod, NS, image, node, claim_templates={"gpu": "one-gpu"}))
    wait_running(kube, NS, [pod])
    [claim] = claims_of(kube, NS, pod)
    [device] = [d["device"] for d in allocated_devices(claim)]
    env = device_env(container_env(kube, NS, pod))
    assert env["DRA_CLAIM"] == f"{NS}/{claim['metadata']['name']}"
    assert f"DRA_DEVICE_{device.upper().replace('-', '_')}" in env
    return str(claim["metadata"]["name"])


def test_a_named_cluster_with_real_nodes_upgrades_its_kubelets_to_1_38(name: str) -> None:
    matrix = load_matrix()
    old, new = matrix.minor(BEFORE).kubernetes, matrix.minor(AFTER).kubernetes
    code, _, err = finish(cli("cluster", "up", "--name", name, "-k", BEFORE, "--real-nodes", "2"), "up")
    assert code == 0, err
    kube = Kube.from_kubeconfig(records.state_dir(name) / "admin.kubeconfig")
    image = ensure_busybox(matrix)[1]
    kube.create(b.claim_template("one-gpu", NS, [b.exact_request("gpu", "gpu.nvidia.com")]))
    held = _claim_pod(kube, "before", NODES[0], image)

    down = finish(cli("cluster", "upgrade", "--name", name, "--to", "1.36"), "upgrade --to 1.36")
    assert down == (
        1,
        "",
        f"dra-harness: cluster {name!r}: a kubelet of {BEFORE} would be newer than "
        f"kube-apiserver 1.36, which the version-skew policy forbids ({SKEW_POLICY}); replace those "
        "nodes first\n",
    )
    unknown = finish(cli("cluster", "upgrade", "--name", "t-no-such-cluster", "--to", AFTER), "unknown")
    assert unknown == (
        1,
        "",
        "dra-harness: cluster 't-no-such-cluster' is not running: "
        "`dra-harness cluster up --name t-no-such-cluster` starts it\n",
    )
    assert kube.git_version() == old

    started = time.monotonic()
    code, out, err = finish(cli("cluster", "upgrade", "--name", name, "--to", AFTER), f"upgrade --to {AFTER}")
    wall = time.monotonic() - started
    print(f"cluster upgrade {BEFORE} -> {AFTER} with {len(NODES)} real nodes: {wall:.1f}s wall")

    assert (code, err) == (0, ""), out
    for node in NODES:  # the API's word first, then the command's
        got = kube.get(*kinds.NODE, node)
        assert got["status"]["nodeInfo"]["kubeletVersion"] == new, node
        assert "unschedulable" not in got["spec"], node
    header, *lines = out.splitlines()
    step = HEADER.match(header)
    assert step is not None, out
    assert (step["name"], step["before"], step["to"]) == (name, BEFORE, AFTER)
    kwok = [n["metadata"]["name"] for n in kube.list(*kinds.NODE) if n["metadata"]["name"] not in NODES]
    assert lines == [
        *(f"node {n}: kubelet {old} -> {new} (drained)" for n in NODES),
        f"kwok nodes: {len(kwok)}, no kubelet: left as they are",
    ], out
    assert kwok, "the demo fleet's kwok nodes"
    assert kube.git_version() == new
    record = records.running(name)
    assert record is not None
    assert (record.phase, record.minor, record.kubelets) == ("ready", AFTER, dict.fromkeys(NODES, AFTER))
    # Drained: the pod from before the step was evicted and its claim went with it.
    assert kube.list(*kinds.POD, NS, field_selector="metadata.name=before") == []
    wait_claims_gone(kube, NS, [held])
    for node in NODES:
        _claim_pod(kube, f"after-{node}", node, image)
    kube.close()
