"""The counters a repetition's costs are differences of, read at one moment (Snapshot), and
the costs between two of them (`delta()`): objects and writes per pod, etcd growth, CPU
seconds per component, claims created, throttling, failed attempts, closed watches, steal."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.bench.metrics import first_metric, histogram_delta, metric_sum, steal_seconds
from harness.bench.scrape import (
    TERMINATED_WATCHERS,
    Samples,
    Scraper,
    objects_created,
    throttle_seconds,
    writes,
)
from harness.kit.waits import wait_for

CLAIM_CREATE_METRICS = [
    "dynamic_resource_allocation_resourceclaim_creates_total",  # 1.37+
    "scheduler_resourceclaim_creates_total",  # 1.34-1.36
]
SCHEDULED = "scheduler_schedule_attempts_total"
CPU_COMPONENTS = ("kube-scheduler", "kube-apiserver", "etcd", "kube-controller-manager")


def bound(samples: Samples) -> float:
    """Pods the scheduler has bound so far, by its own counter."""
    return metric_sum(samples, SCHEDULED, result="scheduled") or 0.0


def _settled(
    read: Callable[[], Samples], total: Callable[[Samples], float], describe: str, interval: float
) -> Samples:
    """`read()` once `total` of it stops changing between two reads `interval` apart."""
    seen: list[Samples] = []
    totals: list[float] = []

    def observe() -> float:
        seen.append(read())
        totals.append(total(seen[-1]))
        return totals[-1]

    wait_for(
        observe,
        lambda _: len(totals) > 1 and totals[-1] == totals[-2],
        timeout=30,
        interval=interval,
        describe=describe,
    )
    return seen[-1]


def _api_objects(samples: Samples) -> float:
    return sum(objects_created(samples).values())


def _scheduler_observations(samples: Samples) -> float:
    return sum(metric_sum(samples, f"{m}_count") or 0.0 for m in (EXTENSION_METRIC, PLUGIN_METRIC))


# Events reach the API server late: its counters are read once the objects created stop
# changing between two reads half a second apart.
API_SETTLE_INTERVAL = 0.5
# The scheduler records extension-point and plugin durations through an async recorder flushed
# every second (kubernetes v1.37.2 pkg/scheduler/scheduler.go NewMetricsAsyncRecorder(1000,
# time.Second, ...)): read its histograms once unchanged across more than one flush, so a
# batch's last observations are not counted in the next batch's.
SCHEDULER_SETTLE_INTERVAL = 1.2


@dataclass(frozen=True)
class Snapshot:
    scheduler: Samples
    controller_manager: Samples
    apiserver: Samples
    etcd_bytes: float
    cpu: dict[str, float]  # per component in CPU_COMPONENTS
    own_cpu: float  # this process
    steal: float  # the machine's

    @classmethod
    def before(cls, scrape: Scraper) -> Snapshot:
        """Before a batch: the metrics pages first, then the CPU counters, so reading the
        pages is not counted."""
        sched, cm, api = scrape.scheduler(), scrape.controller_manager(), scrape.apiserver_requests()
        etcd = scrape.etcd_in_use_bytes()
        cpu = {c: scrape.cpu_seconds(c) for c in CPU_COMPONENTS}
        return cls(sched, cm, api, etcd, cpu, time.process_time(), steal_seconds())

    @classmethod
    def after(cls, scrape: Scraper, describe: str) -> Snapshot:
        """After a batch: the CPU counters first (the settling wait below polls the API
        server), then the API server's counters once settled, then the rest."""
        cpu = {c: scrape.cpu_seconds(c) for c in CPU_COMPONENTS}
        own, steal = time.process_time(), steal_seconds()
        api = _settled(scrape.apiserver_requests, _api_objects, describe, API_SETTLE_INTERVAL)
        sched = _settled(
            scrape.scheduler,
            _scheduler_observations,
            f"{describe}: scheduler metrics flushed",
            SCHEDULER_SETTLE_INTERVAL,
        )
        cm = scrape.controller_manager()
        return cls(sched, cm, api, scrape.etcd_in_use_bytes(), cpu, own, steal)

    def _cpu(self, later: Snapshot, component: str) -> float:
        return round(later.cpu[component] - self.cpu[component], 2)

    def delta(self, later: Snapshot, pods: int, wall_seconds: float) -> dict[str, Any]:
        """The costs from this snapshot to `later` for `pods` pods over `wall_seconds`, as
        RepResult fields."""
        before = objects_created(self.apiserver)
        created_by = {
            k: v - before.get(k, 0.0)
            for k, v in objects_created(later.apiserver).items()
            if v > before.get(k, 0.0)
        }
        sched0, sched1 = self.scheduler, later.scheduler
        steal = later.steal - self.steal
        return {
            "api_objects_per_pod": round(sum(created_by.values()) / pods, 3),
            "api_writes_per_pod": round((writes(later.apiserver) - writes(self.apiserver)) / pods, 3),
            "etcd_growth_bytes": later.etcd_bytes - self.etcd_bytes,
            "scheduler_cpu_s": self._cpu(later, "kube-scheduler"),
            "apiserver_cpu_s": self._cpu(later, "kube-apiserver"),
            "etcd_cpu_s": self._cpu(later, "etcd"),
            "controller_manager_cpu_s": self._cpu(later, "kube-controller-manager"),
            "claims_created": created_by.get("resourceclaims", 0.0),
            "scheduler_claims_created": (first_metric(sched1, CLAIM_CREATE_METRICS, status="success") or 0.0)
            - (first_metric(sched0, CLAIM_CREATE_METRICS, status="success") or 0.0),
            "client_throttle_s": round(
                throttle_seconds(sched1)
                - throttle_seconds(sched0)
                + throttle_seconds(later.controller_manager)
                - throttle_seconds(self.controller_manager),
                3,
            ),
            "failed_attempts": sum(
                (metric_sum(sched1, SCHEDULED, result=r) or 0.0)
                - (metric_sum(sched0, SCHEDULED, result=r) or 0.0)
                for r in ("unschedulable", "error")
            ),
            "terminated_watchers": (metric_sum(later.apiserver, TERMINATED_WATCHERS) or 0.0)
            - (metric_sum(self.apiserver, TERMINATED_WATCHERS) or 0.0),
            "harness_cpu_s": round(later.own_cpu - self.own_cpu, 2),
            "steal_s": round(steal, 2),
            "steal_percent": round(100 * steal / ((os.cpu_count() or 1) * wall_seconds), 2),
            "objects_created": created_by,
            **plugin_costs(sched0, sched1, pods),
        }


PLUGIN_METRIC = "scheduler_plugin_execution_duration_seconds"
EXTENSION_METRIC = "scheduler_framework_extension_point_duration_seconds"


def plugin_costs(before: Samples, after: Samples, pods: int) -> dict[str, dict[str, float]]:
    """The scheduler's own account of its time: per extension point the milliseconds per
    call and the seconds per pod (every call is timed), and the DynamicResources plugin's
    milliseconds per call at each extension point (the scheduler times 10 % of its cycles,
    pluginMetricsSamplePercent in kubernetes pkg/scheduler/schedule_one.go v1.37.2, so
    the plugin's totals are not kept)."""
    points = histogram_delta(before, after, EXTENSION_METRIC, "extension_point")
    plugin = histogram_delta(before, after, PLUGIN_METRIC, "extension_point", plugin="DynamicResources")
    return {
        "extension_point_ms": {k: round(1000 * s / n, 4) for k, (s, n) in points.items()},
        "extension_point_s_per_pod": {k: round(s / pods, 6) for k, (s, _) in points.items()},
        "dra_plugin_ms": {k: round(1000 * s / n, 4) for k, (s, n) in plugin.items()},
    }
