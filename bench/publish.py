"""Benchmark: publish N nodes x G GPUs of ResourceSlices with the fake driver's Publisher.

    .venv/bin/python bench/publish.py [--nodes 1000 --gpus 8 --runs 3 --workers 8 --no-dry-run]

Starts a LocalCluster, creates N Node objects, then times `Publisher.publish_all()` per run
(slices wiped between runs, not timed) and prints one JSON line: median and every run's
seconds, slices stored, and the peak RSS of this process (the publisher's process:
`resource.getrusage(RUSAGE_SELF).ru_maxrss`, a high-water mark that also covers the node
creation before it; the control plane runs in separate processes and is not counted).

The nodes carry no kwok annotation: the simulator would otherwise spend the same two cores
on 1,000 lease heartbeats while the publisher is being timed. The publisher only needs the
Node objects (their UIDs for the ownerReferences).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from fake_driver.fleetspec.fleet import Fleet, fleet_from_dict
from fake_driver.publishing.publisher import Publisher
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.nodes import KWOK_ANNOTATION, KwokPoolSpec, node_manifest
from harness.kit import kinds
from harness.kit.kube import Kube

TARGET_SECONDS = 30.0


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _create_nodes(kube: Kube, pool: KwokPoolSpec) -> list[str]:
    def create(name: str) -> str:
        body = node_manifest(pool, name)
        body["metadata"]["annotations"].pop(KWOK_ANNOTATION)
        kube.create(body)
        return name

    with ThreadPoolExecutor(max_workers=16) as ex:
        return list(ex.map(create, pool.node_names()))


def _count_slices(kube: Kube) -> int:
    return len(kube.list(*kinds.RESOURCE_SLICE, field_selector="spec.driver=gpu.nvidia.com"))


def _publish_runs(
    kube: Kube, fleet: Fleet, minor: str, args: argparse.Namespace
) -> tuple[list[float], list[int]]:
    """Publish the whole fleet `args.runs` times (removing it after each): seconds per run
    and slices published per run."""
    runs: list[float] = []
    slices: list[int] = []
    for _ in range(args.runs):
        pub = Publisher(
            kube.api_client, fleet, minor, workers=args.workers, dry_run_first=not args.no_dry_run
        )
        t0 = time.monotonic()
        report = pub.publish_all()
        runs.append(time.monotonic() - t0)
        created = report.by_action("created")
        if len(created) != args.nodes:
            raise SystemExit(f"expected {args.nodes} created pools, got {len(created)}")
        slices.append(_count_slices(kube))
        pub.remove_all()
        if _count_slices(kube) != 0:
            raise SystemExit("slices left after remove_all")
    return runs, slices


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=8, help="nodes published in parallel (1 = sequential)")
    ap.add_argument("--no-dry-run", action="store_true", help="skip the dryRun=All write before each write")
    ap.add_argument("--k8s-version", default=None, help="Kubernetes minor (default: versions.toml)")
    ap.add_argument("--profile", default="h100-80gb-hbm3")
    args = ap.parse_args(argv)

    with LocalCluster(args.k8s_version) as cluster:
        kube = Kube.from_kubeconfig(cluster.kubeconfig)
        pool = KwokPoolSpec(name="bench", count=args.nodes)
        t0 = time.monotonic()
        names = _create_nodes(kube, pool)
        create_seconds = time.monotonic() - t0
        fleet = fleet_from_dict(
            {"pools": [{"name": "bench", "nodes": names, "profile": args.profile, "gpus": args.gpus}]}
        )
        rss_before = _peak_rss_mib()
        runs, slices = _publish_runs(kube, fleet, cluster.minor.name, args)
        median = statistics.median(runs)
        out = {
            "bench": "publish",
            "kubernetes": cluster.minor.name,
            "nodes": args.nodes,
            "gpus": args.gpus,
            "profile": args.profile,
            "workers": args.workers,
            "dry_run_first": not args.no_dry_run,
            "cpus": os.cpu_count(),
            "runs_seconds": [round(r, 2) for r in runs],
            "median_seconds": round(median, 2),
            "target_seconds": TARGET_SECONDS,
            "within_target": median <= TARGET_SECONDS,
            "slices": slices,
            "devices_per_run": args.nodes * args.gpus,
            "peak_rss_mib": round(_peak_rss_mib(), 1),
            "peak_rss_before_publishing_mib": round(rss_before, 1),
            "rss_method": "resource.getrusage(RUSAGE_SELF).ru_maxrss",
            "node_create_seconds": round(create_seconds, 2),
        }
        kube.close()
    print(json.dumps(out))
    return 0 if out["within_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
