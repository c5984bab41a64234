"""`bench --reference` end to end, in miniature: upstream's scheduler_perf runs the
generated workload of each mode after ours, on the same machine, and both harnesses'
ratios land in the JSON. `make test` builds the framework's test binary (a part of its own,
harness.cli.parts); elsewhere `dra-harness bench --reference` builds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.bench.scale import run
from harness.controlplane.schedperf import schedperf_dir
from harness.core.versions import load_matrix

PODS = 6


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not (schedperf_dir(load_matrix().minor("1.37")) / "schedperf.test").exists():
        pytest.skip(
            "scheduler_perf's test binary is not built (`make parts` or `dra-harness bench --reference`)"
        )
    out = tmp_path_factory.mktemp("bench") / "scale-ref.json"
    modes = ("legacy", "bridged")
    return dict(run("1.37", 3, PODS, 1, modes, out, progress=lambda _: None, reference=True))


def test_scheduler_perf_runs_each_mode_beside_ours(summary: dict[str, Any]) -> None:
    ref = summary["reference"]
    assert [(r["mode"], r["round"], r["pods"]) for r in ref["reps"]] == [
        ("bridged", 0, PODS),
        ("legacy", 0, PODS),
    ]
    assert all(r["avg_pods_per_s"] > 0 for r in ref["reps"])
    bridged = ref["modes"]["bridged"]
    # The DRA path under upstream's harness: PreBind writes the claim and waits (every call is
    # timed; the plugin's own timings are sampled, too few in 6 pods to assert on).
    assert (
        bridged["extension_point_ms"]["PreBind"]
        > 10 * ref["modes"]["legacy"]["extension_point_ms"]["PreBind"]
    )
    assert bridged["ours_ratio_to_legacy"] == summary["modes"]["bridged"]["ratio_to_legacy"]["avg_pods_per_s"]
    assert bridged["ratio_of_ratios"] == round(
        bridged["ours_ratio_to_legacy"] / bridged["ratio_to_legacy"], 3
    )
    assert Path(ref["workdir"], "performance-config.yaml").is_file()
