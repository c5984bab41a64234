"""The scale benchmark's result file, scale-<minor>.json: its declared schema, its one writer
and its one reader. The benchmark (harness.bench) writes it and the readiness report
(harness.readiness) reads it; both import this module and never each other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict, cast

from harness.core.versions import REPO_ROOT

DEFAULT_BENCH_DIR = REPO_ROOT / "reports" / "out" / "bench"
MODE_DESCRIPTIONS = {
    "plain": "CPU-only pods (baseline)",
    "legacy": "device plugin: pods request nvidia.com/gpu",
    "bridged": "DRA, unchanged pods: nvidia.com/gpu mapped by a DeviceClass",
    "claims": "DRA ResourceClaimTemplate with a CEL selector",
}


class PooledWindows(TypedDict, total=False):
    seconds: int
    p50: float
    p90: float
    p99: float


class ModeSummary(TypedDict, total=False):
    """One mode: medians and CVs over the rounds, ratios to plain and legacy taken within a
    round (ratio_to_<base>, ratio_cv_percent_to_<base>, best_ratio_to_<base>)."""

    median: dict[str, float]
    pooled_windows: PooledWindows
    cv_percent: dict[str, float]
    best_pods_per_s: float
    reps: list[dict[str, Any]]  # harness.bench.summary.RepResult as a dict
    ratio_to_plain: dict[str, float | None]
    ratio_cv_percent_to_plain: dict[str, float | None]
    best_ratio_to_plain: float | None
    ratio_to_legacy: dict[str, float | None]
    ratio_cv_percent_to_legacy: dict[str, float | None]
    best_ratio_to_legacy: float | None
    # the scheduler's own histograms, medians over the repetitions (harness.bench.snapshot)
    extension_point_ms: dict[str, float]
    extension_point_s_per_pod: dict[str, float]
    dra_plugin_ms: dict[str, float]


class ScaleSummary(TypedDict, total=False):
    kubernetes: str
    git_version: str
    nodes: int
    gpus_per_node: int
    cpus: int | None  # of the machine: load averages are read against it
    load_before_1m: float  # the machine's 1-minute load average before the run started
    pods: int
    reps: int
    min_window_seconds: float
    max_batches: int
    generated: str
    setup_seconds: float
    cluster_flags: dict[str, list[str]]
    wall_seconds: float
    disturbed: list[str]  # repetitions the hypervisor took more than 1 % of the machine in
    pods_created: str  # "with the scheduler paused" or "while the scheduler runs"
    modes: dict[str, ModeSummary]
    # upstream's scheduler_perf on the same workload (bench --reference): harness.bench.reference
    reference: dict[str, Any]
    cpu_profile: dict[str, Any]  # the scheduler's top functions in one mode (bench --profile)


def write_scale(path: Path, summary: ScaleSummary) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2))


def read_scale(path: Path) -> dict[str, Any]:
    """A benchmark file as JSON: a ScaleSummary (it has "modes") or the report's plain
    {"rows": [...]} format; OSError or ValueError when it cannot be read."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return cast(dict[str, Any], data)
