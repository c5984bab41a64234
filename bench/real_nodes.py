"""Benchmark: real nodes (not a test). Binaries cached; prints one JSON line.

    python bench/real_nodes.py [-k 1.37] [--nodes 2] [--runs 5] [--pods 50]

- start to Ready of `--nodes` real nodes (from the pool's start, after the control plane is
  up), per run and median;
- a pod with a claim, create to Running, p50 and p90 over `--pods` pods (one at a time,
  deleted after, round robin over the nodes);
- resident memory per node component (MiB), after the pods.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import psutil

from harness import builders as b
from harness.clusters.local import LocalCluster
from harness.clusters.realnodes import RealPool
from harness.controlplane.nodeparts import ensure_busybox
from harness.kube import Kube
from harness.nodepods import env_pod
from harness.pods import wait_phase
from harness.versions import load_matrix
from harness.waits import TIMEOUTS, wait_for


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
        kube.delete("v1", "Pod", name, "default")
        wait_for(
            lambda: not kube.list("v1", "Pod", "default"),
            timeout=TIMEOUTS.deletion,
            describe=f"pod {name} gone",
        )
    kube.close()
    return seconds


def memory(cluster: LocalCluster) -> dict[str, dict[str, int]]:
    assert cluster.real is not None
    return {
        name: {c: psutil.Process(p.pid).memory_info().rss // 2**20 for c, p in node.components.items()}
        for name, node in cluster.real.nodes.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="real_nodes")
    parser.add_argument("-k", "--k8s-version", default=None)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pods", type=int, default=50)
    args = parser.parse_args()
    matrix = load_matrix()
    minor = matrix.minor(args.k8s_version or matrix.default_minor)
    ready, latencies, rss = [], [], {}
    for run in range(args.runs):
        with LocalCluster(minor.name, real_pools=[RealPool("b", count=args.nodes, gpus=2)]) as cluster:
            assert cluster.real is not None
            ready.append(round(cluster.real.ready_seconds, 2))
            if run == 0 and args.pods:
                latencies = pod_latencies(cluster, sorted(cluster.real.nodes), args.pods)
                rss = memory(cluster)
    q = statistics.quantiles(latencies, n=10) if len(latencies) > 1 else [0.0] * 9
    result = {
        "bench": "real_nodes",
        "kubernetes": minor.kubernetes,
        "nodes": args.nodes,
        "ready_runs_s": ready,
        "ready_median_s": statistics.median(ready),
        "pod_running_p50_s": round(statistics.median(latencies), 2) if latencies else None,
        "pod_running_p90_s": round(q[8], 2),
        "rss_mib": rss,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
