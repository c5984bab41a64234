"""Cost curves, their pure parts: a run's medians per pod, the power-law fit, the SVG plot."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any, cast

from harness.bench.curve import CURVE_METRICS, curve_doc, fit_power, fits, points_of, run_curve
from harness.reports.costplot import curve_svg
from harness.reports.costs import ScaleSummary


def _summary(nodes: int, gpus: int, bridged_cpu: float) -> ScaleSummary:
    def mode(rate: float, cpu: float, writes: float, etcd: float) -> dict[str, Any]:
        median = {
            "avg_pods_per_s": rate,
            "scheduler_cpu_s": cpu,
            "api_writes_per_pod": writes,
            "etcd_growth_bytes": etcd,
            "load_avg_1m": 3.5,
        }
        return {"median": median, "cv_percent": {"avg_pods_per_s": 4.0}}

    modes = {"legacy": mode(300.0, 4.0, 3.0, 4e6), "bridged": mode(40.0, bridged_cpu, 8.0, 16e6)}
    return cast(ScaleSummary, {"nodes": nodes, "gpus_per_node": gpus, "pods": 2000, "modes": modes})


def test_points_are_costs_per_pod() -> None:
    legacy, bridged = points_of(_summary(500, 8, 40.0), 123.45)
    assert bridged == {
        "mode": "bridged",
        "nodes": 500,
        "gpus_per_node": 8,
        "pods": 2000,
        "pods_per_s": 40.0,
        "pods_per_s_cv_percent": 4.0,
        "scheduler_cpu_ms_per_pod": 20.0,
        "api_writes_per_pod": 8.0,
        "etcd_bytes_per_pod": 8000.0,
        "load_avg_1m": 3.5,
        "point_seconds": 123.5,
    }
    assert legacy["scheduler_cpu_ms_per_pod"] == 2.0


def test_fit_power_recovers_exponent_and_coefficient() -> None:
    xs = [100, 500, 1000, 2000]
    fit = fit_power(xs, [3.0 * x**0.5 for x in xs])
    assert fit == {"coefficient": 3.0, "exponent": 0.5, "r2": 1.0}
    assert fit_power([100, 100], [1.0, 2.0]) is None  # one fleet size: nothing to fit
    flat = fit_power([100, 1000], [5.0, 5.0])
    assert flat is not None
    assert flat["exponent"] == 0.0


def test_fits_per_mode_and_gpus_over_fleet_sizes() -> None:
    points = [p for n in (100, 1000) for p in points_of(_summary(n, 8, 0.004 * n), 1.0)]
    out = fits(points)
    assert sorted(out) == ["bridged/8", "legacy/8"]
    assert out["bridged/8"]["scheduler_cpu_ms_per_pod"]["exponent"] == 1.0  # linear in nodes
    assert out["legacy/8"]["pods_per_s"]["exponent"] == 0.0


def test_svg_has_a_panel_per_metric_and_a_line_per_mode_and_gpus() -> None:
    points = [p for g in (4, 8) for n in (100, 500, 1000) for p in points_of(_summary(n, g, 0.01 * n), 1.0)]
    svg = curve_svg(curve_doc("1.37", points, 10.0))
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    lines = root.findall(f"{ns}polyline")
    assert len(lines) == len(CURVE_METRICS) * 4  # 2 modes x 2 GPU counts per panel
    assert sum(1 for line in lines if line.get("stroke-dasharray")) == len(CURVE_METRICS) * 2
    assert len(root.findall(f"{ns}circle")) == len(CURVE_METRICS) * 4 * 3
    titles = [t.text for t in root.findall(f"{ns}text")]
    assert "scheduler CPU per pod (ms)" in titles
    assert "throughput (pods/s)" in titles
    assert not any(
        math.isnan(float(v)) for line in lines for xy in line.get("points", "").split() for v in xy.split(",")
    )


def test_run_curve_replaces_only_the_points_it_measures_again() -> None:
    earlier = [*points_of(_summary(100, 8, 1.0), 5.0), *points_of(_summary(500, 8, 1.0), 5.0)]
    saved: list[int] = []
    points = run_curve(
        [500],
        [8],
        lambda n, g: _summary(n, g, 9.0),
        lambda p, _: saved.append(len(p)),
        lambda _: None,
        earlier,
    )
    assert saved == [4]
    assert [(p["nodes"], p["mode"]) for p in points] == [
        (100, "legacy"),
        (100, "bridged"),
        (500, "legacy"),
        (500, "bridged"),
    ]
    assert points[3]["scheduler_cpu_ms_per_pod"] == 4.5  # the new 500-node run's 9 s over 2,000 pods
