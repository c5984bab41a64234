"""Upstream's scheduler_perf beside the benchmark: one mode's workload (refconfig.py) run
by the framework's test binary (harness/controlplane/schedperf.py) in the same run as the
benchmark's own modes, its data items read back, and the two harnesses' ratios compared.

The framework starts its own API server and scheduler in one process and an etcd from
PATH; it creates the pods with its own workers while the scheduler runs, and reports
SchedulingDuration (first to last pod scheduled) and SchedulingThroughput (1 s samples,
absent from a run shorter than a sample), plus the scheduler's per-plugin histograms.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.refconfig import RefConfig
from harness.core.errors import HarnessError

RUN_TIMEOUT = 1800  # seconds for one mode, 5,000 nodes included
DRA_PLUGIN = "DynamicResources"
PLUGIN_METRIC = "scheduler_plugin_execution_duration_seconds"
EXTENSION_METRIC = "scheduler_framework_extension_point_duration_seconds"
# Ours and upstream's ratios agree when within this share of each other (issue 21).
AGREEMENT = 0.20


@dataclass
class RefResult:
    mode: str
    round: int
    pods: int
    seconds: float  # SchedulingDuration: first to last pod scheduled
    avg_pods_per_s: float
    throughput: dict[str, float] = field(default_factory=dict)  # SchedulingThroughput Average/PercNN
    # ms per call, Average: "DynamicResources/Filter" and the like, and per extension point
    plugin_ms: dict[str, float] = field(default_factory=dict)
    extension_point_ms: dict[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0  # the whole test: its API server, nodes, slices and pods
    load_avg_1m: float = 0.0  # the machine's 1-minute load average when it started


def parse_data_items(docs: list[dict[str, Any]], mode: str, round_: int, pods: int) -> RefResult:
    """One run's data items (scheduler_perf's DataItems JSON files) as a RefResult."""
    items = [i for d in docs for i in d.get("dataItems") or []]

    def metric(name: str) -> list[dict[str, Any]]:
        return [i for i in items if i.get("labels", {}).get("Metric") == name]

    durations = [i["data"]["Duration"] for i in metric("SchedulingDuration")]
    if not durations or durations[0] <= 0:
        raise HarnessError(f"scheduler_perf {mode}: no SchedulingDuration in its data items")
    throughput = metric("SchedulingThroughput")
    plugins = {
        f"{i['labels']['plugin']}/{i['labels']['extension_point']}": round(i["data"]["Average"], 4)
        for i in metric(PLUGIN_METRIC)
        if i["labels"].get("plugin") == DRA_PLUGIN
    }
    points = {
        i["labels"]["extension_point"]: round(i["data"]["Average"], 4) for i in metric(EXTENSION_METRIC)
    }
    return RefResult(
        mode=mode,
        round=round_,
        pods=pods,
        seconds=round(durations[0], 3),
        avg_pods_per_s=round(pods / durations[0], 1),
        throughput={k: round(v, 1) for k, v in throughput[0]["data"].items()} if throughput else {},
        plugin_ms=plugins,
        extension_point_ms=points,
    )


def gomodcache() -> Path:
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False, timeout=60)
    if out.returncode != 0 or not out.stdout.strip():
        raise HarnessError(f"`go env GOMODCACHE` failed: {out.stderr.strip()[:200]}")
    return Path(out.stdout.strip())


@dataclass(frozen=True)
class Reference:
    """scheduler_perf's binary and the generated config, ready to run one mode at a time."""

    binary: Path
    path_dir: Path  # holds the `etcd` the framework starts
    config: RefConfig
    workdir: Path
    pods: int

    def write(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name, text in self.config.files.items():
            (self.workdir / name).write_text(text)

    def run(self, mode: str, round_: int) -> RefResult:
        out = self.workdir / f"round{round_ + 1}-{mode}"
        out.mkdir(parents=True, exist_ok=True)
        modcache = gomodcache()
        env = os.environ | {
            "PATH": f"{self.path_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "DRA_HARNESS_PERF_CONFIG": "performance-config.yaml",
            # -trimpath hides where the test API server's certificates are; the framework's
            # own Bazel escape (cmd/kube-apiserver/app/testing) finds them in the module cache.
            "TEST_SRCDIR": str(modcache.parent),
            "TEST_WORKSPACE": modcache.name,
            "ARTIFACTS": str(out),
            "KUBE_CACHE_MUTATION_DETECTOR": "false",
        }
        cmd = [
            str(self.binary),
            "-test.run=^$",
            "-test.benchtime=1x",
            f"-test.timeout={RUN_TIMEOUT}s",
            f"-test.bench={self.config.bench_filter(mode)}",
            "-perf-scheduling-label-filter=",
            f"-data-items-dir={out}",
        ]
        load = os.getloadavg()[0]
        started = time.monotonic()
        log = out / "test.log"
        with log.open("w") as sink:
            proc = subprocess.Popen(
                cmd, cwd=self.workdir, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                rc = proc.wait(timeout=RUN_TIMEOUT + 60)
            except subprocess.TimeoutExpired:
                raise HarnessError(
                    f"scheduler_perf {mode}: not done in {RUN_TIMEOUT + 60}s (log {log})"
                ) from None
            finally:
                if proc.poll() is None:  # timeout or Ctrl-C: the test and its etcd go too
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        docs = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
        if rc != 0 and not docs:
            tail = log.read_text().strip().splitlines()[-5:]
            raise HarnessError(f"scheduler_perf {mode} exited {rc} (log {log}):\n" + "\n".join(tail))
        result = parse_data_items(docs, mode, round_, self.pods)
        result.wall_seconds = round(time.monotonic() - started, 1)
        result.load_avg_1m = round(load, 2)
        return result


def summarize_reference(
    results: list[RefResult], ours: dict[str, Any], pods_created: str = "with the scheduler paused"
) -> dict[str, Any]:
    """Per mode: upstream's median pods/s and its ratio to legacy (within a round), ours
    beside it, and the ratio of ratios (ours / upstream; 1.0 = the harnesses agree)."""
    by = {(r.mode, r.round): r for r in results}
    modes = list(dict.fromkeys(r.mode for r in results))
    out: dict[str, Any] = {}
    for mode in modes:
        reps = [r for r in results if r.mode == mode]
        entry: dict[str, Any] = {
            "median_pods_per_s": round(statistics.median(r.avg_pods_per_s for r in reps), 1),
            "pods_per_s": [r.avg_pods_per_s for r in reps],
            "median_wall_seconds": round(statistics.median(r.wall_seconds for r in reps), 1),
            "load_avg_1m": [r.load_avg_1m for r in reps],
            "plugin_ms": reps[-1].plugin_ms,
            "extension_point_ms": reps[-1].extension_point_ms,
        }
        per_round = [
            r.avg_pods_per_s / base.avg_pods_per_s
            for r in reps
            if (base := by.get(("legacy", r.round))) is not None and base.avg_pods_per_s
        ]
        if mode != "legacy" and per_round:
            ratio = round(statistics.median(per_round), 3)
            entry["ratio_to_legacy"] = ratio
            our_ratio = (ours.get(mode) or {}).get("ratio_to_legacy", {}).get("avg_pods_per_s")
            if our_ratio:
                entry["ours_ratio_to_legacy"] = our_ratio
                entry["ratio_of_ratios"] = round(our_ratio / ratio, 3)
                entry["agrees"] = abs(our_ratio / ratio - 1) <= AGREEMENT
                if not entry["agrees"]:
                    entry["why"] = why_differ(mode, our_ratio, ratio, ours, pods_created)
                    prebind = (ours.get(mode) or {}).get("dra_plugin_ms", {}).get("PreBind")
                    upstream_prebind = entry["plugin_ms"].get(f"{DRA_PLUGIN}/PreBind")
                    if prebind is not None and upstream_prebind is not None:
                        entry["why"] += (
                            f" The DynamicResources PreBind (it writes the claim and waits for it) takes "
                            f"{prebind:.0f} ms a pod here and {upstream_prebind:.0f} ms under scheduler_perf."
                        )
        out[mode] = entry
    return out


def why_differ(mode: str, ours: float, upstream: float, modes: dict[str, Any], pods_created: str) -> str:
    """The known causes of a gap between the two harnesses, with this run's own figures."""
    writes = {m: (modes.get(m) or {}).get("median", {}).get("api_writes_per_pod") for m in (mode, "legacy")}
    cpu = (modes.get(mode) or {}).get("ratio_to_legacy", {}).get("scheduler_cpu_s")
    parts = [
        f"{mode}/legacy is {ours:.3f} here and {upstream:.3f} under scheduler_perf "
        f"({ours / upstream:.2f}x, more than {AGREEMENT:.0%} apart)",
        f"the benchmark creates its pods {pods_created} and times the scheduler from then on, "
        "scheduler_perf creates them with its own workers while it schedules"
        + ("" if "runs" in pods_created else " (--concurrent measures that way)"),
    ]
    if writes[mode] is not None and writes["legacy"] is not None:
        parts.append(
            f"a {mode} pod costs {writes[mode]:.1f} API writes here, legacy {writes['legacy']:.1f}, "
            "each through TLS, authentication, authorization and admission in separate processes, "
            "where scheduler_perf's API server and scheduler share one"
        )
    if cpu is not None:
        parts.append(f"the scheduler spends {cpu:.1f}x legacy's CPU per pod on it here")
    return "; ".join(parts) + "."
