"""The benchmark's workload: the pods of a mode created while the scheduler is paused, the
batches of a repetition measured between two snapshots, and the cleanup between repetitions."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness.bench.metrics import (
    SampleLog,
    Sampler,
    approach_pace,
    metric_sum,
    percentile,
    reaching_time,
    steady_rate,
    throughput_windows,
)
from harness.bench.modes import BENCH_LABEL, CLAIM_MODES, DRIVER, NAMESPACE, BenchFleet, parallel, pod
from harness.bench.profile import ProfileFetch
from harness.bench.scrape import Scraper
from harness.bench.snapshot import CPU_COMPONENTS, SCHEDULED, Snapshot, bound
from harness.bench.summary import RepResult, merge_batches
from harness.clusters.local.cluster import LocalCluster
from harness.core.errors import HarnessError
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.waits import wait_for

PENDING = "scheduler_pending_pods"
EVENTS_HANDLED = "scheduler_event_handling_duration_seconds_count"
SAMPLE_INTERVAL = 1.0  # as scheduler_perf; each scrape costs the scheduler and this process CPU
FINE_INTERVAL = 0.05  # near the last pod: the end of a repetition to ~50 ms
EARLY_INTERVAL, EARLY_SECONDS = 0.25, 5.0  # a 5 s repetition's 10 % and 90 % marks to ~0.1 s
# The shortest a throughput window should be: a shorter repetition adds a batch (up to the
# run's max_batches). bench --min-window raises it: a fast mode's 2,000 pods bind in ~6 s,
# and one stall of the API server moves such a batch's rate by 15 %.
MIN_WINDOW_SECONDS = 10.0
DELETE_COLLECTION_TIMEOUT = 180.0


class Bench:
    def __init__(
        self,
        cluster: LocalCluster,
        kube: Kube,
        nodes: int,
        pods: int,
        *,
        concurrent: bool = False,
        gpus: int = 8,
    ):
        self.cluster, self.kube, self.pods = cluster, kube, pods
        self.concurrent = concurrent
        # bench --profile: the scheduler's CPU profile during this mode's first repetition
        self.profile_mode: str | None = None
        self.profile_dest = Path("scheduler.pprof")
        self.profile: ProfileFetch | None = None
        self.fleet = BenchFleet(kube, cluster, nodes, gpus)
        self.scrape = Scraper(cluster)
        self._next_pod = 0

    def _post_all(self, path: str, bodies: list[Obj]) -> int:
        """POST the objects concurrently; returns the 429s the API server answered."""
        throttled = 0

        def post(body: Obj) -> None:
            nonlocal throttled
            name = body["metadata"]["name"]
            for _ in range(20):
                status, text = self.kube.raw_post(path, body)
                if status == 201:
                    return
                if status != 429:  # the API server's own throttling is counted and retried
                    raise HarnessError(f"creating bench object {name}: HTTP {status}: {text[:200]}")
                throttled += 1
            raise HarnessError(f"creating bench object {name}: still throttled after 20 tries")

        parallel(post, bodies)
        return throttled

    def _create(self, mode: str, count: int | None = None) -> int:
        first, count = self._next_pod, count or self.pods
        self._next_pod += count
        bodies = [pod(mode, f"{mode}-{i}") for i in range(first, first + count)]
        return self._post_all(f"/api/v1/namespaces/{NAMESPACE}/pods", bodies)

    def warm_up(self) -> None:
        """The API server sizes a watcher's channel when the watch starts, from its watch
        cache's capacity (capacity / 75 s, at least 10; apiserver storage/cacher). The
        scheduler's pod and claim watches, opened on an idle cluster, overflow in the first
        paused burst and are closed, and the scheduler relists during round 1, which ran
        20-40 % slower than later rounds. An unmeasured burst of M pods and M claims with the
        scheduler paused grows both caches. The M pods are then bound, so the warm-up also
        takes the path a plain repetition takes (bindings, Scheduled events). It does not stop
        every close: the first plain repetition of a 1.37 run still closed 10 pod watchers,
        and longer repetitions (--min-window) are what settle plain's figure. One pod with a
        claim, bound, then shows the scheduler watching again."""
        claims = kinds.resource_api(self.fleet.api)
        before = bound(self.scrape.scheduler(only=(SCHEDULED,)))
        self.cluster.pause_component("kube-scheduler")
        try:
            self._create("plain")
            request = [b.exact_request("gpu", DRIVER)]
            self._post_all(
                f"/apis/{claims}/namespaces/{NAMESPACE}/resourceclaims",
                [
                    b.resource_claim(f"warm-up-{i}", NAMESPACE, request, api=self.fleet.api)
                    for i in range(self.pods)
                ],
            )
        finally:
            self.cluster.resume_component("kube-scheduler")
        self._await_bound(before + self.pods, f"the warm-up's {self.pods} plain pods bound")
        self.clear()
        before = bound(self.scrape.scheduler(only=(SCHEDULED,)))
        self._create("claims", 1)
        self._await_bound(before + 1, "a probe pod with a claim bound after the warm-up")
        self.clear()

    def _await_bound(self, target: float, describe: str) -> None:
        wait_for(
            lambda: bound(self.scrape.scheduler(only=(SCHEDULED,))),
            lambda scheduled: scheduled >= target,
            timeout=120 + 0.05 * self.pods,
            interval=0.1,
            describe=f"{describe} (scheduler's scheduled attempts, of {target:.0f})",
        )

    def rep(
        self, mode: str, round_: int, max_batches: int, min_window: float = MIN_WINDOW_SECONDS
    ) -> RepResult:
        """Batches of M pods until they have taken `min_window` seconds (or `max_batches` ran)."""
        batches = [self.batch(mode, round_)]
        while sum(r.seconds for r in batches) < min_window and len(batches) < max_batches:
            self.clear()
            batches.append(self.batch(mode, round_))
        return merge_batches(batches)

    def _switch(self, mode: str) -> None:
        """Switch the fleet to `mode` and wait until the scheduler has handled what changed:
        paused right after the switch, it could meet the new pods with the old nodes or class
        and fail some of them (a FailedScheduling event and a back-off in the measured time)."""
        before = self.scrape.scheduler(only=(EVENTS_HANDLED,))
        expected = self.fleet.switch_to(mode)

        def handled() -> dict[str, float]:
            now = self.scrape.scheduler(only=(EVENTS_HANDLED,))
            return {
                label: (metric_sum(now, EVENTS_HANDLED, event=label) or 0.0)
                - (metric_sum(before, EVENTS_HANDLED, event=label) or 0.0)
                for label in expected
            }

        if expected:
            wait_for(
                handled,
                lambda seen: all(seen[label] >= n for label, n in expected.items()),
                timeout=60,
                interval=0.1,
                describe=f"the scheduler handled the switch to {mode} (events handled, of {expected})",
            )

    def _sample(self) -> dict[str, float]:
        samples = self.scrape.scheduler(only=(SCHEDULED, PENDING))
        return {"scheduled": bound(samples), "pending": metric_sum(samples, PENDING) or 0.0}

    def _create_paused(self, mode: str) -> int:
        """All pods arrive before the scheduler sees one, as scheduler_perf's fast Go clients
        make them arrive: on 2 shared cores, creating them while it schedules would measure
        how fast this process creates pods, and how much the two overlap, not the scheduler.
        `concurrent` measures just that, as scheduler_perf does: creation while it schedules."""
        if self.concurrent:
            return self._create(mode)
        self.cluster.pause_component("kube-scheduler")
        try:
            return self._create(mode)
        finally:
            self.cluster.resume_component("kube-scheduler")

    def batch(self, mode: str, round_: int) -> RepResult:
        self._switch(mode)
        scrape, pods = self.scrape, self.pods
        before = Snapshot.before(scrape)
        target = bound(before.scheduler) + pods
        load = os.getloadavg()[0]  # the machine is shared: every figure says how busy it was
        if mode == self.profile_mode and self.profile is None:
            # Asked while the scheduler is paused, it samples from when it resumes.
            self.profile = scrape.cpu_profile(self.profile_dest)
            self.profile.start()
        creating = time.monotonic()
        throttled = self._create_paused(mode)
        # Created while it schedules, the pods' time counts from the first one created.
        started = creating if self.concurrent else time.monotonic()

        def pace(samples: SampleLog) -> float:
            near = max(1.0, 0.01 * pods)
            coarse = EARLY_INTERVAL if samples[-1][0] - started < EARLY_SECONDS else SAMPLE_INTERVAL
            return approach_pace(samples, "scheduled", target, coarse, FINE_INTERVAL, near)

        with Sampler(self._sample, SAMPLE_INTERVAL, pace) as sampler:
            wait_for(
                lambda: sampler.latest("scheduled"),
                lambda v: v is not None and v >= target,
                timeout=600,
                interval=0.05,
                describe=f"{pods} {mode} pods bound (scheduler's scheduled-attempts counter)",
            )
        # The paused scheduler had bound none of them when it was resumed: a tiny repetition
        # may be over before the first sample, and its first second starts from here.
        series = [(started, target - pods), *sampler.series("scheduled")]
        done = reaching_time(series, target) or time.monotonic()
        windows = throughput_windows(series, started, done)
        after = Snapshot.after(scrape, f"{mode}: API objects created (events arrive late)")
        result = RepResult(
            mode=mode,
            round=round_,
            pods=pods,
            seconds=round(done - started, 2),
            avg_pods_per_s=round(pods / (done - started), 1),
            steady_pods_per_s=round(steady_rate(series, target - pods, pods), 1),
            p50=round(percentile(windows, 50), 1),
            p90=round(percentile(windows, 90), 1),
            p99=round(percentile(windows, 99), 1),
            create_seconds=round(started - creating, 2),
            peak_pending_pods=max((v["pending"] for _, v in sampler.samples), default=0.0),
            throttled_requests=throttled,
            windows=[round(w, 1) for w in windows],
            load_avg_1m=round(load, 2),
            **before.delta(after, pods, done - creating),
        )
        want = pods if mode in CLAIM_MODES else 0
        if result.claims_created != want:  # e.g. a pod that took the legacy path in bridged mode
            raise HarnessError(
                f"bench {mode} round {round_ + 1}: {result.claims_created:.0f} ResourceClaims created for "
                f"{pods} pods, expected {want}; the figures would not measure {mode}"
            )
        return result

    def _release_claims(self, claims_api: str) -> None:
        """Drop the finalizer (resource.kubernetes.io/delete-protection) of the deleted claims
        the resourceclaim controller has not released yet: the cleanup then does not wait on
        its queue. A deleted claim frees its devices in the scheduler all the same."""
        path = f"/apis/{claims_api}/namespaces/{NAMESPACE}/resourceclaims"
        status, text = self.kube.raw_get(path)
        if status != 200:
            raise HarnessError(f"listing bench claims: HTTP {status}: {text[:200]}")
        names = [c["metadata"]["name"] for c in json.loads(text)["items"] if c["metadata"].get("finalizers")]

        def release(name: str) -> None:
            status, text = self.kube.raw_merge_patch(f"{path}/{name}", {"metadata": {"finalizers": None}})
            if status not in (200, 404):  # 404: the controller released it first
                raise HarnessError(f"releasing bench claim {name}: HTTP {status}: {text[:200]}")

        parallel(release, names)

    def _count(self, api_version: str, kind: str) -> int:
        """Objects in the bench namespace, from a one-item page (remainingItemCount)."""
        page = self.kube.resource(api_version, kind).get(namespace=NAMESPACE, limit=1).to_dict()
        return len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)

    def clear(self) -> float:
        """Delete the repetition's pods, claims and events at once, wait until they are gone,
        then compact etcd, so every repetition starts from the same state; returns the CPU
        seconds the control plane spent on it."""
        cpu0 = sum(self.scrape.cpu_seconds(c) for c in CPU_COMPONENTS)
        now = {"gracePeriodSeconds": 0}
        everything = f"metadata.namespace={NAMESPACE}"
        # DeleteCollection answers when every object is gone: thousands of them on 2 busy
        # cores take longer than an ordinary request's bound.
        bound = DELETE_COLLECTION_TIMEOUT
        self.kube.resource(*kinds.POD).delete(
            namespace=NAMESPACE, body=now, label_selector=BENCH_LABEL + "=1", _request_timeout=bound
        )
        claims = kinds.resource_api(self.fleet.api)
        self.kube.resource(claims, "ResourceClaim").delete(
            namespace=NAMESPACE, body=now, field_selector=everything, _request_timeout=bound
        )
        self._release_claims(claims)
        self.kube.resource(*kinds.EVENT).delete(
            namespace=NAMESPACE, field_selector=everything, _request_timeout=bound
        )
        wait_for(
            lambda: (self._count("v1", "Pod"), self._count(claims, "ResourceClaim")),
            lambda counts: counts == (0, 0),
            timeout=600,
            interval=0.25,
            describe="bench pods and their claims deleted (pods, claims left)",
        )
        self.cluster.compact_etcd()
        return sum(self.scrape.cpu_seconds(c) for c in CPU_COMPONENTS) - cpu0
