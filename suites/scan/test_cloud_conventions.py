"""`dra-harness scan` on GPU pools shaped as GKE, EKS, AKS and OpenShift with NVIDIA's GPU
operator make them (fixtures.clouds: their labels, advertised resources, device-plugin
DaemonSets and running pods, each from the provider's documentation), laid onto the local
cluster as kwok nodes: each cloud's GPU sharing and MIG convention is found and worded for it,
a network device plugin's name is a note, never a verdict, and the scan's ClusterRole lets every
option run; a role without the workload kinds makes those reads NOT APPLICABLE, not a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fixtures.clouds import (
    AKS_MIG_SINGLE,
    EKS_BOTTLEROCKET_TIME_SLICED,
    EKS_SECURITY_GROUPS,
    GKE_MIG,
    GKE_TIME_SHARING,
    OPENSHIFT_MPS,
    LayPool,
)
from fixtures.driver import MakeGpuPool
from fixtures.scan import MakeKubeconfig, other_tests_gone, run_scan
from harness.clusters.base import Cell
from harness.clusters.nodes import POOL_LABEL
from harness.kit import kinds
from harness.kit.kube import Kube

pytestmark = [
    pytest.mark.serial,  # the scan reads the whole cluster
    pytest.mark.feature_gate("DRAExtendedResource"),  # else bridge-support alone is BLOCKING
    pytest.mark.fake_driver_only("cluster to itself (kwok nodes labelled as the clouds label theirs)"),
]


def _scan_alone(
    kube: Kube, namespace: str, make_kubeconfig: MakeKubeconfig, out: Path
) -> tuple[int, str, dict[str, object]]:
    """The scan as a ServiceAccount bound to exactly its ClusterRole, once the other tests are gone."""
    kubeconfig = make_kubeconfig(read=True)
    other_tests_gone(kube, namespace)
    return run_scan(kubeconfig, out)


def _findings(report: dict[str, object], node: str) -> list[tuple[str, str, str]]:
    return [
        (f["severity"], f["check"], f["message"])
        for f in report["findings"]  # type: ignore[attr-defined]
        if f["subject"] == f"node/{node}"
    ]


def test_a_gke_cluster_time_sharing_and_mig_pools_are_blocking_and_told_gkes_dra_has_neither(
    kube: Kube,
    namespace: str,
    cloud_pool: LayPool,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    shared = cloud_pool(GKE_TIME_SHARING)
    mig = cloud_pool(GKE_MIG)

    code, output, report = _scan_alone(kube, namespace, service_account_kubeconfig, tmp_path / "scan.json")

    assert code == 3, output
    assert _findings(report, shared) == [
        (
            "BLOCKING",
            "time-slicing",
            "advertises nvidia.com/gpu: 8 for 2 GPU(s) (GKE time-sharing, "
            "cloud.google.com/gke-max-shared-clients-per-gpu=4): 6 over-advertised; 6 pod(s) use 6 here, "
            "4 will not fit once DRA serves the node (a bridged pod gets whole devices)",
        )
    ]
    assert _findings(report, mig) == [
        (
            "BLOCKING",
            "mig-plain-name",
            "advertises nvidia.com/gpu: 7 for 1 GPU(s) (GKE MIG partitions, "
            "cloud.google.com/gke-gpu-partition-size=1g.5gb): 6 MIG partitions 1g.5gb under the plain "
            "name; 3 pod(s) use 3 here, 2 will not fit once DRA serves the node (a bridged pod gets a "
            "whole GPU unless its class selects that profile)",
        )
    ]
    lines = output.splitlines()
    assert "node conventions: GKE (2 node(s))" in lines
    assert f"  {GKE_MIG.labels['cloud.google.com/gke-nodepool']}: 1 node(s): {mig}" in lines
    fix = "fix: GKE's DRA set-up supports no time-sharing, MPS or multi-instance GPUs"
    assert sum(fix in line for line in lines) == 2


def test_an_eks_cluster_with_security_groups_for_pods_and_a_dra_pool_is_ready_until_a_pool_time_slices(
    kube: Kube,
    namespace: str,
    cloud_pool: LayPool,
    gpu_pool: MakeGpuPool,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    [dra_node] = gpu_pool(nodes=1, gpus=2, suffix="eks-dra").nodes
    kube.patch(*kinds.NODE, dra_node, {"metadata": {"labels": {"eks.amazonaws.com/nodegroup": "p5"}}})
    cloud_pool(EKS_SECURITY_GROUPS)
    kubeconfig = service_account_kubeconfig(read=True)
    other_tests_gone(kube, namespace)

    code, output, report = run_scan(kubeconfig, tmp_path / "scan.json")

    assert code == 0, output
    assert output.splitlines()[-1] == "verdict: READY"
    assert [f for f in report["findings"] if f["severity"] != "INFO"] == []  # type: ignore[attr-defined]
    assert (
        "INFO     not-accelerator            cluster: 1 extended resource name(s) requested are not "
        "accelerators' (NVIDIA, AMD, Intel GPU, Intel Gaudi, Google Cloud TPU, AWS Neuron): not checked: "
        "vpc.amazonaws.com/pod-eni (2 requester(s))"
    ) in output.splitlines()

    sliced = cloud_pool(EKS_BOTTLEROCKET_TIME_SLICED)
    code, output, report = run_scan(kubeconfig, tmp_path / "again.json")

    assert code == 2, output
    assert _findings(report, sliced) == [
        (
            "WARNING",
            "time-slicing",
            "advertises nvidia.com/gpu: 4 for 1 GPU(s) (EKS: more than "
            "eks.amazonaws.com/instance-gpu-count=1): 3 over-advertised; 1 pod(s) use 1 here, 0 will not "
            "fit once DRA serves the node (a bridged pod gets whole devices)",
        )
    ]


def test_an_aks_mig_pool_under_the_single_strategy_is_blocking_with_the_profile_to_map(
    kube: Kube,
    namespace: str,
    cloud_pool: LayPool,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    node = cloud_pool(AKS_MIG_SINGLE)

    code, output, report = _scan_alone(kube, namespace, service_account_kubeconfig, tmp_path / "scan.json")

    assert code == 3, output
    assert _findings(report, node) == [
        (
            "BLOCKING",
            "mig-plain-name",
            "advertises nvidia.com/gpu: 56 for 8 GPU(s) (AKS: MIG strategy single, "
            "nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB-MIG-1g.5gb): 48 MIG partitions 1g.5gb under the "
            "plain name; 10 pod(s) use 10 here, 2 will not fit once DRA serves the node (a bridged pod "
            "gets a whole GPU unless its class selects that profile)",
        )
    ]
    [finding] = [f for f in report["findings"] if f["subject"] == f"node/{node}"]  # type: ignore[attr-defined]
    assert finding["remediation"].endswith("(AKS fixes a pool's GPU instance profile at creation)")
    assert "node conventions: AKS (1 node(s)), GPU feature discovery (1 node(s))" in output.splitlines()


def test_an_openshift_gpu_operator_pool_sharing_by_mps_is_a_warning_while_its_pods_fit(
    kube: Kube,
    namespace: str,
    cloud_pool: LayPool,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    node = cloud_pool(OPENSHIFT_MPS)

    code, output, report = _scan_alone(kube, namespace, service_account_kubeconfig, tmp_path / "scan.json")

    assert code == 2, output
    assert _findings(report, node) == [
        (
            "WARNING",
            "time-slicing",
            "advertises nvidia.com/gpu: 16 for 4 GPU(s) (device-plugin MPS, 4 replicas): 12 "
            "over-advertised; 4 pod(s) use 4 here, 0 will not fit once DRA serves the node (a bridged pod "
            "gets whole devices)",
        )
    ]


def test_every_option_runs_under_the_clusterrole_and_a_role_without_workloads_is_not_applicable(
    kube: Kube,
    cell: Cell,
    namespace: str,
    gpu_pool: MakeGpuPool,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    gpu_pool(nodes=1, gpus=2)
    full = service_account_kubeconfig(read=True)
    partial = service_account_kubeconfig(read=True, without=("jobs", "cronjobs"))
    other_tests_gone(kube, namespace)
    target = f"{cell.number[0]}.{cell.number[1] + 1}"
    context = yaml.safe_load(full.read_text())["current-context"]
    options = [
        f"--context={context}",
        f"--target={target}",
        "--include-resource=vpc.amazonaws.com/pod-eni",
        f"--pool-label={POOL_LABEL}",
        "--gpu-driver=gpu.example.com",
        f"--junit={tmp_path / 'scan.xml'}",
        f"--markdown={tmp_path / 'scan.md'}",
    ]

    code, output, report = run_scan(full, tmp_path / "full.json", *options)

    assert code in (0, 2), output  # READY, or warnings of the step to the next minor
    assert report["not_checked"] == [
        "not checked: the nodes' side (driver roots, containerd's CDI set-up, the kubelet's plugin "
        "registration), the drivers' own versions and configuration, and pods not yet created by "
        "anything but the workloads listed"
    ]
    assert [c for c in report["checks"] if "needs " in c["why"]] == []  # type: ignore[attr-defined]

    code, output, report = run_scan(partial, tmp_path / "partial.json")

    assert code == 0, output
    assert (
        "not checked (no permission): list on jobs (batch), list on cronjobs (batch)" in output.splitlines()
    )
    assert output.splitlines()[-1] == "verdict: READY"
