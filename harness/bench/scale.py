"""Scale and cost benchmark: what DRA costs the scheduler and the API server. This module
runs it (setup, the rounds, the result file); workload.py creates and measures the pods,
snapshot.py holds the counters, summary.py the figures, present.py the terminal table.

One local cluster with N simulated nodes x 8 GPUs serves all four modes (harness/bench/
modes.py). Each round runs every mode once: M pods are created concurrently while the
scheduler is paused (SIGSTOP), then it is resumed and the batch lasts until it has bound
all of them. With max_batches > 1 a mode whose batch is over in less than the 10 s a
throughput window needs (plain and legacy: 2,000 pods in 4-8 s) runs further batches of M
pods on the emptied fleet, so every node fills to the same level in every mode; its costs
are then given per batch of M pods. Rounds repeat, so each mode's
repetitions are spread over the whole run and drift on a shared machine hits all modes
alike; ratios are taken within a round.

Like upstream scheduler_perf the simulated nodes run no pods, component clients get a
QPS of 5000, and throughput comes from the scheduler's own counter
(schedule_attempts_total{result="scheduled"}), so figures compare with its thresholds as
ratios. The API server's own request counters give objects created and writes per pod;
etcd's in-use size gives its growth: the API server's own periodic compaction is off and
the benchmark compacts etcd between repetitions instead, so the size grows by exactly what
one repetition wrote and no history piles up from one repetition to the next.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from fake_driver.fleetspec.fleet import MAX_NODES_PER_FLEET
from harness.bench.modes import GPUS_PER_NODE, MODES
from harness.bench.profile import summarize_profile
from harness.bench.refconfig import render
from harness.bench.reference import Reference, RefResult, summarize_reference
from harness.bench.summary import RepResult, summarize
from harness.bench.workload import MIN_WINDOW_SECONDS, Bench
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.local.components import Tuning
from harness.controlplane.build import cache_root, ensure_controlplane, ensure_kwok
from harness.controlplane.schedperf import ensure_schedperf, etcd_wrapper
from harness.core.errors import HarnessError
from harness.core.outputs import check_output
from harness.core.versions import load_matrix
from harness.kit.kube import Kube
from harness.reports.costs import DEFAULT_BENCH_DIR, ScaleSummary, write_scale

CLIENT_QPS = 5000  # as scheduler_perf: client-side rate limiters must not be the bottleneck
# A repetition shorter than MIN_WINDOW_SECONDS adds a batch, up to this many. One by default:
# on 2 cores a second batch of plain and legacy costs ~80 s over 3 rounds, which a 500-node
# run of all modes cannot spare within 10 minutes; the pooled windows give the percentiles
# their 10 s instead. --max-batches 2 for the windows.
MAX_BATCHES = 1
MAX_WINDOW_SECONDS = 300.0  # --min-window: past it a repetition is a soak, not a sample
# Flags added to the local cluster's own, recorded in the JSON:
CLUSTER_FLAGS = {
    # Compaction only between repetitions (Bench.clear): etcd's in-use size then grows by
    # exactly what a repetition wrote. More DeleteCollection workers: clearing 2,000 pods
    # takes seconds, not ~18 s with one.
    "kube-apiserver": ["--etcd-compaction-interval=0", "--delete-collection-workers=16"],
    # kwok renews each node's lease every quarter of its duration: 500 nodes at 40 s are 50
    # writes/s, a third of a core of API server, etcd and kwok before any pod exists, in
    # bursts. An hour's lease (and a grace period longer than the run, so the node lifecycle
    # controller keeps the nodes Ready) leaves the cores to the pods, as in scheduler_perf,
    # whose nodes have no leases.
    "kwok": ["--node-lease-duration-seconds=3600"],
    "kube-controller-manager": ["--node-monitor-grace-period=2h"],
}
# Legacy, the baseline the DRA modes' ratios divide by, runs between them (either way round):
# each ratio's two figures are measured minutes apart at most, under the same machine speed.
RUN_ORDER = ("plain", "bridged", "legacy", "claims")


def schedule(modes: tuple[str, ...], reps: int) -> list[tuple[int, str]]:
    """(round, mode) in run order: every other round runs the modes backwards, so no mode
    always follows the same one and the legacy capacity switch flips less often."""
    return [(r, m) for r in range(reps) for m in (modes if r % 2 == 0 else modes[::-1])]


def validate(
    nodes: int,
    pods: int,
    reps: int,
    modes: tuple[str, ...],
    max_batches: int = MAX_BATCHES,
    min_window: float = MIN_WINDOW_SECONDS,
) -> None:
    unknown = sorted(set(modes) - set(MODES))
    if unknown or not modes:
        raise HarnessError(f"unknown bench mode {', '.join(unknown) or '(none)'}; valid: {', '.join(MODES)}")
    for name, value in (("nodes", nodes), ("pods", pods), ("reps", reps), ("max-batches", max_batches)):
        if value < 1:
            raise HarnessError(f"--{name} must be at least 1, got {value}")
    if not MIN_WINDOW_SECONDS <= min_window <= MAX_WINDOW_SECONDS:
        bounds = f"{MIN_WINDOW_SECONDS:.0f}-{MAX_WINDOW_SECONDS:.0f}"
        raise HarnessError(f"--min-window must be {bounds} seconds, got {min_window:g}")
    if nodes > MAX_NODES_PER_FLEET:  # the fake driver's limit, hit only after the cluster is up
        raise HarnessError(f"--nodes must be at most {MAX_NODES_PER_FLEET}, got {nodes}")


@dataclass(frozen=True)
class Plan:
    outs: dict[str, Path]  # minor -> its JSON file
    modes: tuple[str, ...]
    max_batches: int
    min_window: float = MIN_WINDOW_SECONDS


def prepare(
    k8s_versions: list[list[str]] | None,
    nodes: int,
    pods: int,
    reps: int,
    modes: tuple[str, ...] | None,
    out: str | None,
    max_batches: int | None,
    reference: bool = False,
    min_window: float | None = None,
) -> Plan:
    """Everything a benchmark run can refuse, refused before it starts (unknown minors and
    modes, an --out for several minors, an unwritable output), then the builds it needs."""
    matrix = load_matrix()
    minors = [matrix.minor(n) for k in k8s_versions or [[matrix.default_minor]] for n in k]
    if out and len(minors) > 1:
        raise HarnessError("--out names one file; give one -k with it")
    plan = Plan(
        {m.name: Path(out or DEFAULT_BENCH_DIR / f"scale-{m.name}.json") for m in minors},
        modes or MODES,
        MAX_BATCHES if max_batches is None else max_batches,
        MIN_WINDOW_SECONDS if min_window is None else min_window,
    )
    validate(nodes, pods, reps, plan.modes, plan.max_batches, plan.min_window)
    for path in plan.outs.values():  # the result comes at the end of a long run: writable now
        check_output(path, "--out")
    for minor in minors:
        ensure_controlplane(minor)
        if reference:
            ensure_schedperf(minor)
    ensure_kwok(matrix)
    return plan


def _reference(
    minor: str, nodes: int, pods: int, modes: tuple[str, ...], out: Path | None, gpus: int
) -> Reference:
    """scheduler_perf's binary (built in prepare) and the config generated for this fleet."""
    m = load_matrix().minor(minor)
    workdir = (out.parent / f"{out.stem}-reference") if out else cache_root() / "runs" / f"reference-{minor}"
    ref = Reference(
        binary=ensure_schedperf(m),
        path_dir=etcd_wrapper(m, ensure_controlplane(m)),
        config=render(modes, nodes, pods, minor, m.resource_api, gpus),
        workdir=workdir,
        pods=pods,
    )
    ref.write()
    return ref


def run(
    minor: str,
    nodes: int,
    pods: int,
    reps: int,
    modes: tuple[str, ...],
    out: Path | None,
    progress: Callable[[str], None] = print,
    max_batches: int = MAX_BATCHES,
    reference: bool = False,
    concurrent: bool = False,
    profile: str | None = None,
    gpus: int = GPUS_PER_NODE,
    min_window: float = MIN_WINDOW_SECONDS,
    load_before: float | None = None,  # taken by the command before its builds, if it ran any
) -> ScaleSummary:
    validate(nodes, pods, reps, modes, max_batches, min_window)
    if load_before is None:  # before the cluster's own processes add to it
        load_before = os.getloadavg()[0]
    started = time.monotonic()
    ref = _reference(minor, nodes, pods, modes, out, gpus) if reference else None
    with LocalCluster(
        minor,
        "dra-all",
        tuning=Tuning(client_qps=CLIENT_QPS, simulate_pods=False, component_flags=CLUSTER_FLAGS),
    ) as cluster:
        kube = Kube.from_kubeconfig(cluster.kubeconfig)
        bench = Bench(cluster, kube, nodes, pods, concurrent=concurrent, gpus=gpus)
        bench.profile_mode = profile
        bench.profile_dest = (out or cache_root() / "runs" / f"scale-{minor}.json").with_suffix(".pprof")
        try:
            bench.fleet.setup()
            bench.warm_up()
            cluster.compact_etcd()  # the first repetition starts from the state all others do
            setup_seconds = time.monotonic() - started
            progress(f"bench setup: {nodes} nodes x {gpus} GPUs, caches warmed up, in {setup_seconds:.0f}s")
            order = schedule(tuple(sorted(modes, key=RUN_ORDER.index)), reps)
            results, ref_results = _rounds(bench, ref, order, (max_batches, min_window), progress)
            git_version = kube.git_version()
        finally:
            bench.scrape.close()
            kube.close()
    meta = {
        "kubernetes": minor,
        "git_version": git_version,
        "nodes": nodes,
        "gpus_per_node": gpus,
        "cpus": os.cpu_count(),
        "load_before_1m": round(load_before, 2),
        "pods": pods,
        "reps": reps,
        "min_window_seconds": min_window,
        "max_batches": max_batches,
        "pods_created": "while the scheduler runs" if concurrent else "with the scheduler paused",
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "setup_seconds": round(setup_seconds, 1),
        "cluster_flags": CLUSTER_FLAGS,
        "wall_seconds": round(time.monotonic() - started, 1),
    }
    summary = summarize(meta, results)
    if bench.profile is not None and profile is not None:
        summary["cpu_profile"] = summarize_profile(profile, bench.profile)
    if ref is not None:
        summary["reference"] = {
            "harness": "k8s.io/kubernetes test/integration/scheduler_perf",
            "workdir": str(ref.workdir),
            "modes": summarize_reference(ref_results, dict(summary["modes"]), summary["pods_created"]),
            "reps": [asdict(u) for u in ref_results],
        }
    if out is not None:
        write_scale(out, summary)
    return summary


def _rounds(
    bench: Bench,
    ref: Reference | None,
    order: list[tuple[int, str]],
    batching: tuple[int, float],  # (max_batches, min_window)
    progress: Callable[[str], None],
) -> tuple[list[RepResult], list[RefResult]]:
    """Every (round, mode) of ours, each followed by scheduler_perf's run of the same mode."""
    results: list[RepResult] = []
    ref_results: list[RefResult] = []
    reps, pods = max(r for r, _ in order) + 1, bench.pods
    for i, (round_, mode) in enumerate(order):
        r = bench.rep(mode, round_, *batching)
        if i < len(order) - 1:  # the last repetition's objects go with the cluster
            cleared = time.monotonic()
            r.cleanup_cpu_s = round(bench.clear(), 2)
            r.cleanup_seconds = round(time.monotonic() - cleared, 1)
        results.append(r)
        progress(
            f"bench round {round_ + 1}/{reps} {mode:<7}: {r.avg_pods_per_s:6.1f} pods/s "
            f"({r.batches} x {pods} pods in {r.seconds:.1f}s, cleanup {r.cleanup_seconds:.1f}s, "
            f"steal {r.steal_percent:.1f} %, load {r.load_avg_1m:.1f})"
        )
        if ref is not None:  # upstream's run of the same mode right after ours
            u = ref.run(mode, round_)
            ref_results.append(u)
            progress(
                f"  scheduler_perf {mode:<7}: {u.avg_pods_per_s:6.1f} pods/s ({pods} pods in "
                f"{u.seconds:.1f}s, whole test {u.wall_seconds:.0f}s, load {u.load_avg_1m:.1f})"
            )
    return results, ref_results
