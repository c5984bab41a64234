"""The README's sample of `dra-harness scan` output is what the scan renders, not typed: a GKE
cluster (fixtures.clouds' time-sharing pool, a migrated pool whose GPUs a DRA driver publishes, a
nightly CronJob asking for a MIG name no class maps, a FUSE device plugin's pods) evaluated and
rendered by harness.scan.cluster. DRA_HARNESS_WRITE_SAMPLES=1 rewrites the README's block."""

from __future__ import annotations

import os
from typing import Any

from fixtures.clouds import GKE_TIME_SHARING, pool_pods
from harness.core.versions import REPO_ROOT
from harness.kit.checks.migration import Workload
from harness.scan.cluster import evaluate, exit_code, render_text
from harness.scan.exits import EXIT_BLOCKING
from harness.scan.state import ClusterState

BEGIN, END = "<!-- scan-sample:begin -->", "<!-- scan-sample:end -->"
GPU, DRIVER = "nvidia.com/gpu", "gpu.nvidia.com"
POOL = "cloud.google.com/gke-nodepool"


def _node(name: str, labels: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"cpu": "96", **allocatable},
            "nodeInfo": {"kubeletVersion": "v1.37.2"},
        },
    }


def _gke_cluster() -> ClusterState:
    shared = _node("gke-l4-shared-0", dict(GKE_TIME_SHARING.labels), dict(GKE_TIME_SHARING.resources))
    dra = _node(
        "gke-h100-dra-0",
        {
            POOL: "h100-dra",
            "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
            "gke-no-default-nvidia-gpu-device-plugin": "true",
        },
        {},
    )
    fuse = _node("gke-default-0", {POOL: "default-pool"}, {"smarter-devices/fuse": "20"})
    devices = [
        {"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}, "productName": {"string": "H100"}}}
        for i in range(8)
    ]
    slices = [
        {
            "metadata": {"name": "gke-h100-dra-0-gpu.nvidia.com"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "gke-h100-dra-0",
                "pool": {"name": "gke-h100-dra-0"},
                "devices": devices,
            },
        }
    ]
    gpu_class = {
        "metadata": {"name": DRIVER, "creationTimestamp": "2026-11-02T09:00:00Z"},
        "spec": {
            "extendedResourceName": GPU,
            "selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}],
        },
    }
    pods = pool_pods(GKE_TIME_SHARING, "inference", "gke-l4-shared-0")
    fuse_pod = {
        "metadata": {"name": "builder", "namespace": "ci"},
        "spec": {
            "nodeName": "gke-default-0",
            "containers": [{"name": "c", "resources": {"limits": {"smarter-devices/fuse": "1"}}}],
        },
    }
    for i, p in enumerate([*pods, fuse_pod]):
        p["status"] = {"phase": "Running"}
        p["metadata"]["uid"] = f"uid-{i}"
    nightly = {
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}]}
    }
    return ClusterState(
        version=(1, 37),
        git_version="v1.37.2-gke.1200",
        gates={"DRAExtendedResource": True, "DynamicResourceAllocation": True},
        nodes=[shared, dra, fuse],
        pods=[*pods, fuse_pod],
        daemonsets=[],
        classes=[gpu_class],
        slices=slices,
        claims=[],
        templates=[],
        quotas=[],
        workloads=[Workload("cronjob", "research", "nightly-eval", nightly)],
    )


def test_the_readmes_scan_sample_is_the_scans_rendering_of_a_gke_cluster() -> None:
    result = evaluate(_gke_cluster(), GPU, None, [DRIVER])
    text = render_text(result)
    block = f"{BEGIN}\n```text\n$ kubectl dra-scan --context gke_acme_us-central1_prod\n{text}\n```\n{END}"
    readme = REPO_ROOT / "README.md"
    current = readme.read_text()
    shown = current[current.index(BEGIN) : current.index(END) + len(END)]
    if os.environ.get("DRA_HARNESS_WRITE_SAMPLES") == "1":
        readme.write_text(current.replace(shown, block))
        shown = block

    assert exit_code(result.findings) == EXIT_BLOCKING
    lines = text.splitlines()
    assert lines[0] == "dra-harness scan: Kubernetes v1.37.2-gke.1200, 3 nodes, 1 ResourceSlices"
    assert "bridging: nvidia.com/gpu -> DeviceClass gpu.nvidia.com on pools h100-dra" in lines
    assert "node conventions: GKE (3 node(s))" in lines
    findings = lines[: next(i for i, line in enumerate(lines) if line.startswith("checks: "))]
    assert [line.split()[1] for line in findings if line.startswith("BLOCKING ")] == [
        "time-slicing",
        "unmapped-legacy-resource",
    ]
    assert shown == block, "the README's scan sample is stale: DRA_HARNESS_WRITE_SAMPLES=1 pytest " + __file__
