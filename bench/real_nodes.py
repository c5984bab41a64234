"""Benchmark: real nodes (not a test). Binaries cached; prints one JSON line.

    python bench/real_nodes.py [-k 1.37] [--nodes 1,3] [--runs 5] [--pods 50]

- start to Ready of N real nodes for each N of `--nodes` (from the pool's start, after the
  control plane is up), per run and the median of `--runs`;
- a pod with a claim, create to Running, p50 and p90 over `--pods` pods (one at a time,
  deleted after, round robin over the nodes of the first run);
- resident memory per node (MiB), after the pods: per component (kubelet, containerd, the
  fake driver's plugin), their sum, and everything in the node's cgroup (shims, containers).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time

import psutil

from harness.clusters.host.state import cgroup_procs
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane.nodeparts import ensure_busybox
from harness.core.versions import load_matrix
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.nodepods import env_pod
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for


def pod_latencies(cluster: LocalCluster, nodes: list[str], pods: int) -> list[float]:
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    _, image = ensure_busybox(cluster.matrix)
    kube.create(b.device_class("bench-gpu", selectors=['device.driver == "gpu.nvidia.com"']))
    kube.create(b.claim_template("one", "default", [b.exact_request("gpu", "bench-gpu")]))
    seconds = []
    for i in range(pods):
        name = f"p{i}"
        started = time.monotonic()
        kube.create(env_pod(name, "default", image, nodes[i % len(nodes)], claim_templates={"gpu": "one"}))
        wait_phase(kube, "default", name, "Running")
        seconds.append(time.monotonic() - started)
        kube.delete(*kinds.POD, name, "default")
        wait_for(
            lambda: not kube.list(*kinds.POD, "default"),
            timeout=TIMEOUTS.deletion,
            describe=f"pod {name} gone",
        )
    kube.close()
    return seconds


def rss_mib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += psutil.Process(pid).memory_info().rss
    return total // 2**20


def memory(cluster: LocalCluster) -> dict[str, dict[str, int]]:
    """Per node: MiB of each component, of kubelet + containerd + plugin, of the node's cgroup."""
    assert cluster.real is not None
    out = {}
    for name, node in cluster.real.nodes.items():
        parts = {c: rss_mib([p.pid]) for c, p in node.components.items() if c != "namespace"}
        core = sum(v for c, v in parts.items() if c in ("kubelet", "containerd", "kubelet-plugin"))
        everything = rss_mib(cgroup_procs(node.tracking_cgroup))
        out[name] = parts | {"kubelet+containerd+plugin": core, "node cgroup": everything}
    return out


def percentile(values: list[float], p: int) -> float | None:
    if not values:
        return None
    return round(statistics.quantiles(values, n=100, method="inclusive")[p - 1], 2)


def main() -> int:
    parser = argparse.ArgumentParser(prog="real_nodes")
    parser.add_argument("-k", "--k8s-version", default=None)
    parser.add_argument("--nodes", default="1,3", help="node counts, comma-separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pods", type=int, default=50)
    args = parser.parse_args()
    matrix = load_matrix()
    minor = matrix.minor(args.k8s_version or matrix.default_minor)
    counts = [int(n) for n in args.nodes.split(",")]
    ready: dict[int, list[float]] = {n: [] for n in counts}
    latencies: list[float] = []
    rss: dict[str, dict[str, int]] = {}
    for n in counts:
        for _ in range(args.runs):
            with LocalCluster(minor.name, real_pools=[RealPoolSpec("b", count=n, gpus=2)]) as cluster:
                assert cluster.real is not None
                ready[n].append(round(cluster.real.ready_seconds, 2))
                if not latencies and args.pods:
                    latencies = pod_latencies(cluster, sorted(cluster.real.nodes), args.pods)
                    rss = memory(cluster)
            print(f"# {n} node(s): Ready in {ready[n][-1]} s", file=sys.stderr, flush=True)
    result = {
        "bench": "real_nodes",
        "kubernetes": minor.kubernetes,
        "ready_runs_s": {str(n): r for n, r in ready.items()},
        "ready_median_s": {str(n): statistics.median(r) for n, r in ready.items()},
        "pods": len(latencies),
        "pod_running_p50_s": percentile(latencies, 50),
        "pod_running_p90_s": percentile(latencies, 90),
        "rss_mib": rss,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
