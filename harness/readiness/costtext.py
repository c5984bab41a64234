"""The cost section in words: one sentence per mode of a scale benchmark (harness.reports.costs's
ScaleSummary) with its numbers and upstream scheduler_perf's beside them when the run had
--reference, what to watch after migrating a pool, the scheduler's top functions, and the
cost curves' fits (curve-<minor>.json)."""

from __future__ import annotations

from typing import Any

PAUSED = "with the scheduler paused"  # what older result files, without pods_created, did
WHAT = {
    "plain": "a CPU-only pod",
    "legacy": "a device-plugin pod (nvidia.com/gpu advertised by the node)",
    "bridged": "a bridged pod (the same pod, its nvidia.com/gpu served by DRA through the DeviceClass)",
    "claims": "a pod with a ResourceClaimTemplate",
}


def _num(entry: dict[str, Any], key: str) -> float | None:
    value = (entry.get("median") or {}).get(key)
    return float(value) if value is not None else None


# The 1-minute load average before the benchmark started under which the machine counts as
# quiet: during the run the load is mostly the benchmark's own control plane (2-5 on 2 cores).
QUIET_LOAD = 0.5


def caveat(data: dict[str, Any]) -> str:
    """How far to trust the absolute figures: the load before the run says whether anything
    else shared the machine (result files from before it was recorded cannot say)."""
    before = data.get("load_before_1m")
    if before is None:
        return "the machine's load before the run was not recorded: read the figures as ratios"
    if float(before) < QUIET_LOAD:
        return f"nothing else ran (load average {float(before):.1f} before the run)"
    return f"a shared machine (load average {float(before):.1f} before the run): read the figures as ratios"


def context(data: dict[str, Any]) -> str:
    loads = [
        float(r["load_avg_1m"])
        for e in data["modes"].values()
        for r in e.get("reps", [])
        if "load_avg_1m" in r
    ]
    load = f", load average {min(loads):.1f}-{max(loads):.1f} on {data.get('cpus', 2)} cores" if loads else ""
    return (
        f"Kubernetes {data.get('git_version') or data['kubernetes']}, {data.get('nodes')} nodes x "
        f"{data.get('gpus_per_node', 8)} GPUs, {data.get('pods')} pods a repetition, median of "
        f"{data.get('reps')} rounds, pods created "
        f"{data.get('pods_created', PAUSED)}{load}"
    )


def mode_sentence(mode: str, data: dict[str, Any]) -> str:
    entry, pods = data["modes"][mode], float(data.get("pods") or 1)
    rate, cpu = _num(entry, "avg_pods_per_s"), _num(entry, "scheduler_cpu_s")
    writes, etcd = _num(entry, "api_writes_per_pod"), _num(entry, "etcd_growth_bytes")
    ratio = entry.get("ratio_to_legacy") or {}
    ref = ((data.get("reference") or {}).get("modes") or {}).get(mode) or {}
    text = f"On this machine {WHAT.get(mode, mode)} schedules at {rate:.1f} pods/s"
    if ratio.get("avg_pods_per_s") is not None:
        text += f", {ratio['avg_pods_per_s']:.3f}x a device-plugin pod's rate"
    if cpu is not None:
        text += f", and costs the scheduler {1000 * cpu / pods:.1f} ms of CPU"
        if ratio.get("scheduler_cpu_s") is not None:
            text += f" ({ratio['scheduler_cpu_s']:.1f}x a device-plugin pod's)"
    if writes is not None and etcd is not None:
        text += f", {writes:.1f} API writes and {etcd / pods / 1000:.1f} kB of etcd"
    if ref:
        text += f"; upstream's scheduler_perf runs the same workload at {ref['median_pods_per_s']:.1f} pods/s"
        if ref.get("ratio_to_legacy") is not None:
            text += f" here, {ref['ratio_to_legacy']:.3f}x its legacy rate"
            text += f" (ours/upstream {ref['ratio_of_ratios']:.2f})"
            if not ref.get("agrees", True):
                text += ", more than 20 % apart: see why below"
    return text + "."


def watch_list(data: dict[str, Any]) -> list[str]:
    """What to watch after moving a pool to DRA, with this run's figures where it has them."""
    modes = data["modes"]
    dra = next((m for m in ("bridged", "claims") if m in modes), None)
    if dra is None or "legacy" not in modes:
        return []
    entry, legacy = modes[dra], modes["legacy"]
    ratio = entry.get("ratio_to_legacy") or {}
    objects = (_num(entry, "api_objects_per_pod") or 0.0, _num(legacy, "api_objects_per_pod") or 0.0)
    out = [
        f"API objects: {objects[0]:.1f} per {dra} pod against {objects[1]:.1f} (a ResourceClaim per pod, "
        "deleted with it): count resourceclaims and resourceslices with apiserver_storage_objects",
    ]
    if ratio.get("etcd_growth_bytes") is not None:
        out.append(
            f"etcd: {ratio['etcd_growth_bytes']:.1f}x the bytes per pod of legacy; "
            "watch etcd_mvcc_db_total_size_in_bytes against its --quota-backend-bytes"
        )
    if ratio.get("scheduler_cpu_s") is not None:
        out.append(
            f"the scheduler: {ratio['scheduler_cpu_s']:.1f}x the CPU per pod; watch scheduler_pending_pods "
            "(queue active/backoff) and scheduler_scheduling_attempt_duration_seconds during bursts, "
            "and give kube-scheduler the CPU to match"
        )
    plugin = entry.get("dra_plugin_ms") or {}
    if "Filter" in plugin:
        out.append(
            f"where it goes: the DynamicResources plugin's Filter takes {plugin['Filter']:.3f} ms per node "
            'checked (scheduler_plugin_execution_duration_seconds{plugin="DynamicResources"})'
        )
    return out


def profile_lines(data: dict[str, Any], n: int = 8) -> list[str]:
    prof = data.get("cpu_profile") or {}
    rows = (prof.get("top_cum") or {}).get("rows") or []
    return [f"{r['cum_percent']:.1f} % {r['function']}" for r in rows[:n]]


def curve_view(doc: dict[str, Any]) -> dict[str, Any]:
    """The curve's table rows and one sentence per fit."""
    metrics = doc.get("metrics") or {}
    lines = []
    for key, per_metric in (doc.get("fits") or {}).items():
        mode, gpus = key.split("/")
        parts = [
            f"{metrics.get(m, {}).get('label', m)} ~ nodes^{f['exponent']:.2f} (r2 {f['r2']:.2f})"
            for m, f in per_metric.items()
        ]
        lines.append(f"{mode}, {gpus} GPUs/node: " + "; ".join(parts))
    return {"kubernetes": doc.get("kubernetes"), "points": doc.get("points") or [], "fits": lines}
