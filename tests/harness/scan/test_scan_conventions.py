"""The scan's reading of the clouds' GPU node conventions and its accelerator scope
(harness.kit.checks.conventions, .accelerators, .migration) on API objects shaped as each cloud
makes them (fixtures.clouds, with the documentation each follows)."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.clouds import (
    AKS_MIG_SINGLE,
    EKS_BOTTLEROCKET_TIME_SLICED,
    EKS_SECURITY_GROUPS,
    GKE_MIG,
    GKE_TIME_SHARING,
    OPENSHIFT_MPS,
    CloudPool,
    pool_pods,
)
from harness.kit.checks.accelerators import AcceleratorScope, vendor_of
from harness.kit.checks.conventions import LOOKED_FOR, gpu_node
from harness.kit.checks.detectors import Severity
from harness.kit.checks.migration import (
    Workload,
    detect_cloud_device_plugin_on_dra_nodes,
    detect_conflicting_conventions,
    detect_time_slicing,
    detect_unmapped_legacy_requests,
)
from harness.scan.checks import conventions_statement

GPU = "nvidia.com/gpu"


def node_of(pool: CloudPool, name: str = "n-0") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": dict(pool.labels)},
        "status": {"allocatable": {"cpu": "8", **pool.resources}},
    }


def running(pool: CloudPool, node: str = "n-0") -> list[dict[str, Any]]:
    pods = pool_pods(pool, "team", node)
    for p in pods:
        p["status"] = {"phase": "Running"}
        p["metadata"]["uid"] = p["metadata"]["name"]
    return pods


@pytest.mark.parametrize(
    ("pool", "check", "severity", "message"),
    [
        (
            GKE_TIME_SHARING,
            "time-slicing",
            Severity.BLOCKING,
            "advertises nvidia.com/gpu: 8 for 2 GPU(s) (GKE time-sharing, "
            "cloud.google.com/gke-max-shared-clients-per-gpu=4): 6 over-advertised; 6 pod(s) use 6 here, "
            "4 will not fit once DRA serves the node (a bridged pod gets whole devices)",
        ),
        (
            GKE_MIG,
            "mig-plain-name",
            Severity.BLOCKING,
            "advertises nvidia.com/gpu: 7 for 1 GPU(s) (GKE MIG partitions, "
            "cloud.google.com/gke-gpu-partition-size=1g.5gb): 6 MIG partitions 1g.5gb under the plain "
            "name; 3 pod(s) use 3 here, 2 will not fit once DRA serves the node (a bridged pod gets a "
            "whole GPU unless its class selects that profile)",
        ),
        (
            EKS_BOTTLEROCKET_TIME_SLICED,
            "time-slicing",
            Severity.WARNING,
            "advertises nvidia.com/gpu: 4 for 1 GPU(s) (EKS: more than "
            "eks.amazonaws.com/instance-gpu-count=1): 3 over-advertised; 1 pod(s) use 1 here, 0 will not "
            "fit once DRA serves the node (a bridged pod gets whole devices)",
        ),
        (
            AKS_MIG_SINGLE,
            "mig-plain-name",
            Severity.BLOCKING,
            "advertises nvidia.com/gpu: 56 for 8 GPU(s) (AKS: MIG strategy single, "
            "nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB-MIG-1g.5gb): 48 MIG partitions 1g.5gb under the "
            "plain name; 10 pod(s) use 10 here, 2 will not fit once DRA serves the node (a bridged pod "
            "gets a whole GPU unless its class selects that profile)",
        ),
        (
            OPENSHIFT_MPS,
            "time-slicing",
            Severity.WARNING,
            "advertises nvidia.com/gpu: 16 for 4 GPU(s) (device-plugin MPS, 4 replicas): 12 "
            "over-advertised; 4 pod(s) use 4 here, 0 will not fit once DRA serves the node (a bridged pod "
            "gets whole devices)",
        ),
    ],
    ids=["gke-time-sharing", "gke-mig", "eks-bottlerocket", "aks-mig-single", "openshift-mps"],
)
def test_each_clouds_gpu_sharing_is_one_finding_worded_for_it(
    pool: CloudPool, check: str, severity: Severity, message: str
) -> None:
    [finding] = detect_time_slicing([node_of(pool)], running(pool), GPU)

    assert (finding.check, finding.severity, finding.subject, finding.message) == (
        check,
        severity,
        "node/n-0",
        message,
    )


def test_gke_pools_are_told_gkes_dra_supports_no_sharing_and_aks_that_the_profile_is_fixed() -> None:
    [gke] = detect_time_slicing([node_of(GKE_MIG)], [], GPU)
    [aks] = detect_time_slicing([node_of(AKS_MIG_SINGLE)], [], GPU)

    assert gke.severity == Severity.WARNING  # no pod uses it: nothing strands yet
    assert gke.remediation.startswith(
        "GKE's DRA set-up supports no time-sharing, MPS or multi-instance GPUs "
        "(docs.cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra)"
    )
    assert aks.remediation.endswith("(AKS fixes a pool's GPU instance profile at creation)")
    assert "profile == '1g.5gb'" in aks.remediation


def test_a_node_without_sharing_labels_or_with_gfds_defaults_is_not_shared() -> None:
    plain = CloudPool("GFD", "x", {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "1"}, {GPU: "8"})
    defaults = CloudPool(  # GFD labels a node without MIG mig.strategy=single (node dumps show it)
        "GFD", "y", {"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-H100"}, {GPU: "8"}
    )

    assert gpu_node(node_of(plain), GPU) is None
    assert gpu_node(node_of(defaults), GPU) is None


def test_an_eks_cluster_with_only_network_resources_has_no_blocking_finding_and_one_note() -> None:
    pods = running(EKS_SECURITY_GROUPS)

    findings = detect_unmapped_legacy_requests(pods, [], [node_of(EKS_SECURITY_GROUPS)])

    assert [(f.check, f.severity, f.subject) for f in findings] == [
        ("not-accelerator", Severity.INFO, "cluster")
    ]
    assert findings[0].message.endswith("not checked: vpc.amazonaws.com/pod-eni (2 requester(s))")


def test_include_resource_opts_a_name_in_and_vendors_names_are_in_by_default() -> None:
    pods = running(EKS_SECURITY_GROUPS)
    scope = AcceleratorScope.of([], ["vpc.amazonaws.com/pod-eni"])

    [finding] = detect_unmapped_legacy_requests(pods, [], [node_of(EKS_SECURITY_GROUPS)], scope=scope)

    assert (finding.check, finding.severity) == ("unmapped-legacy-resource", Severity.BLOCKING)
    known = ["nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "nvidia.com/gpu.shared", "amd.com/gpu"]
    known += ["gpu.intel.com/i915", "gpu.intel.com/xe", "habana.ai/gaudi", "google.com/tpu"]
    known += ["aws.amazon.com/neuroncore"]
    assert [n for n in known if vendor_of(n) is None] == []
    others = ["vpc.amazonaws.com/efa", "smarter-devices/fuse", "rdma/hca_shared_devices_a", "nvidia.com/gpux"]
    assert [n for n in others if vendor_of(n) is not None] == []


def test_thousands_of_non_gpu_names_are_one_bounded_note() -> None:
    pods = [
        {
            "metadata": {"name": f"p{i}", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {f"example.com/dev-{i}": "1"}}}]},
            "status": {"phase": "Running"},
        }
        for i in range(3000)
    ]

    findings = detect_unmapped_legacy_requests(pods, [], [])

    assert len(findings) == 1
    assert findings[0].message.startswith("3000 extended resource name(s) requested are not accelerators'")
    assert findings[0].message.endswith("and 2995 more")
    assert len(findings[0].message) < 500


def test_a_cronjobs_template_asking_for_an_unmapped_mig_name_is_blocking_and_named() -> None:
    template = {
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}]}
    }
    nightly = Workload("cronjob", "ml", "nightly-eval", template)

    [finding] = detect_unmapped_legacy_requests([], [], [], workloads=[nightly])

    assert (finding.check, finding.severity, finding.subject) == (
        "unmapped-legacy-resource",
        Severity.BLOCKING,
        "extendedresource/nvidia.com/mig-1g.10gb",
    )
    assert finding.message.endswith(
        "no node advertises it: they cannot schedule now; 0 pod(s) and 1 workload(s) request it: "
        "cronjob/ml/nightly-eval (template)"
    )


def test_a_node_with_two_clouds_labels_is_one_warning_and_none_says_what_was_looked_for() -> None:
    torn = node_of(GKE_MIG, "g-0")
    torn["metadata"]["labels"] |= dict(EKS_SECURITY_GROUPS.labels)
    nodes = [torn, node_of(EKS_SECURITY_GROUPS, "e-0"), node_of(OPENSHIFT_MPS, "o-0")]

    [finding] = detect_conflicting_conventions(nodes)

    assert (finding.check, finding.severity, finding.subject) == (
        "node-conventions",
        Severity.WARNING,
        "cluster",
    )
    assert finding.message.startswith(
        "nodes carry the labels of two clouds at once: GKE and EKS on 1 node(s): g-0;"
    )
    assert detect_conflicting_conventions(nodes[1:]) == []  # clouds side by side: each node is one
    assert conventions_statement([{"metadata": {"name": "bare"}}]) == (
        f"node conventions: none found; looked for {LOOKED_FOR}"
    )
    assert conventions_statement(nodes) == (
        "node conventions: EKS (2 node(s)), GKE (1 node(s)), GPU feature discovery (1 node(s)), "
        "OpenShift (1 node(s))"
    )


def test_a_gke_node_a_dra_driver_serves_without_gkes_opt_out_label_is_a_warning() -> None:
    labels = {
        "cloud.google.com/gke-nodepool": "h100-dra",
        "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
    }
    bare = {"metadata": {"name": "bare-0", "labels": labels}}
    opted = {
        "metadata": {
            "name": "opted-0",
            "labels": labels | {"gke-no-default-nvidia-gpu-device-plugin": "true"},
        }
    }
    slices = [
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": n, "devices": [{"name": "gpu-0"}]}}
        for n in ("bare-0", "opted-0")
    ]

    [finding] = detect_cloud_device_plugin_on_dra_nodes([bare, opted], slices, ["gpu.nvidia.com"])

    assert (finding.check, finding.severity, finding.subject) == (
        "cloud-device-plugin",
        Severity.WARNING,
        "node/bare-0",
    )
    assert finding.remediation == (
        "label the node pool gke-no-default-nvidia-gpu-device-plugin=true and create it with "
        "gpu-driver-version=disabled (docs.cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra)"
    )
    assert detect_cloud_device_plugin_on_dra_nodes([bare], slices, ["gpu.example.com"]) == []
