"""Crafted summaries, matrix runs and benchmark files the readiness tests read."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.requirements import unmapped_class
from harness.core.requirements import Kind, Reason
from harness.reports.summary import CellSummary, TestRecord, area_of, write_summary

EXT = "suites/bridging/test_extended_resource.py::test_legacy_gpu_request_gets_a_scheduler_created_claim"
LIFE = (
    "suites/bridging/test_bridging_lifecycle.py::test_implicit_name_of_a_class_without_extended_resource_name"
)
GANG = "suites/gang/test_gang.py::test_a_gang_filling_a_node_by_2_gpus_a_pod_binds_every_pod_there[claim]"
SMOKE = "suites/smoke/test_local_cluster.py::test_pod_is_bound_to_a_simulated_node_and_runs"
DYN = "suites/mig/test_dynamic_mig.py::test_seven_1g_devices_fill_an_h100_and_give_the_counters_back"

GATE_OFF = Reason(
    Kind.FEATURE_GATE, minor="1.35", profile="defaults", gate="DRAExtendedResource", state=False
)
NO_MAP = unmapped_class("nvidia-v0.4", "gpu.nvidia.com", "nvidia.com/gpu")


def gate_off(gate: str, minor: str) -> Reason:
    return Reason(Kind.FEATURE_GATE, minor=minor, profile="defaults", gate=gate, state=False)


def rec(nodeid: str, outcome: str = "passed", message: str | Reason = "") -> TestRecord:
    """A skipped test's record carries its reason as the reporting plugin writes it."""
    if isinstance(message, Reason):
        return TestRecord(nodeid, area_of(nodeid), outcome, 1.0, message.message(), [message])
    return TestRecord(nodeid, area_of(nodeid), outcome, 1.0, message)


def summary(minor: str, personality: str, *records: TestRecord, profile: str = "dra-all") -> CellSummary:
    cell = {
        "provider": "local",
        "minor": minor,
        "profile": profile,
        "driver": "gpu.nvidia.com",
        "personality": personality,
        "driver_release": "",
        "nodes": "kwok",
    }
    return CellSummary(cell, list(records), wall_seconds=60.0)


def _cells(tmp_path: Path) -> Path:
    """A crafted matrix run: 1.36 and 1.37 for two personalities, with changes between them."""
    run = tmp_path / "run"
    cells = {
        "1.36_nvidia-v25.12_dra-all": summary(
            "1.36",
            "nvidia-v25.12",
            rec(SMOKE),
            rec(EXT),
            rec(LIFE),
            rec(GANG, "failed", "timed out after 60s"),
        ),
        "1.37_nvidia-v25.12_dra-all": summary(
            "1.37", "nvidia-v25.12", rec(SMOKE), rec(EXT), rec(LIFE), rec(GANG)
        ),
        "1.36_nvidia-v0.4_dra-all": summary(
            "1.36", "nvidia-v0.4", rec(SMOKE), rec(EXT, "skipped", NO_MAP), rec(LIFE), rec(GANG)
        ),
        "1.37_nvidia-v0.4_dra-all": summary(
            "1.37", "nvidia-v0.4", rec(SMOKE), rec(EXT, "skipped", NO_MAP), rec(LIFE), rec(GANG)
        ),
    }
    for slug, s in cells.items():
        write_summary(run / "cells" / slug / "summary.json", s)
    matrix = {
        "run_id": "x",
        "wall_seconds": 123.4,
        "cells": [
            {
                "id": s.cell["minor"] + "/" + s.cell["personality"] + "/dra-all",
                "exit_code": 0,
                "state": "passed",
            }
            for s in cells.values()
        ],
    }
    (run / "matrix.json").write_text(json.dumps(matrix))
    return run


BENCH = {
    "title": "1000 GPU pods on 125 nodes",
    "rows": [
        {"cell": "1.37/nvidia-v25.12/dra-all", "scenario": "device plugin", "nodes": 125, "pods": 1000,
         "metrics": {"schedule all (s)": 41.5, "apiserver CPU (s)": 20}},
        {"cell": "1.37/nvidia-v25.12/dra-all", "scenario": "DRA extended resource", "nodes": 125,
         "pods": 1000, "metrics": {"schedule all (s)": 63.25, "objects written": 2000}},
    ],
}  # fmt: skip


SCALE = {
    "kubernetes": "1.37",
    "nodes": 50,
    "pods": 200,
    "modes": {
        "legacy": {
            "median": {
                "avg_pods_per_s": 83.35,
                "p50": 46.0,
                "etcd_growth_bytes": 1435648.0,
                "claims_created": 0.0,
            },
            "cv_percent": {"avg_pods_per_s": 28.3},
            "ratio_to_legacy": {"avg_pods_per_s": 1.0},
        },
        "bridged": {
            "median": {
                "avg_pods_per_s": 40.0,
                "p50": 38.0,
                "etcd_growth_bytes": 3000000.0,
                "claims_created": 200.0,
                "api_writes_per_pod": 8.0,
            },
            "pooled_windows": {"seconds": 150, "p50": 41.0, "p90": 45.0, "p99": 48.0},
            "cv_percent": {"avg_pods_per_s": 5.0},
            "ratio_to_legacy": {"avg_pods_per_s": 0.48, "etcd_growth_bytes": 2.09},
            "ratio_cv_percent_to_legacy": {"avg_pods_per_s": 3.5},
            "best_pods_per_s": 44.0,
            "best_ratio_to_legacy": 0.5,
        },
    },
}
