"""`dra-harness cluster up -k 1.38 --real-nodes 2`, with 1.38's own kubelet (built with the
project's iptables-wrappers stand-in while the proxy refuses the real module: controlplane/mod/1.38.mod)
and with `--kubelet 1.37` (one minor older, as the version-skew policy allows). Pods with claims
(from a template, and a bridged nvidia.com/gpu) run on both nodes with their devices in the
container, and `cluster down` leaves nothing. every_minor: the 1.38 control plane is built by
`make test-minors` only."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from fixtures.requirements import provider_unmet, skip
from harness.clusters.named import records
from harness.controlplane.build import modfile_path
from harness.controlplane.modfile import standins_used
from harness.controlplane.nodeparts import ensure_busybox, kubelet_built
from harness.core.versions import load_matrix
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.nodepods import container_env, device_env, env_pod
from harness.upgrade.rehearsal import wait_running
from tests.e2e.lifecycle_probe import assert_nothing_left, cli, finish, recorded_ports, remove_cluster

pytestmark = [pytest.mark.every_minor, pytest.mark.real_node]

CLUSTER = "1.38"
# pkg/kubelet/kubelet_network_linux.go @ v1.38.0-beta.0 initNetworkUtil, when NewBestEffort
# returns no client
NO_IPTABLES = "No iptables support on this system; not creating the KUBE-IPTABLES-HINT chain"
NODES = ["real-0", "real-1"]  # the supervisor's pool: RealPoolSpec("real", count=2)


@pytest.fixture
def name() -> Iterator[str]:
    name = f"t{os.getpid()}-real"
    yield name
    remove_cluster(name)


@pytest.mark.parametrize("kubelet", ["1.38", "1.37"])
def test_1_38_with_two_real_nodes_runs_claim_and_bridged_pods_on_them(name: str, kubelet: str) -> None:
    matrix = load_matrix()
    if kubelet_built(matrix.minor(kubelet)) is None:
        skip(provider_unmet(f"the kubelet of {kubelet} is not built: make nodeparts K8S={kubelet}"))
    skew = ["--kubelet", kubelet] if kubelet != CLUSTER else []
    up = cli("cluster", "up", "--name", name, "-k", CLUSTER, *skew, "--real-nodes", "2")
    code, out, err = finish(up, "cluster up")
    assert code == 0, err
    assert f"Kubernetes {matrix.minor(CLUSTER).release}, gates" in out
    directory = records.state_dir(name)
    kube = Kube.from_kubeconfig(directory / "admin.kubeconfig")
    try:
        assert kube.git_version() == matrix.minor(CLUSTER).kubernetes
        versions = {n: kube.get(*kinds.NODE, n)["status"]["nodeInfo"]["kubeletVersion"] for n in NODES}
        assert versions == dict.fromkeys(NODES, matrix.minor(kubelet).kubernetes)
        image, ns = ensure_busybox(matrix)[1], "default"
        kube.create(b.claim_template("one-gpu", ns, [b.exact_request("gpu", "gpu.nvidia.com")]))
        pods = {f"claim-{n}": n for n in NODES}
        for pod, node in pods.items():
            kube.create(env_pod(pod, ns, image, node, claim_templates={"gpu": "one-gpu"}))
        kube.create(env_pod("bridged", ns, image, NODES[0], limits={"nvidia.com/gpu": "1"}))
        wait_running(kube, ns, [*pods, "bridged"])
        for pod in [*pods, "bridged"]:
            [claim] = claims_of(kube, ns, pod)
            [device] = [d["device"] for d in allocated_devices(claim)]
            env = device_env(container_env(kube, ns, pod))
            assert env["DRA_CLAIM"] == f"{ns}/{claim['metadata']['name']}"
            assert f"DRA_DEVICE_{device.upper().replace('-', '_')}" in env
        # With the stand-in (controlplane/iptables-wrappers) NewBestEffort returns no client; with
        # the real module (the modfile regenerated once the proxy serves it) the host's iptables.
        standin = bool(standins_used(modfile_path(matrix.minor(kubelet)).read_text()))
        logs = sorted(directory.rglob("kubelet.log"))
        assert len(logs) == len(NODES), logs
        for log in logs:
            assert (NO_IPTABLES in log.read_text()) == standin, log
        ports = recorded_ports(directory)
    finally:
        kube.close()
    assert finish(cli("cluster", "down", "--name", name), "cluster down")[0] == 0
    assert_nothing_left(directory, ports, "cluster down")
