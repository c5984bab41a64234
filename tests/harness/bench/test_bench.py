"""The scale benchmark's pure parts: metric parsing, throughput arithmetic, API-server
counters, and the summary's per-round ratios."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from harness.bench.metrics import (
    approach_pace,
    cv,
    parse_metrics,
    percentile,
    reaching_time,
    steady_rate,
    steal_seconds,
    throughput_windows,
    value_at,
)
from harness.bench.present import format_summary
from harness.bench.scale import schedule
from harness.bench.scrape import objects_created, throttle_seconds, writes
from harness.bench.summary import RepResult, merge_batches, summarize

SCHEDULER_PAGE = """\
# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts to schedule pods
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="error"} 2
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1500
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 7
scheduler_pending_pods{queue="active"} 3
scheduler_pending_pods{queue="backoff"} 4
scheduler_pending_pods{queue="unschedulable"} 5
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="POST"} 0.25
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="PUT"} 0.5
"""


def _request(
    verb: str, code: int, resource: str, value: int, subresource: str = "", dry_run: str = ""
) -> str:
    labels = (
        f'code="{code}",dry_run="{dry_run}",resource="{resource}",subresource="{subresource}",verb="{verb}"'
    )
    return f"apiserver_request_total{{{labels}}} {value}"


APISERVER_PAGE = "\n".join(
    [
        _request("POST", 201, "pods", 2000),
        _request("POST", 201, "pods", 2000, subresource="binding"),
        _request("POST", 201, "events", 1990),
        _request("POST", 201, "pods", 9, dry_run="All"),
        _request("POST", 409, "resourceclaims", 3),
        _request("POST", 201, "resourceclaims", 2000),
        _request("PUT", 200, "resourceclaims", 2000, subresource="status"),
        _request("PUT", 200, "leases", 700),
        _request("PATCH", 200, "nodes", 50, subresource="status"),
        _request("LIST", 200, "pods", 12),
    ]
)


def test_parse_metrics_reads_labels_and_can_keep_only_named_series() -> None:
    samples = parse_metrics(SCHEDULER_PAGE)
    assert len(samples) == 8
    assert samples[1] == (
        "scheduler_schedule_attempts_total",
        {"profile": "default-scheduler", "result": "scheduled"},
        1500.0,
    )
    only = parse_metrics(SCHEDULER_PAGE, only=("scheduler_pending_pods",))
    assert [v for _, _, v in only] == [3.0, 4.0, 5.0]


def test_objects_created_counts_201_posts_without_subresource_or_dry_run() -> None:
    samples = parse_metrics(APISERVER_PAGE)
    assert objects_created(samples) == {"pods": 2000.0, "events": 1990.0, "resourceclaims": 2000.0}


def test_writes_count_successful_writes_of_every_subresource_but_heartbeats() -> None:
    # pods 2000 + 9 (dry run is still a write request) + binding 2000 + events 1990 + claims
    # 2000 + claim status 2000; not the 409, the leases, the node status or the LIST.
    assert writes(parse_metrics(APISERVER_PAGE)) == 2000 + 9 + 2000 + 1990 + 2000 + 2000


def test_throttle_seconds_sums_every_verb() -> None:
    assert throttle_seconds(parse_metrics(SCHEDULER_PAGE)) == 0.75


def test_reaching_time_interpolates_between_samples() -> None:
    series = [(10.0, 0.0), (11.0, 100.0), (12.0, 300.0), (13.0, 400.0)]
    assert reaching_time(series, 200.0) == 11.5
    assert reaching_time(series, 400.0) == 13.0
    assert reaching_time(series, 401.0) is None
    assert reaching_time([(5.0, 10.0)], 10.0) == 5.0


def test_approach_pace_samples_finer_as_the_target_nears() -> None:
    def pace(*points: tuple[float, float]) -> float:
        log = [(t, {"scheduled": v}) for t, v in points]
        return approach_pace(log, "scheduled", target=2000.0, coarse=1.0, fine=0.05, near=20.0)

    assert pace((0.0, 0.0)) == 1.0  # one sample: no rate yet
    assert pace((0.0, 0.0), (1.0, 300.0)) == 1.0  # 5.7 s left at 300/s
    assert pace((0.0, 1000.0), (1.0, 1400.0)) == 0.75  # 1.5 s left: sample at half of it
    assert pace((0.0, 1900.0), (1.0, 1990.0)) == 0.05  # 10 pods left: within `near`
    assert pace((0.0, 1970.0), (1.0, 1979.0)) == 1.0  # 21 left at 9/s: 1.17 s, capped
    assert pace((0.0, 1500.0), (1.0, 1500.0)) == 1.0  # stalled: no rate to go by
    assert pace((0.0, 1000.0), (0.1, 1900.0)) == 0.05  # 0.011 s left at 9,000/s: never below `fine`
    assert approach_pace([(0.0, {})], "scheduled", 10.0, 1.0, 0.05, 1.0) == 1.0  # a missing key


def test_steady_rate_leaves_out_ramp_up_and_stragglers() -> None:
    # 1000 pods on top of 500 earlier ones: 100 in the first 5s, 800 in the next 4s, 100 in 10s.
    series = [(0.0, 500.0), (5.0, 600.0), (9.0, 1400.0), (19.0, 1500.0)]
    assert steady_rate(series, 500.0, 1000.0) == 200.0
    assert steady_rate(series[:2], 500.0, 1000.0) == 0.0  # never reached 90 %


def test_steal_seconds_reads_the_eighth_cpu_column(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    ticks = os.sysconf("SC_CLK_TCK")
    stat.write_text(f"cpu  1 2 3 4 5 6 7 {3 * ticks} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    assert steal_seconds(str(stat)) == 3.0


def test_schedule_runs_every_other_round_backwards() -> None:
    assert schedule(("a", "b", "c"), 3) == [
        (0, "a"),
        (0, "b"),
        (0, "c"),
        (1, "c"),
        (1, "b"),
        (1, "a"),
        (2, "a"),
        (2, "b"),
        (2, "c"),
    ]


def test_value_at_is_linear_inside_and_flat_outside() -> None:
    series = [(1.0, 0.0), (3.0, 100.0)]
    assert [value_at(series, t) for t in (0.0, 1.0, 2.0, 2.5, 3.0, 9.0)] == [
        0.0,
        0.0,
        50.0,
        75.0,
        100.0,
        100.0,
    ]


def test_throughput_windows_are_per_second_and_trimmed_to_activity() -> None:
    # Nothing for 2s, then 100/s for 3s, then nothing: whatever the sampling interval.
    series = [(0.0, 0.0), (2.0, 0.0), (3.5, 150.0), (5.0, 300.0), (7.0, 300.0)]
    assert throughput_windows(series, 0.0, 7.0) == [100.0, 100.0, 100.0]
    assert throughput_windows(series, 0.0, 0.5) == []
    assert throughput_windows([(0.0, 0.0), (0.4, 20.0)], 0.0, 0.4) == pytest.approx([50.0])


def test_percentile_and_cv() -> None:
    assert [percentile([5.0, 1.0, 3.0, 2.0, 4.0], q) for q in (0, 50, 90, 100)] == [1.0, 3.0, 5.0, 5.0]
    assert percentile([], 50) == 0.0
    assert cv([10.0, 10.0, 10.0]) == 0.0
    assert cv([9.0, 10.0, 11.0]) == pytest.approx(10.0)
    assert cv([4.0]) == 0.0


def _rep(mode: str, round_: int, pods_per_s: float, cpu: float) -> RepResult:
    zero: dict[str, Any] = {f.name: 0.0 for f in dataclasses.fields(RepResult) if f.type in ("float", "int")}
    zero.update(
        mode=mode,
        round=round_,
        pods=100,
        avg_pods_per_s=pods_per_s,
        scheduler_cpu_s=cpu,
        throttled_requests=0,
        api_objects_per_pod=2.0 if mode == "legacy" else 3.0,
    )
    return RepResult(**zero)


def _rounds(*pods_per_s: tuple[float, float]) -> list[RepResult]:
    """A legacy and a bridged repetition a round, at these (legacy, bridged) pods/s."""
    return [
        rep
        for i, (legacy, bridged) in enumerate(pods_per_s)
        for rep in (_rep("legacy", i, legacy, 5.0), _rep("bridged", i, bridged, 40.0))
    ]


def test_summary_takes_ratios_within_each_round() -> None:
    # The machine gets slower in round 1: the ratio to legacy holds, the raw figures drift.
    results = _rounds((200.0, 50.0), (100.0, 25.0), (150.0, 37.5))
    summary = summarize({"kubernetes": "1.37", "nodes": 5, "pods": 100}, results)
    bridged = summary["modes"]["bridged"]
    assert bridged["median"]["avg_pods_per_s"] == 37.5
    assert bridged["cv_percent"]["avg_pods_per_s"] == pytest.approx(33.3, abs=0.05)
    assert bridged["ratio_to_legacy"]["avg_pods_per_s"] == 0.25
    # The best repetitions: legacy's 200 in round 0, bridged's 50 in round 0.
    assert (bridged["best_pods_per_s"], bridged["best_ratio_to_legacy"]) == (50.0, 0.25)
    assert bridged["ratio_cv_percent_to_legacy"]["avg_pods_per_s"] == 0.0
    assert bridged["ratio_to_legacy"]["scheduler_cpu_s"] == 8.0
    assert bridged["ratio_to_legacy"]["api_objects_per_pod"] == 1.5
    assert bridged["ratio_to_legacy"]["etcd_growth_bytes"] is None  # legacy grew 0: no ratio
    assert "ratio_to_plain" not in bridged
    assert "ratio_to_legacy" not in summary["modes"]["legacy"]
    assert [r["round"] for r in bridged["reps"]] == [0, 1, 2]
    assert summary["disturbed"] == []


def test_best_ratio_divides_the_fastest_repetitions_whichever_round_they_ran_in() -> None:
    bridged = summarize({}, _rounds((200.0, 40.0), (100.0, 30.0)))["modes"]["bridged"]
    assert bridged["ratio_to_legacy"]["avg_pods_per_s"] == 0.25  # median of 0.2 and 0.3
    assert (bridged["best_pods_per_s"], bridged["best_ratio_to_legacy"]) == (40.0, 0.2)


def test_summary_pools_every_repetitions_seconds_for_percentiles() -> None:
    # Three 4 s repetitions: no single one is long enough for a p99, together they are 12 s.
    results = [
        dataclasses.replace(_rep("plain", i, 300.0, 4.0), windows=[100.0 * (i + 1) + w for w in range(4)])
        for i in range(3)
    ]
    pooled = summarize({}, results)["modes"]["plain"]["pooled_windows"]
    assert pooled == {"seconds": 12, "p50": 202.0, "p90": 302.0, "p99": 303.0}


def test_format_summary_prints_one_row_per_mode() -> None:
    legacy = dataclasses.replace(_rep("legacy", 0, 200.0, 5.0), windows=[150.0, 210.0, 230.0])
    bridged = dataclasses.replace(_rep("bridged", 0, 50.0, 40.0), steal_percent=2.5)
    results = [legacy, bridged]
    summary = summarize(
        {
            "kubernetes": "1.37",
            "git_version": "v1.37.2",
            "nodes": 5,
            "pods": 100,
            "reps": 1,
            "wall_seconds": 9.0,
        },
        results,
    )
    lines = format_summary(summary).splitlines()
    assert lines[0] == "Kubernetes v1.37.2: 5 nodes x 8 GPUs, 100 pods, 1 rounds, 9s"
    assert lines[2].split() == [
        "legacy",
        "200.0",
        "0.0",
        "-",
        "-",
        "200.0",
        "-",
        "210.0",
        "230.0",
        "5.0",
        "-",
        "2.00",
        "0.00",
        "0.0",
        "0.0",
    ]
    assert lines[3].split()[:11] == [
        "bridged",
        "50.0",
        "0.0",
        "0.250",
        "0.0",
        "50.0",
        "0.250",
        "-",
        "-",
        "40.0",
        "8.00",
    ]
    assert lines[4:] == ["disturbed: bridged round 1: 2.5 % stolen"]


def test_merge_batches_gives_throughput_over_all_batches_and_costs_per_batch() -> None:
    one = dataclasses.replace(
        _rep("legacy", 0, 400.0, 4.0),
        seconds=5.0,
        steady_pods_per_s=500.0,
        windows=[300.0, 500.0],
        etcd_growth_bytes=1000.0,
        steal_percent=0.5,
        throttled_requests=1,
        objects_created={"pods": 100.0, "events": 100.0},
    )
    two = dataclasses.replace(
        one,
        seconds=15.0,
        steady_pods_per_s=125.0,
        windows=[100.0],
        scheduler_cpu_s=6.0,
        etcd_growth_bytes=3000.0,
        steal_percent=2.0,
        objects_created={"pods": 100.0, "events": 102.0, "leases": 1.0},
    )
    merged = merge_batches([one, two])
    assert (merged.pods, merged.batches, merged.seconds, merged.avg_pods_per_s) == (100, 2, 20.0, 10.0)
    # 80 pods in 0.16 s and in 0.64 s: 160 pods in 0.8 s, not the mean of the two rates
    assert merged.steady_pods_per_s == 200.0
    assert merged.windows == [300.0, 500.0, 100.0]
    assert (merged.p50, merged.p99) == (300.0, 500.0)
    assert (merged.scheduler_cpu_s, merged.etcd_growth_bytes) == (5.0, 2000.0)  # per batch
    assert merged.objects_created == {"pods": 100.0, "events": 101.0, "leases": 0.5}
    assert (merged.throttled_requests, merged.steal_percent) == (2, 2.0)  # warnings: total, worst
    assert merge_batches([one]) is one
