"""A repetition's figures (RepResult), its batches merged into one, and the summary of a
run: medians and CVs per mode, ratios to plain and legacy taken within each round."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, replace
from typing import Any, cast

from harness.bench.metrics import cv, percentile
from harness.bench.modes import MODES
from harness.reports.costs import ModeSummary, ScaleSummary

DISTURBED_STEAL_PERCENT = 1.0  # the hypervisor took more of the machine than this: flagged


@dataclass
class RepResult:
    """One mode's repetition. Throughput figures cover all its batches; costs (CPU, objects,
    etcd growth, claims) are the mean of one batch of `pods` pods, so modes compare at
    equal work; the warning counters (throttling, 429s, closed watches, steal) are totals."""

    mode: str
    round: int
    pods: int  # per batch
    seconds: float  # scheduler resumed (all pods created) to the last pod bound, summed over batches
    avg_pods_per_s: float
    steady_pods_per_s: float  # from 10 % to 90 % of the pods bound: no ramp-up, no stragglers
    p50: float
    p90: float
    p99: float
    create_seconds: float  # creating the pods (scheduler paused; not in `seconds`)
    api_objects_per_pod: float
    api_writes_per_pod: float
    etcd_growth_bytes: float
    peak_pending_pods: float
    scheduler_cpu_s: float
    apiserver_cpu_s: float
    etcd_cpu_s: float
    controller_manager_cpu_s: float
    claims_created: float  # ResourceClaims the API server created
    scheduler_claims_created: float  # ... of which the scheduler created (bridged)
    client_throttle_s: float  # scheduler + controller-manager client-side rate-limiter waits
    throttled_requests: int  # 429s the harness got while creating pods
    # Watches the API server closed because their client fell behind (the paused scheduler's
    # among them): each costs its client a re-watch, and perhaps a stall, during the repetition.
    terminated_watchers: float
    # Scheduling attempts that did not bind a pod (unschedulable or error): each puts the pod
    # in back-off for a second or more, a stall a short repetition shows as a slow one.
    failed_attempts: float
    steal_s: float  # CPU time the hypervisor gave to other guests: a noisy-neighbour gauge
    steal_percent: float  # ... as a share of the machine's CPU time during the repetition
    harness_cpu_s: float  # this process (creating pods, sampling metrics): the machine is shared
    cleanup_seconds: float = 0.0  # deleting the pods and claims afterwards (not measured time)
    cleanup_cpu_s: float = 0.0  # ... and the control plane's CPU for it
    objects_created: dict[str, float] = field(default_factory=dict)
    windows: list[float] = field(default_factory=list)  # pods/s in each second of the repetition
    batches: int = 1
    load_avg_1m: float = 0.0  # the machine's 1-minute load average when the repetition started
    # The scheduler's own histograms (snapshot.plugin_costs), of the first batch
    extension_point_ms: dict[str, float] = field(default_factory=dict)
    extension_point_s_per_pod: dict[str, float] = field(default_factory=dict)
    dra_plugin_ms: dict[str, float] = field(default_factory=dict)


KEYS = (
    "avg_pods_per_s",
    "steady_pods_per_s",
    "p50",
    "p90",
    "p99",
    "api_objects_per_pod",
    "api_writes_per_pod",
    "etcd_growth_bytes",
    "peak_pending_pods",
    "scheduler_cpu_s",
    "apiserver_cpu_s",
    "etcd_cpu_s",
    "controller_manager_cpu_s",
    "claims_created",
    "scheduler_claims_created",
    "create_seconds",
    "client_throttle_s",
    "throttled_requests",
    "terminated_watchers",
    "failed_attempts",
    "harness_cpu_s",
    "steal_s",
    "load_avg_1m",
)
RATIO_KEYS = (
    "avg_pods_per_s",
    "steady_pods_per_s",
    "api_objects_per_pod",
    "api_writes_per_pod",
    "scheduler_cpu_s",
    "apiserver_cpu_s",
    "etcd_growth_bytes",
)


def merge_batches(batches: list[RepResult]) -> RepResult:
    """One repetition from its batches (see RepResult for what is summed and what averaged)."""
    if len(batches) == 1:
        return batches[0]
    n, first = len(batches), batches[0]
    pods = sum(r.pods for r in batches)
    seconds = sum(r.seconds for r in batches)
    windows = [w for r in batches for w in r.windows]

    def mean(key: str, digits: int = 2) -> float:
        return round(sum(float(getattr(r, key)) for r in batches) / n, digits)

    def total(key: str, digits: int = 2) -> float:
        return round(sum(float(getattr(r, key)) for r in batches), digits)

    objects = dict.fromkeys(k for r in batches for k in r.objects_created)
    return replace(
        first,
        seconds=round(seconds, 2),
        avg_pods_per_s=round(pods / seconds, 1),
        # 10 % to 90 % of each batch: pods over the time they took, not a mean of rates
        steady_pods_per_s=round(pods / sum(r.pods / r.steady_pods_per_s for r in batches), 1)
        if all(r.steady_pods_per_s > 0 for r in batches)
        else 0.0,
        p50=round(percentile(windows, 50), 1),
        p90=round(percentile(windows, 90), 1),
        p99=round(percentile(windows, 99), 1),
        api_objects_per_pod=mean("api_objects_per_pod", 3),
        api_writes_per_pod=mean("api_writes_per_pod", 3),
        peak_pending_pods=max(r.peak_pending_pods for r in batches),
        client_throttle_s=total("client_throttle_s", 3),
        throttled_requests=sum(r.throttled_requests for r in batches),
        terminated_watchers=total("terminated_watchers"),
        failed_attempts=total("failed_attempts"),
        steal_s=total("steal_s"),
        steal_percent=max(r.steal_percent for r in batches),
        objects_created={
            k: round(sum(r.objects_created.get(k, 0.0) for r in batches) / n, 2) for k in objects
        },
        windows=windows,
        batches=n,
        create_seconds=mean("create_seconds"),
        scheduler_cpu_s=mean("scheduler_cpu_s"),
        apiserver_cpu_s=mean("apiserver_cpu_s"),
        etcd_cpu_s=mean("etcd_cpu_s"),
        controller_manager_cpu_s=mean("controller_manager_cpu_s"),
        claims_created=mean("claims_created"),
        scheduler_claims_created=mean("scheduler_claims_created"),
        etcd_growth_bytes=mean("etcd_growth_bytes", 0),
        harness_cpu_s=mean("harness_cpu_s"),
    )


SCHEDULER_KEYS = ("extension_point_ms", "extension_point_s_per_pod", "dra_plugin_ms")


def median_dict(dicts: list[dict[str, float]]) -> dict[str, float]:
    """Per key, the median over the dicts that have it."""
    keys = dict.fromkeys(k for d in dicts for k in d)
    return {k: round(statistics.median(d[k] for d in dicts if k in d), 6) for k in keys}


def _ratio(value: float, base: float) -> float | None:
    return value / base if base else None


def summarize(meta: dict[str, Any], results: list[RepResult]) -> ScaleSummary:
    """Medians and CV per mode; ratios to plain and legacy taken within each round."""
    by = {(r.mode, r.round): r for r in results}
    modes = sorted(dict.fromkeys(r.mode for r in results), key=MODES.index)
    # The fastest repetition: on a shared machine noise only ever slows a repetition down,
    # so the best of several is what the mode does when the machine is not in its way
    # (timeit's reasoning); medians and CVs show the spread.
    best = {m: max(r.avg_pods_per_s for r in results if r.mode == m) for m in modes}
    out: dict[str, Any] = {
        **meta,
        # Repetitions during which the hypervisor ran other guests on this machine's CPUs:
        # their figures measure the neighbours as much as Kubernetes.
        "disturbed": [
            f"{r.mode} round {r.round + 1}: {r.steal_percent:.1f} % stolen"
            for r in results
            if r.steal_percent > DISTURBED_STEAL_PERCENT
        ],
        "modes": {},
    }
    for mode in modes:
        reps = [r for r in results if r.mode == mode]
        pooled = [w for r in reps for w in r.windows]
        entry: dict[str, Any] = {
            "median": {k: float(statistics.median(float(getattr(r, k)) for r in reps)) for k in KEYS},
            # One-second throughput windows of all repetitions together: a fast mode's single
            # repetition may be shorter than the 10 s a percentile needs to mean something.
            "pooled_windows": {
                "seconds": len(pooled),
                **({f"p{q}": round(percentile(pooled, q), 1) for q in (50, 90, 99)} if pooled else {}),
            },
            "cv_percent": {k: round(cv([float(getattr(r, k)) for r in reps]), 1) for k in KEYS},
            "best_pods_per_s": best[mode],
            **{k: median_dict([getattr(r, k) for r in reps]) for k in SCHEDULER_KEYS},
            "reps": [asdict(r) for r in reps],
        }
        for base in ("plain", "legacy"):
            if base == mode or base not in modes:
                continue
            ratios: dict[str, float | None] = {}
            spread: dict[str, float | None] = {}
            for k in RATIO_KEYS:
                per_round = [
                    x
                    for r in reps
                    if (b := by.get((base, r.round))) is not None
                    and (x := _ratio(float(getattr(r, k)), float(getattr(b, k)))) is not None
                ]
                ratios[k] = round(statistics.median(per_round), 3) if per_round else None
                spread[k] = round(cv(per_round), 1) if per_round else None
            entry[f"ratio_to_{base}"] = ratios
            entry[f"ratio_cv_percent_to_{base}"] = spread
            entry[f"best_ratio_to_{base}"] = round(best[mode] / best[base], 3) if best[base] else None
        out["modes"][mode] = cast(ModeSummary, entry)
    return cast(ScaleSummary, out)
