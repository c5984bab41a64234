"""Upstream's scheduler_perf beside the benchmark, its pure parts: the performance-config
generated from the bench's fleet, the data items read back, and the ratio of ratios."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.bench.modes import DRIVER, GPU, NAMESPACE
from harness.bench.profile import parse_pprof_top
from harness.bench.refconfig import render
from harness.bench.reference import RefResult, parse_data_items, summarize_reference
from harness.bench.snapshot import plugin_costs
from harness.bench.summary import median_dict
from harness.core.errors import HarnessError

MODES = ("plain", "legacy", "bridged", "claims")


def test_config_has_one_test_case_per_mode_with_the_bench_fleet() -> None:
    cfg = render(MODES, 100, 200, "1.37", "v1")
    cases = {c["name"]: c for c in json.loads(cfg.files["performance-config.yaml"])}
    assert sorted(cases) == [
        "DRAHarness_bridged",
        "DRAHarness_claims",
        "DRAHarness_legacy",
        "DRAHarness_plain",
    ]
    bridged = cases["DRAHarness_bridged"]
    assert all(c["featureGates"] == {"DynamicResourceAllocation": True} for c in cases.values())
    assert bridged["workloads"] == [{"name": "100nodes_200pods", "params": {"nodes": 100, "pods": 200}}]
    assert [op["opcode"] for op in bridged["workloadTemplate"]] == [
        "createNodes",
        "createAny",
        "createAny",
        "createPods",
    ]
    assert bridged["workloadTemplate"][-1] == {
        "opcode": "createPods",
        "countParam": "$pods",
        "namespace": NAMESPACE,
        "podTemplatePath": "pod-bridged.yaml",
        "collectMetrics": True,
    }
    claims_ops = cases["DRAHarness_claims"]["workloadTemplate"]
    assert {"opcode": "createAny", "templatePath": "claimtemplate.yaml", "namespace": NAMESPACE} in claims_ops
    assert cases["DRAHarness_legacy"]["workloadTemplate"][0]["nodeTemplatePath"] == "node-legacy.yaml"
    assert cfg.bench_filter("claims") == "^BenchmarkPerfScheduling$/^DRAHarness_claims$/^100nodes_200pods$"


def test_config_names_the_dynamic_resource_allocation_gate_only_where_it_exists() -> None:
    # 1.38 dropped the gate (a scheduler_perf case naming it fails) and always serves DRA.
    for minor, gates in (("1.37", {"DynamicResourceAllocation": True}), ("1.38", {})):
        cases = json.loads(render(MODES, 10, 20, minor, "v1").files["performance-config.yaml"])
        assert [c["featureGates"] for c in cases] == [gates] * len(MODES)


def test_config_templates_index_nodes_and_slices_and_drop_names() -> None:
    files = render(MODES, 10, 20, "1.37", "v1").files
    legacy, node = json.loads(files["node-legacy.yaml"]), json.loads(files["node.yaml"])
    assert legacy["metadata"]["name"] == "bench-{{.Index}}"
    assert legacy["status"]["capacity"][GPU] == "8"
    assert GPU not in node["status"]["capacity"]
    assert node["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    slice_ = json.loads(files["slice-0.yaml"])
    assert slice_["spec"]["nodeName"] == "bench-{{.Index}}"
    assert slice_["spec"]["pool"]["name"] == "bench-{{.Index}}"
    assert len(slice_["spec"]["devices"]) == 8
    assert "987654" not in "".join(files.values())  # the sentinel node name is gone everywhere
    assert json.loads(files["deviceclass-bridged.yaml"])["spec"]["extendedResourceName"] == GPU
    assert "extendedResourceName" not in json.loads(files["deviceclass.yaml"])["spec"]
    pod = json.loads(files["pod-claims.yaml"])
    assert pod["metadata"] == {"generateName": "claims-", "labels": {"dra-harness.io/bench": "1"}}
    template = json.loads(files["claimtemplate.yaml"])
    assert template["metadata"] == {"name": "gpu"}
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == DRIVER


def _item(metric: str, data: dict[str, float], **labels: str) -> dict[str, Any]:
    return {"data": data, "unit": "ms", "labels": {"Metric": metric, "Name": "x", **labels}}


def test_data_items_give_pods_per_second_and_the_dra_plugin() -> None:
    doc = {
        "version": "v1",
        "dataItems": [
            _item("SchedulingDuration", {"Duration": 4.0}),
            _item("SchedulingThroughput", {"Average": 48.04, "Perc50": 50.0}),
            _item(
                "scheduler_plugin_execution_duration_seconds",
                {"Average": 1.23456, "Perc50": 1.0},
                plugin="DynamicResources",
                extension_point="Filter",
            ),
            _item(
                "scheduler_plugin_execution_duration_seconds",
                {"Average": 0.5},
                plugin="NodeResourcesFit",
                extension_point="Filter",
            ),
            _item(
                "scheduler_framework_extension_point_duration_seconds",
                {"Average": 9.0},
                extension_point="Filter",
            ),
        ],
    }
    r = parse_data_items([doc], "bridged", 1, 200)
    assert (r.avg_pods_per_s, r.seconds) == (50.0, 4.0)
    assert r.throughput == {"Average": 48.0, "Perc50": 50.0}
    assert r.plugin_ms == {"DynamicResources/Filter": 1.2346}
    assert r.extension_point_ms == {"Filter": 9.0}


def test_data_items_without_a_duration_are_an_error() -> None:
    with pytest.raises(HarnessError, match="scheduler_perf claims: no SchedulingDuration"):
        parse_data_items([{"dataItems": []}], "claims", 0, 10)


def _ref(mode: str, round_: int, rate: float) -> RefResult:
    return RefResult(mode, round_, 100, 100 / rate, rate)


def test_ratio_of_ratios_divides_ours_by_upstreams_and_explains_a_gap() -> None:
    results = [
        _ref("legacy", 0, 300.0),
        _ref("bridged", 0, 60.0),
        _ref("legacy", 1, 200.0),
        _ref("bridged", 1, 36.0),
    ]
    results[-1].plugin_ms = {"DynamicResources/PreBind": 1681.1}  # the summary takes the last round's
    ours = {
        "legacy": {"median": {"api_writes_per_pod": 3.0}},
        "bridged": {
            "median": {"api_writes_per_pod": 8.0},
            "ratio_to_legacy": {"avg_pods_per_s": 0.125, "scheduler_cpu_s": 8.6},
            "dra_plugin_ms": {"PreBind": 3814.2},
        },
    }
    out = summarize_reference(results, ours)
    assert out["bridged"]["ratio_to_legacy"] == 0.19  # median of 0.2 and 0.18
    assert out["bridged"]["ratio_of_ratios"] == round(0.125 / 0.19, 3)
    assert out["bridged"]["agrees"] is False
    why = out["bridged"]["why"]
    assert why.startswith("bridged/legacy is 0.125 here and 0.190 under scheduler_perf (0.66x")
    assert "8.0 API writes here, legacy 3.0" in why
    assert "--concurrent measures that way" in why
    assert "8.6x legacy's CPU" in why
    assert why.endswith("takes 3814 ms a pod here and 1681 ms under scheduler_perf.")
    assert "ratio_to_legacy" not in out["legacy"]
    assert out["legacy"]["pods_per_s"] == [300.0, 200.0]


def test_ratios_within_twenty_percent_agree_without_explanation() -> None:
    results = [_ref("legacy", 0, 100.0), _ref("claims", 0, 15.0)]
    out = summarize_reference(results, {"claims": {"ratio_to_legacy": {"avg_pods_per_s": 0.17}}})
    assert (out["claims"]["ratio_of_ratios"], out["claims"]["agrees"]) == (1.133, True)
    assert "why" not in out["claims"]


PPROF_TOP = """\
File: k8slocal
Type: cpu
Time: 2026-12-04 01:40:00 UTC
Duration: 20s, Total samples = 12.50s (62.50%)
Showing nodes accounting for 6.20s, 49.60% of 12.50s total
Dropped 512 nodes (cum <= 0.06s)
Showing top 3 nodes out of 901
      flat  flat%   sum%        cum   cum%
     2.10s 16.80% 16.80%      2.40s 19.20%  runtime.mallocgc
    1500ms 12.00% 28.80%     9.80s 78.40%  structured/internal/incubating.(*Allocator).Allocate
     0.05s  0.40% 29.20%   1.2mins 100%  runtime.goexit
         0     0% 29.20%      0.64s  5.12%  scheduler.(*frameworkImpl).RunFilterPlugins
"""


def test_pprof_top_rows_in_seconds_whatever_the_unit() -> None:
    top = parse_pprof_top(PPROF_TOP)
    assert top["total_samples_s"] == 12.5
    assert [r["function"] for r in top["rows"]] == [
        "runtime.mallocgc",
        "structured/internal/incubating.(*Allocator).Allocate",
        "runtime.goexit",
        "scheduler.(*frameworkImpl).RunFilterPlugins",
    ]
    assert top["rows"][1] == {
        "function": "structured/internal/incubating.(*Allocator).Allocate",
        "flat_s": 1.5,
        "flat_percent": 12.0,
        "cum_s": 9.8,
        "cum_percent": 78.4,
    }
    assert top["rows"][2]["cum_s"] == 72.0
    assert (top["rows"][3]["flat_s"], top["rows"][3]["cum_s"]) == (0.0, 0.64)


def _hist(name: str, s: float, n: float, **labels: str) -> list[tuple[str, dict[str, str], float]]:
    return [(f"{name}_sum", labels, s), (f"{name}_count", labels, n)]


def test_plugin_costs_are_the_histograms_between_two_scrapes() -> None:
    ep, pl = (
        "scheduler_framework_extension_point_duration_seconds",
        "scheduler_plugin_execution_duration_seconds",
    )
    before = [
        *_hist(ep, 1.0, 100, extension_point="Filter", profile="default-scheduler", status="Success"),
        *_hist(pl, 0.1, 10, extension_point="Filter", plugin="DynamicResources", status="Success"),
    ]
    after = [
        *_hist(ep, 5.0, 300, extension_point="Filter", profile="default-scheduler", status="Success"),
        *_hist(ep, 0.2, 0, extension_point="Bind", profile="default-scheduler", status="Success"),
        *_hist(pl, 0.5, 30, extension_point="Filter", plugin="DynamicResources", status="Success"),
        *_hist(pl, 9.0, 30, extension_point="Filter", plugin="NodeResourcesFit", status="Success"),
    ]
    assert plugin_costs(before, after, 200) == {
        "extension_point_ms": {"Filter": 20.0},
        "extension_point_s_per_pod": {"Filter": 0.02},
        "dra_plugin_ms": {"Filter": 20.0},
    }


def test_median_dict_takes_each_key_over_the_dicts_that_have_it() -> None:
    assert median_dict([{"a": 1.0, "b": 5.0}, {"a": 3.0}, {"a": 2.0, "b": 7.0}]) == {"a": 2.0, "b": 6.0}
