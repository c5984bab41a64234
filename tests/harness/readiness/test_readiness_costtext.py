"""The readiness report's cost section in words: a sentence per mode with scheduler_perf's
figures beside ours, what to watch after migrating a pool, the profile, the curve fits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.readiness.costtext import caveat, context, curve_view, mode_sentence, profile_lines, watch_list
from harness.readiness.inputs import load_cost
from harness.readiness.report import build_report, render

LEGACY = {
    "median": {
        "avg_pods_per_s": 300.0,
        "scheduler_cpu_s": 4.0,
        "api_writes_per_pod": 3.0,
        "api_objects_per_pod": 2.0,
        "etcd_growth_bytes": 4e6,
    },
    "reps": [{"load_avg_1m": 3.0}],
}
BRIDGED = {
    "median": {
        "avg_pods_per_s": 37.5,
        "scheduler_cpu_s": 34.4,
        "api_writes_per_pod": 8.0,
        "api_objects_per_pod": 3.0,
        "etcd_growth_bytes": 9e6,
    },
    "ratio_to_legacy": {"avg_pods_per_s": 0.125, "scheduler_cpu_s": 8.6, "etcd_growth_bytes": 2.25},
    "dra_plugin_ms": {"Filter": 0.197},
    "reps": [{"load_avg_1m": 5.5}],
}
RUN: dict[str, Any] = {
    "kubernetes": "1.37",
    "git_version": "v1.37.2",
    "nodes": 500,
    "gpus_per_node": 8,
    "pods": 2000,
    "reps": 3,
    "cpus": 2,
    "pods_created": "with the scheduler paused",
    "modes": {"legacy": LEGACY, "bridged": BRIDGED},
    "reference": {
        "modes": {
            "bridged": {
                "median_pods_per_s": 55.2,
                "ratio_to_legacy": 0.186,
                "ratio_of_ratios": 0.672,
                "agrees": False,
            }
        }
    },
    "cpu_profile": {
        "mode": "bridged",
        "top_cum": {
            "rows": [
                {"function": "runtime.goexit", "cum_percent": 99.5},
                {"function": "f", "cum_percent": 40.0},
            ]
        },
    },
}


def test_context_names_the_run_and_its_load() -> None:
    assert context(RUN) == (
        "Kubernetes v1.37.2, 500 nodes x 8 GPUs, 2000 pods a repetition, median of 3 rounds, "
        "pods created with the scheduler paused, load average 3.0-5.5 on 2 cores"
    )


def test_a_sentence_per_mode_with_the_reference_beside_it() -> None:
    assert mode_sentence("bridged", RUN) == (
        "On this machine a bridged pod (the same pod, its nvidia.com/gpu served by DRA through the "
        "DeviceClass) schedules at 37.5 pods/s, 0.125x a device-plugin pod's rate, and costs the scheduler "
        "17.2 ms of CPU (8.6x a device-plugin pod's), 8.0 API writes and 4.5 kB of etcd; upstream's "
        "scheduler_perf runs the same workload at 55.2 pods/s here, 0.186x its legacy rate (ours/upstream "
        "0.67), more than 20 % apart: see why below."
    )
    assert mode_sentence("legacy", RUN) == (
        "On this machine a device-plugin pod (nvidia.com/gpu advertised by the node) schedules at "
        "300.0 pods/s, and costs the scheduler 2.0 ms of CPU, 3.0 API writes and 2.0 kB of etcd."
    )


def test_watch_list_gives_objects_etcd_scheduler_and_the_plugin() -> None:
    watch = watch_list(RUN)
    assert len(watch) == 4
    assert watch[0].startswith("API objects: 3.0 per bridged pod against 2.0")
    assert watch[1].startswith("etcd: 2.2x the bytes per pod of legacy")
    assert "8.6x the CPU per pod; watch scheduler_pending_pods" in watch[2]
    assert watch[3].startswith("where it goes: the DynamicResources plugin's Filter takes 0.197 ms")
    assert watch_list({"modes": {"legacy": LEGACY}}) == []


def test_profile_lines_are_the_top_cumulative_functions() -> None:
    assert profile_lines(RUN) == ["99.5 % runtime.goexit", "40.0 % f"]
    assert profile_lines({"modes": {}}) == []


def test_curve_view_says_each_fit_in_a_line() -> None:
    doc = {
        "kubernetes": "1.37",
        "metrics": {"pods_per_s": {"label": "throughput", "unit": "pods/s"}},
        "points": [{"mode": "bridged"}],
        "fits": {"bridged/8": {"pods_per_s": {"exponent": -0.52, "r2": 0.981, "coefficient": 900.0}}},
    }
    assert curve_view(doc) == {
        "kubernetes": "1.37",
        "points": [{"mode": "bridged"}],
        "fits": ["bridged, 8 GPUs/node: throughput ~ nodes^-0.52 (r2 0.98)"],
    }


def test_report_renders_the_sentences_in_markdown_and_html(tmp_path: Path) -> None:
    path = tmp_path / "scale-1.37.json"
    path.write_text(json.dumps(RUN))
    cost = load_cost([path])
    assert cost is not None
    assert cost["words"][0]["why"] == []  # the reference entry carries no "why" text here
    report = build_report([], path)
    out = render(report)
    for name in ("readiness.md", "readiness.html"):
        assert mode_sentence("bridged", RUN) in out[name].replace("&#39;", "'")
        assert "What to watch after migrating a pool" in out[name]
        assert f"{context(RUN)}; {caveat(RUN)}." in out[name].replace("&#39;", "'")


def test_caveat_trusts_absolute_figures_only_from_a_quiet_machine() -> None:
    """The load during a run is mostly the benchmark's own control plane; the load before it
    tells a quiet machine from a shared one."""
    assert caveat(RUN) == "the machine's load before the run was not recorded: read the figures as ratios"
    assert caveat({**RUN, "load_before_1m": 0.12}) == "nothing else ran (load average 0.1 before the run)"
    assert caveat({**RUN, "load_before_1m": 0.5}) == (
        "a shared machine (load average 0.5 before the run): read the figures as ratios"
    )
