"""Builders that replaced inline manifests render what the suites wrote by hand."""

from __future__ import annotations

from harness.kit import builders as b
from harness.kit.nodepods import REAL_KUBELET_GRACE_SECONDS, env_pod


def test_template_pod_uses_one_claim_from_the_template_in_its_one_container() -> None:
    pod = b.template_pod("p", "ns", "one-gpu", claim="gpus", node_selector={"pool": "a"})
    assert pod == b.pod(
        "p",
        "ns",
        containers=[b.container(claims=["gpus"])],
        claim_templates={"gpus": "one-gpu"},
        node_selector={"pool": "a"},
    )
    assert pod["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "one-gpu"}]
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpus"}]


def test_token_kubeconfig_pairs_the_cluster_with_a_bearer_token_user() -> None:
    cfg = b.token_kubeconfig({"server": "https://127.0.0.1:6443"}, "t0ken", "plugin")
    [ctx] = cfg["contexts"]
    assert ctx == {"name": cfg["current-context"], "context": {"cluster": "plugin", "user": "plugin"}}
    assert cfg["clusters"] == [{"name": "plugin", "cluster": {"server": "https://127.0.0.1:6443"}}]
    assert cfg["users"] == [{"name": "plugin", "user": {"token": "t0ken"}}]


def test_kwok_pods_go_at_once_and_real_kubelet_pods_wait_for_their_kubelet() -> None:
    assert b.pod("p", "ns")["spec"]["terminationGracePeriodSeconds"] == 0
    real = env_pod("p", "ns", "busybox", "node-0", claim_templates={"gpu": "one"})
    assert real["spec"]["terminationGracePeriodSeconds"] == REAL_KUBELET_GRACE_SECONDS == 1
