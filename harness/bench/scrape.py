"""Reads the local cluster's own metrics endpoints and process CPU for the benchmarks."""

from __future__ import annotations

import http.client
import ssl
import threading
from pathlib import Path

from harness.bench.metrics import metric_sum, parse_metrics, process_cpu_seconds
from harness.bench.profile import ProfileFetch
from harness.clusters.host import health
from harness.clusters.local.cluster import LocalCluster

Samples = list[tuple[str, dict[str, str], float]]

# Resources whose writes are background, not the pods' cost: kwok's node heartbeats.
BACKGROUND_RESOURCES = frozenset({"leases", "nodes"})
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY"})
REQUESTS = "apiserver_request_total"
TERMINATED_WATCHERS = "apiserver_terminated_watchers_total"  # watchers too slow to keep up


class Scraper:
    def __init__(self, cluster: LocalCluster):
        self.cluster = cluster
        self._ctx = health.tls_context(None, cluster.pki.admin)  # self-signed serving certs
        self._api_ctx = health.tls_context(cluster.pki.ca.cert, cluster.pki.admin)
        self._conn: http.client.HTTPSConnection | None = None
        self._lock = threading.Lock()

    def _get(
        self, url: str, ctx: ssl.SSLContext | None = None, timeout: float = 10, only: tuple[str, ...] = ()
    ) -> Samples:
        status, body = health.get(url, ctx, timeout=timeout)
        if status != 200:
            raise RuntimeError(f"{url}: HTTP {status}: {body[:200]}")
        return parse_metrics(body, only)

    def scheduler(self, only: tuple[str, ...] = ()) -> Samples:
        """The scheduler's metrics over one kept-alive connection: a sampler polling several
        times a second would otherwise spend most of its CPU on TLS handshakes, on the same
        two cores as the scheduler it measures."""
        with self._lock:
            for attempt in (1, 2):
                if self._conn is None:
                    self._conn = http.client.HTTPSConnection(
                        "127.0.0.1", self.cluster.ports.scheduler, timeout=5, context=self._ctx
                    )
                try:
                    self._conn.request("GET", "/metrics")
                    resp = self._conn.getresponse()
                    body = resp.read().decode("utf-8", "replace")
                    break
                except (OSError, http.client.HTTPException) as e:
                    self._conn.close()
                    self._conn = None
                    # The scheduler closes a connection idle past its keep-alive (a minute of
                    # scheduler_perf between two repetitions): one fresh one, then the error.
                    stale = isinstance(
                        e, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
                    )
                    if attempt == 2 or not stale:
                        raise
        if resp.status != 200:
            raise RuntimeError(f"scheduler /metrics: HTTP {resp.status}: {body[:200]}")
        return parse_metrics(body, only)

    def cpu_profile(self, dest: Path) -> ProfileFetch:
        """The scheduler's CPU profile, fetched in the background (ProfileFetch.start)."""
        url = f"https://127.0.0.1:{self.cluster.ports.scheduler}/debug/pprof/profile"
        return ProfileFetch(url, self._ctx, dest)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def controller_manager(self) -> Samples:
        return self._get(f"https://127.0.0.1:{self.cluster.ports.controller_manager}/metrics", self._ctx)

    def apiserver_requests(self) -> Samples:
        """The API server's request counters and terminated watchers (its whole page is
        megabytes of histograms)."""
        return self._get(
            f"{self.cluster.server}/metrics", self._api_ctx, 30, only=(REQUESTS, TERMINATED_WATCHERS)
        )

    def etcd_in_use_bytes(self) -> float:
        samples = self._get(f"{self.cluster.etcd_url}/metrics", self.cluster.etcd_tls())
        return metric_sum(samples, "etcd_mvcc_db_total_size_in_use_in_bytes") or 0.0

    def cpu_seconds(self, component: str) -> float:
        return process_cpu_seconds(self.cluster.components[component].pid)


def objects_created(apiserver: Samples) -> dict[str, float]:
    """Objects the API server created (POST answered 201, no subresource), per resource."""
    out: dict[str, float] = {}
    for name, labels, value in apiserver:
        if (
            name == REQUESTS
            and labels.get("verb") == "POST"
            and labels.get("code") == "201"
            and not labels.get("subresource")
            and labels.get("dry_run", "") == ""
        ):
            out[labels["resource"]] = out.get(labels["resource"], 0.0) + value
    return out


def writes(apiserver: Samples) -> float:
    """Successful writes (any resource or subresource but the heartbeats)."""
    return sum(
        value
        for name, labels, value in apiserver
        if name == REQUESTS
        and labels.get("verb") in WRITE_VERBS
        and labels.get("code", "").startswith("2")
        and labels.get("resource") not in BACKGROUND_RESOURCES
    )


def throttle_seconds(samples: Samples) -> float:
    """Seconds a component's API client waited on its own client-side rate limiter."""
    return metric_sum(samples, "rest_client_rate_limiter_duration_seconds_sum") or 0.0
