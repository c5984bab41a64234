"""The scale benchmark end to end, in miniature, on the real control plane: every mode
takes the path it claims to measure (claims only where DRA serves the pods, the
scheduler creating them only when bridged), the API server's counters add up per pod, and
the JSON feeds the readiness report's cost section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.bench.modes import MODES
from harness.bench.scale import run
from harness.readiness.inputs import load_cost

PODS = 6


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bench") / "scale-tiny.json"
    # 6 pods take far less than the 10 s window: every repetition runs its 2 batches.
    result: dict[str, Any] = dict(
        run("1.37", nodes=3, pods=PODS, reps=2, modes=MODES, out=out, progress=lambda _: None, max_batches=2)
    )
    result["_path"] = out
    return result


def _reps(summary: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    reps: list[dict[str, Any]] = summary["modes"][mode]["reps"]
    return reps


def test_every_mode_runs_every_round_in_alternating_order(summary: dict[str, Any]) -> None:
    assert summary["min_window_seconds"] == 10.0  # the default: 6 pods never reach it
    assert summary["load_before_1m"] >= 0.0  # the readiness report's quiet-or-shared caveat
    assert list(summary["modes"]) == list(MODES)
    for mode in MODES:
        assert [r["round"] for r in _reps(summary, mode)] == [0, 1]
        assert all(r["pods"] == PODS and r["avg_pods_per_s"] > 0 for r in _reps(summary, mode))
        assert [r["batches"] for r in _reps(summary, mode)] == [2, 2]
    # The last repetition (round 1 runs backwards: plain last) leaves its pods to the teardown.
    assert [r["cleanup_seconds"] > 0 for r in _reps(summary, "plain")] == [True, False]


@pytest.mark.parametrize(
    ("mode", "claims", "by_scheduler"),
    [("plain", 0, 0), ("legacy", 0, 0), ("bridged", PODS, PODS), ("claims", PODS, 0)],
)
def test_each_mode_takes_its_own_path(
    summary: dict[str, Any], mode: str, claims: int, by_scheduler: int
) -> None:
    """Bridged pods get their claims from the scheduler (the metric renamed in 1.37 is read);
    template claims come from the controller-manager; legacy pods never get one. Counts are
    per batch, the mean of the repetition's two."""
    for rep in _reps(summary, mode):
        assert (rep["claims_created"], rep["scheduler_claims_created"]) == (claims, by_scheduler)
        if mode in ("plain", "legacy"):  # the scheduler saw the switch before the first pod
            assert rep["failed_attempts"] == 0
        assert rep["objects_created"]["pods"] == PODS
        assert rep["objects_created"].get("resourceclaims", 0) == claims
        assert rep["objects_created"]["events"] >= PODS  # one Scheduled event a pod, at least


def test_writes_per_pod_show_what_dra_adds(summary: dict[str, Any]) -> None:
    # legacy: create, binding, Scheduled event. DRA adds at least the claim's create and
    # its allocation in status.
    for mode in ("plain", "legacy"):
        assert summary["modes"][mode]["median"]["api_writes_per_pod"] == 3.0
    for mode in ("bridged", "claims"):
        assert summary["modes"][mode]["median"]["api_writes_per_pod"] >= 5.0
        # A claim a pod on top of legacy's pod + event; a FailedScheduling event (a pod tried
        # before its claim existed) can add to it, so exact counts are asserted per resource above.
        assert summary["modes"][mode]["ratio_to_legacy"]["api_objects_per_pod"] >= 1.5


def test_etcd_grows_per_repetition_and_is_compacted_between(summary: dict[str, Any]) -> None:
    growth = [r["etcd_growth_bytes"] for mode in MODES for r in _reps(summary, mode)]
    assert all(0 < g < 5_000_000 for g in growth), growth


def test_the_json_feeds_the_cost_section(summary: dict[str, Any]) -> None:
    cost = load_cost([Path(summary["_path"])])
    assert cost is not None
    assert [row["scenario"].split(":")[0] for row in cost["rows"]] == list(MODES)
    assert all(row["nodes"] == 3 and row["pods"] == PODS for row in cost["rows"])


def test_throughput_windows_are_kept_and_pooled(summary: dict[str, Any]) -> None:
    for mode in MODES:
        reps = _reps(summary, mode)
        assert all(r["windows"] and all(w >= 0 for w in r["windows"]) for r in reps)
        pooled = summary["modes"][mode]["pooled_windows"]
        assert pooled["seconds"] == sum(len(r["windows"]) for r in reps)
        assert pooled["p50"] <= pooled["p90"] <= pooled["p99"] <= max(w for r in reps for w in r["windows"])
        assert all(0 <= r["steal_percent"] <= 100 for r in reps)
        assert all(r["terminated_watchers"] >= 0 and r["terminated_watchers"] % 1 == 0 for r in reps)
    assert all(d.split()[0] in MODES for d in summary["disturbed"])
    # The cluster ran without kwok's 10 s lease churn, and the JSON says so.
    assert summary["cluster_flags"]["kwok"] == ["--node-lease-duration-seconds=3600"]


def test_the_scheduler_accounts_for_dra_only_where_pods_have_claims(summary: dict[str, Any]) -> None:
    """The scheduler's own histograms: every pod passes the Filter and PreBind extension
    points (each call timed); a pod with a claim waits in PreBind for the claim's writes,
    which a pod without one never does. The plugin's own timings are not asserted per mode:
    they are sampled (10 % of cycles) and recorded asynchronously, and a sample of the mode
    before was seen in a plain or legacy window now and then (CI, 2026-12-04)."""
    modes = summary["modes"]
    for mode in MODES:
        assert modes[mode]["extension_point_s_per_pod"]["Filter"] > 0
    for mode in ("bridged", "claims"):
        assert (
            modes[mode]["extension_point_ms"]["PreBind"]
            > 10 * modes["legacy"]["extension_point_ms"]["PreBind"]
        )
