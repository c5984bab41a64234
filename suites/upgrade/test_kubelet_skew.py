"""Kubelet skew in a 1.37 cluster, and in a 1.38 one (every_minor: its control plane is built
by `make test-minors` only): real nodes whose kubelets are one to three minors older (each with
its own minor's default gates, as a node pool left behind has), and on each a bridged pod, a
claim pod and a mixed pod (claim and bridged resource). Every pod runs: the kubelet admits
extended resources its node does not advertise; what differs is whether the bridged devices
reach the container (harness.core.expectations.kubelet_prepares_bridged_claim). The 1.38
kubelet's own row is tests/e2e/test_cluster_real_nodes.py's (the cluster's minor, no skew)."""

from __future__ import annotations

import pytest

from fixtures.requirements import not_built, skip
from fixtures.upgrade import StartRehearsal
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane.nodeparts import kubelet_built
from harness.core.expectations import kubelet_prepares_bridged_claim
from harness.core.versions import load_matrix, minor_number
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.nodepods import container_env, env_pod
from harness.upgrade.rehearsal import wait_running

KINDS = ("bridged", "claim", "mixed")


@pytest.mark.real_node
@pytest.mark.parametrize(
    ("minor", "older"),  # the control plane's, and N-1 .. N-3: the kubelets the skew policy allows
    [
        pytest.param("1.37", ("1.36", "1.35", "1.34"), id="1.37"),
        pytest.param("1.38", ("1.37", "1.36", "1.35"), marks=pytest.mark.every_minor, id="1.38"),
    ],
)
def test_every_pod_kind_runs_on_older_kubelets_and_bridged_devices_reach_it_where_the_gate_is_on(
    rehearsal: StartRehearsal, minor: str, older: tuple[str, ...]
) -> None:
    matrix = load_matrix()
    missing = [m for m in older if kubelet_built(matrix.minor(m)) is None]
    if missing:  # the table is whole or not run: a row left out would pass unseen
        skip(not_built(f"the kubelet of {', '.join(missing)} is not built: make upgradeparts"))
    pools = [RealPoolSpec(f"k{m.replace('.', '')}", count=1, gpus=4, minor=m) for m in older]
    r = rehearsal(minor, "defaults", real_pools=pools)
    assert r.cluster.real is not None
    image, ns, gpu = (
        r.cluster.real.busybox_ref,
        r.fleet.namespace,
        r.fleet.extended_resource,
    )
    for pool in pools:
        [node] = pool.node_names()
        info = r.kube.get(*kinds.NODE, node)["status"]["nodeInfo"]
        assert info["kubeletVersion"] == matrix.minor(pool.minor or minor).kubernetes
        r.objects.create(b.claim_template(pool.name, ns, [b.exact_request("gpu", r.fleet.gpu_class)]))
        claim = {"gpu": pool.name}
        r.objects.create(env_pod(f"bridged-{pool.name}", ns, image, node, limits={gpu: "1"}))
        r.objects.create(env_pod(f"claim-{pool.name}", ns, image, node, claim_templates=claim))
        r.objects.create(
            env_pod(f"mixed-{pool.name}", ns, image, node, limits={gpu: "1"}, claim_templates=claim)
        )

    wait_running(r.kube, ns, [f"{kind}-{p.name}" for p in pools for kind in KINDS])

    def devices_seen(pod: str) -> int:
        return sum(k.startswith("DRA_DEVICE_") for k in container_env(r.kube, ns, pod))

    seen = {(p.minor, kind): devices_seen(f"{kind}-{p.name}") for p in pools for kind in KINDS}
    bridged = {m: int(kubelet_prepares_bridged_claim(minor_number(m))) for m in older}
    assert seen == {
        **{(m, "bridged"): bridged[m] for m in older},
        **{(m, "claim"): 1 for m in older},
        **{(m, "mixed"): 1 + bridged[m] for m in older},
    }
    # The scheduler allocated the bridged device on every node, used or not.
    for p in pools:
        [held] = claims_of(r.kube, ns, f"bridged-{p.name}")
        assert len(allocated_devices(held)) == 1
