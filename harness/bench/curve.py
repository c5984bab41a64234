"""Cost curves: the benchmark at several fleet sizes and GPUs per node, one cluster per
point (scale.run), reduced to what a pod costs at each point and a power-law fit of how
each cost grows with the number of nodes (cost = a * nodes^b, least squares in log-log).

The result file (curve-<minor>.json, harness.reports.costs) is rewritten after every point, so a
long curve keeps what it measured when stopped; the plot (plot.py) is drawn from it.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.reports.costplot import curve_svg
from harness.reports.costs import ScaleSummary

# point key -> (label, unit) for the table, the fit and the plot
CURVE_METRICS = {
    "pods_per_s": ("throughput", "pods/s"),
    "scheduler_cpu_ms_per_pod": ("scheduler CPU per pod", "ms"),
    "api_writes_per_pod": ("API writes per pod", "writes"),
    "etcd_bytes_per_pod": ("etcd growth per pod", "bytes"),
}


def points_of(summary: ScaleSummary, point_seconds: float) -> list[dict[str, Any]]:
    """One row per mode of one benchmark run: its medians per pod."""
    pods = summary["pods"]
    rows = []
    for mode, entry in summary["modes"].items():
        med = entry["median"]
        rows.append(
            {
                "mode": mode,
                "nodes": summary["nodes"],
                "gpus_per_node": summary.get("gpus_per_node", 8),
                "pods": pods,
                "pods_per_s": med["avg_pods_per_s"],
                "pods_per_s_cv_percent": entry["cv_percent"]["avg_pods_per_s"],
                "scheduler_cpu_ms_per_pod": round(1000 * med["scheduler_cpu_s"] / pods, 3),
                "api_writes_per_pod": med["api_writes_per_pod"],
                "etcd_bytes_per_pod": round(med["etcd_growth_bytes"] / pods, 1),
                "load_avg_1m": med.get("load_avg_1m", 0.0),
                "point_seconds": round(point_seconds, 1),
            }
        )
    return rows


def fit_power(xs: Sequence[float], ys: Sequence[float]) -> dict[str, float] | None:
    """y = a * x^b by least squares on logs: b is how the cost grows with x (0 flat,
    1 linear); r2 how well a power law describes the points. None below two points."""
    pairs = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len({x for x, _ in pairs}) < 2:
        return None
    n = len(pairs)
    mx, my = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    sxx = sum((x - mx) ** 2 for x, _ in pairs)
    b = sum((x - mx) * (y - my) for x, y in pairs) / sxx
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for _, y in pairs)
    ss_res = sum((y - (a + b * x)) ** 2 for x, y in pairs)
    return {
        "coefficient": round(math.exp(a), 6),
        "exponent": round(b, 3),
        "r2": round(1 - ss_res / ss_tot, 3) if ss_tot else 1.0,
    }


def fits(points: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per "<mode>/<gpus>": per metric, the power-law fit over the fleet sizes."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key in sorted({f"{p['mode']}/{p['gpus_per_node']}" for p in points}):
        mode, gpus = key.split("/")
        series = sorted(
            (p for p in points if p["mode"] == mode and str(p["gpus_per_node"]) == gpus),
            key=lambda p: p["nodes"],
        )
        out[key] = {
            metric: fit
            for metric in CURVE_METRICS
            if (fit := fit_power([p["nodes"] for p in series], [p[metric] for p in series])) is not None
        }
    return out


def curve_doc(minor: str, points: list[dict[str, Any]], wall_seconds: float) -> dict[str, Any]:
    return {
        "kubernetes": minor,
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "wall_seconds": round(wall_seconds, 1),
        "metrics": {k: {"label": label, "unit": unit} for k, (label, unit) in CURVE_METRICS.items()},
        "points": points,
        "fits": fits(points),
    }


def write_curve(path: Path, minor: str, points: list[dict[str, Any]], wall_seconds: float) -> None:
    """curve-<minor>.json and its plot beside it (.svg)."""
    doc = curve_doc(minor, points, wall_seconds)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    path.with_suffix(".svg").write_text(curve_svg(doc))


def run_curve(
    sizes: Sequence[int],
    gpus: Sequence[int],
    bench: Callable[[int, int], ScaleSummary],
    save: Callable[[list[dict[str, Any]], float], None],
    progress: Callable[[str], None] = print,
    earlier: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Every (nodes, GPUs) point by `bench(nodes, gpus)`, saved after each one with the
    `earlier` points of a previous run that this one does not measure again."""
    started, points = time.monotonic(), list(earlier)
    for g in gpus:
        for n in sizes:
            t0 = time.monotonic()
            summary = bench(n, g)
            points = [p for p in points if (p["nodes"], p["gpus_per_node"]) != (n, g)]
            points.extend(points_of(summary, time.monotonic() - t0))
            save(points, time.monotonic() - started)
            progress(f"curve point {n} nodes x {g} GPUs: {time.monotonic() - t0:.0f}s")
    return points
