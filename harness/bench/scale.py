"""Scale and cost benchmark: what DRA costs the scheduler and the API server.

Four modes on the same cluster size (N simulated nodes x 8 GPUs, M pods):
  plain     pods with a CPU request only
  legacy    nodes advertise nvidia.com/gpu (device plugin); pods request it
  bridged   nodes publish 8 GPUs as DRA devices; a DeviceClass maps nvidia.com/gpu
  claims    pods use a ResourceClaimTemplate with a CEL selector on productName
Each mode gets a fresh local cluster; each repetition creates M pods concurrently and
measures until all are bound. Throughput comes from the scheduler's own counter
(schedule_attempts_total{result="scheduled"}) sampled every second, as upstream
scheduler_perf does, so the figures compare as ratios with its thresholds.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fake_driver.fleet import fleet_from_dict
from fake_driver.publisher import Publisher
from harness import builders as b
from harness.bench.metrics import (
    Sampler,
    cv,
    first_metric,
    metric_sum,
    parse_metrics,
    percentile,
    process_cpu_seconds,
    throughput_windows,
)
from harness.clusters import health
from harness.clusters.local import LocalCluster
from harness.clusters.nodes import NodePool, node_manifest
from harness.kube import Kube, Obj
from harness.waits import wait_for

MODES = ("plain", "legacy", "bridged", "claims")
GPU = "nvidia.com/gpu"
DRIVER = "gpu.nvidia.com"
PRODUCT = "NVIDIA H100 80GB HBM3"
NAMESPACE = "bench"
BENCH_LABEL = "dra-harness.io/bench"
CLIENT_QPS = 5000  # as scheduler_perf: client-side rate limiters must not be the bottleneck
CLAIM_CREATE_METRICS = [
    "dynamic_resource_allocation_resourceclaim_creates_total",  # 1.37+
    "scheduler_resourceclaim_creates_total",  # 1.34-1.36
]


@dataclass
class RepResult:
    pods: int
    seconds: float
    avg_pods_per_s: float
    p50: float
    p90: float
    p99: float
    api_objects_per_pod: float
    etcd_growth_bytes: float
    peak_pending_pods: float
    scheduler_cpu_s: float
    claims_created: float
    throttled_requests: int


@dataclass
class ModeResult:
    mode: str
    reps: list[RepResult]

    def median(self, key: str) -> float:
        return float(statistics.median(getattr(r, key) for r in self.reps))

    def cv(self, key: str) -> float:
        return cv([getattr(r, key) for r in self.reps])


class _Scraper:
    def __init__(self, cluster: LocalCluster):
        self.cluster = cluster
        self.ctx = health.tls_context(None, cluster.pki.admin)

    def scheduler(self) -> list[tuple[str, dict[str, str], float]]:
        status, body = health.get(
            f"https://127.0.0.1:{self.cluster.ports.scheduler}/metrics", self.ctx, timeout=5
        )
        if status != 200:
            raise RuntimeError(f"scheduler /metrics: {status}")
        return parse_metrics(body)

    def etcd_db_bytes(self) -> float:
        _, body = health.get(f"http://127.0.0.1:{self.cluster.ports.etcd_client}/metrics", timeout=5)
        return metric_sum(parse_metrics(body), "etcd_mvcc_db_total_size_in_bytes") or 0.0


def _parallel(fn: Callable[[Any], object], items: list[Any], workers: int = 32) -> None:
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fn, items))


def _setup(kube: Kube, cluster: LocalCluster, mode: str, nodes: int) -> None:
    pool = NodePool("bench", nodes, extended_resources={GPU: "8"} if mode == "legacy" else {})
    _parallel(lambda name: kube.create(node_manifest(pool, name)), pool.node_names())
    wait_for(
        lambda: sum(
            1
            for n in kube.list("v1", "Node")
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions") or []
            )
            and not n["spec"].get("taints")
        ),
        lambda ready: ready == nodes,
        timeout=300,
        describe=f"{nodes} nodes Ready",
    )
    if mode in ("bridged", "claims"):
        fleet = fleet_from_dict(
            {
                "pools": [
                    {
                        "name": "bench",
                        "nodes": pool.node_names(),
                        "profile": "h100-80gb-hbm3",
                        "gpus": 8,
                        "personality": "nvidia-v25.12",
                    }
                ]
            }
        )
        Publisher(kube.api_client, fleet, cluster.minor.name, dry_run_first=False).publish_all()
        kube.create(
            b.device_class(
                DRIVER,
                selectors=[f'device.driver == "{DRIVER}"'],
                extended_resource_name=GPU if mode == "bridged" else None,
            )
        )
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    wait_for(
        lambda: kube.get("v1", "ServiceAccount", "default", NAMESPACE), timeout=60, describe="default SA"
    )
    if mode == "claims":
        selector = f'device.attributes["{DRIVER}"].productName == "{PRODUCT}"'
        kube.create(
            b.claim_template("gpu", NAMESPACE, [b.exact_request("gpu", DRIVER, selectors=[selector])])
        )


def _pod(mode: str, i: int) -> Obj:
    name, labels = f"p-{i}", {BENCH_LABEL: "1"}
    if mode == "plain":
        return b.pod(name, NAMESPACE, labels=labels, containers=[b.container(requests={"cpu": "10m"})])
    if mode in ("legacy", "bridged"):
        return b.pod(name, NAMESPACE, labels=labels, containers=[b.container(limits={GPU: "1"})])
    return b.pod(
        name,
        NAMESPACE,
        labels=labels,
        containers=[b.container(claims=["gpu"])],
        claim_templates={"gpu": "gpu"},
    )


def _count(kube: Kube, kind: str, api: str = "v1") -> int:
    return len(kube.list(api, kind, NAMESPACE))


def _rep(kube: Kube, cluster: LocalCluster, scrape: _Scraper, mode: str, pods: int, rep: int) -> RepResult:
    sched_pid = cluster.components["kube-scheduler"].pid
    before = scrape.scheduler()
    scheduled0 = metric_sum(before, "scheduler_schedule_attempts_total", result="scheduled") or 0.0
    claims0 = first_metric(before, CLAIM_CREATE_METRICS, status="success") or 0.0
    etcd0, cpu0 = scrape.etcd_db_bytes(), process_cpu_seconds(sched_pid)
    throttled = 0
    started = time.monotonic()
    with (
        Sampler(
            lambda: (
                metric_sum(scrape.scheduler(), "scheduler_schedule_attempts_total", result="scheduled") or 0.0
            ),
            1.0,
        ) as scheduled,
        Sampler(lambda: metric_sum(scrape.scheduler(), "scheduler_pending_pods") or 0.0, 0.5) as pending,
    ):

        def create(i: int) -> None:
            nonlocal throttled
            for _ in range(5):
                try:
                    kube.create(_pod(mode, rep * pods + i))
                    return
                except Exception as err:  # 429 is the API server's own throttling: count and retry
                    if getattr(err, "status", None) != 429:
                        raise
                    throttled += 1

        _parallel(create, list(range(pods)))
        wait_for(
            lambda: metric_sum(scrape.scheduler(), "scheduler_schedule_attempts_total", result="scheduled"),
            lambda v: (v or 0) - scheduled0 >= pods,
            timeout=600,
            interval=0.5,
            describe=f"{pods} {mode} pods scheduled",
        )
    seconds = time.monotonic() - started
    after = scrape.scheduler()
    windows = throughput_windows([v for v in scheduled.values if v == v])
    objects = (
        _count(kube, "Pod") + _count(kube, "ResourceClaim", "resource.k8s.io/v1") + _count(kube, "Event")
    )
    result = RepResult(
        pods=pods,
        seconds=round(seconds, 1),
        avg_pods_per_s=round(pods / max(len(windows), 1), 1),
        p50=percentile(windows, 50),
        p90=percentile(windows, 90),
        p99=percentile(windows, 99),
        api_objects_per_pod=round(objects / pods, 2),
        etcd_growth_bytes=scrape.etcd_db_bytes() - etcd0,
        peak_pending_pods=max((v for v in pending.values if v == v), default=0.0),
        scheduler_cpu_s=round(process_cpu_seconds(sched_pid) - cpu0, 2),
        claims_created=(first_metric(after, CLAIM_CREATE_METRICS, status="success") or 0.0) - claims0,
        throttled_requests=throttled,
    )
    _clear(kube)
    return result


def _clear(kube: Kube) -> None:
    """Delete the repetition's pods at once and wait until their claims are gone too."""
    kube.resource("v1", "Pod").delete(
        namespace=NAMESPACE, body={"gracePeriodSeconds": 0}, label_selector=BENCH_LABEL + "=1"
    )
    wait_for(
        lambda: (_count(kube, "Pod"), _count(kube, "ResourceClaim", "resource.k8s.io/v1")),
        lambda counts: counts == (0, 0),
        timeout=600,
        interval=0.5,
        describe="bench pods and claims deleted",
    )


def run_mode(minor: str, mode: str, nodes: int, pods: int, reps: int) -> ModeResult:
    with LocalCluster(minor, "dra-all", client_qps=CLIENT_QPS) as cluster:
        kube = Kube.from_kubeconfig(cluster.kubeconfig)
        _setup(kube, cluster, mode, nodes)
        scrape = _Scraper(cluster)
        results = [_rep(kube, cluster, scrape, mode, pods, r) for r in range(reps)]
        kube.close()
    return ModeResult(mode, results)


KEYS = (
    "avg_pods_per_s",
    "p50",
    "p90",
    "p99",
    "api_objects_per_pod",
    "etcd_growth_bytes",
    "peak_pending_pods",
    "scheduler_cpu_s",
    "claims_created",
)


def summarize(minor: str, nodes: int, pods: int, results: list[ModeResult]) -> dict[str, Any]:
    by_mode = {r.mode: r for r in results}
    out: dict[str, Any] = {"kubernetes": minor, "nodes": nodes, "pods": pods, "modes": {}}
    for r in results:
        medians = {k: r.median(k) for k in KEYS}
        entry: dict[str, Any] = {
            "median": medians,
            "cv_percent": {k: round(r.cv(k), 1) for k in KEYS},
            "reps": [asdict(x) for x in r.reps],
        }
        for base in ("plain", "legacy"):
            if base in by_mode and base != r.mode:
                ref = by_mode[base]
                entry[f"ratio_to_{base}"] = {
                    k: round(medians[k] / ref.median(k), 3) if ref.median(k) else None
                    for k in ("avg_pods_per_s", "api_objects_per_pod", "scheduler_cpu_s", "etcd_growth_bytes")
                }
        out["modes"][r.mode] = entry
    return out


def run(
    minor: str, nodes: int, pods: int, reps: int, modes: tuple[str, ...], out: Path | None
) -> dict[str, Any]:
    results = []
    for mode in modes:
        started = time.monotonic()
        results.append(run_mode(minor, mode, nodes, pods, reps))
        print(
            f"bench {mode}: {time.monotonic() - started:.0f}s, median "
            f"{results[-1].median('avg_pods_per_s'):.0f} pods/s",
            flush=True,
        )
    summary = summarize(minor, nodes, pods, results)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(summary, indent=2))
    return summary
