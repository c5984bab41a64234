"""The benchmark summary as a terminal table."""

from __future__ import annotations

from harness.reports.costs import ScaleSummary


def format_summary(summary: ScaleSummary) -> str:
    """A terminal table of the medians, CVs and ratios to legacy, the best repetition's
    throughput, then the disturbed repetitions."""
    gpus = summary.get("gpus_per_node", 8)
    head = (
        f"Kubernetes {summary['git_version']}: {summary['nodes']} nodes x {gpus} GPUs, "
        f"{summary['pods']} pods, {summary['reps']} rounds, {summary['wall_seconds']:.0f}s"
    )
    cols = f"{'mode':<8} {'pods/s':>7} {'CV%':>5} {'xlegacy':>8} {'CV%':>5} {'best':>7} {'xlegacy':>8} "
    cols += f"{'p50':>6} {'p99':>6} "
    cols += f"{'schedCPU':>9} {'xlegacy':>8} {'obj/pod':>8} {'wr/pod':>7} {'etcd MB':>8} {'throttle':>9}"
    lines = [head, cols]
    for mode, e in summary["modes"].items():
        med, spread, pooled = e["median"], e["cv_percent"], e.get("pooled_windows") or {}
        ratio, ratio_cv = e.get("ratio_to_legacy") or {}, e.get("ratio_cv_percent_to_legacy") or {}

        def fmt(v: float | None, spec: str) -> str:
            return "-" if v is None else format(v, spec)

        lines.append(
            f"{mode:<8} {med['avg_pods_per_s']:7.1f} {spread['avg_pods_per_s']:5.1f} "
            f"{fmt(ratio.get('avg_pods_per_s'), '8.3f'):>8} {fmt(ratio_cv.get('avg_pods_per_s'), '5.1f'):>5} "
            f"{fmt(e.get('best_pods_per_s'), '7.1f'):>7} {fmt(e.get('best_ratio_to_legacy'), '8.3f'):>8} "
            f"{fmt(pooled.get('p50'), '6.1f'):>6} {fmt(pooled.get('p99'), '6.1f'):>6} "
            f"{med['scheduler_cpu_s']:9.1f} {fmt(ratio.get('scheduler_cpu_s'), '8.2f'):>8} "
            f"{med['api_objects_per_pod']:8.2f} {med['api_writes_per_pod']:7.2f} "
            f"{med['etcd_growth_bytes'] / 1e6:8.1f} "
            f"{med['client_throttle_s'] + med['throttled_requests']:9.1f}"
        )
    lines += _reference_lines(summary)
    lines += [f"disturbed: {d}" for d in summary.get("disturbed", [])]
    return "\n".join(lines)


def _reference_lines(summary: ScaleSummary) -> list[str]:
    """Upstream's scheduler_perf beside ours: pods/s, ratio to legacy, the ratio of ratios."""
    ref = (summary.get("reference") or {}).get("modes") or {}
    if not ref:
        return []
    lines = [f"{'scheduler_perf':<16} {'pods/s':>7} {'xlegacy':>8} {'ours':>7} {'ours/up':>8}"]
    for mode, e in ref.items():
        ratio, ours, ror = e.get("ratio_to_legacy"), e.get("ours_ratio_to_legacy"), e.get("ratio_of_ratios")
        cells = [format(v, ".3f") if v is not None else "-" for v in (ratio, ours, ror)]
        lines.append(f"{mode:<16} {e['median_pods_per_s']:7.1f} {cells[0]:>8} {cells[1]:>7} {cells[2]:>8}")
    lines += [f"why {mode}: {e['why']}" for mode, e in ref.items() if e.get("why")]
    return lines
