"""Benchmark: `dra-harness fleet export` of a large cluster (not a test). Control plane cached
(make controlplane).

    python bench/fleet_export.py [--nodes 100,1000] [--runs 3]

Per size: a bare named cluster holding a fleet of that many nodes in four pools (H100 on DRA,
A100 with static MIG on DRA, H100 on the device plugin alone, and a tenth of the nodes with 16
devices of a driver no personality imitates, which the export replays from their slices: Nodes,
legacy capacity, classes, slices published once; kwok is not waited for, the export reads
objects), then `--runs`
exports, each a process of its own: wall time and peak RSS (wait4's ru_maxrss) per run and
their medians, and whether the export names the same pools and node counts. The export reads
500 objects a page, so peak memory should grow with the pools, not with the nodes. Prints one
JSON line per size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from fake_driver.fleetspec.fleet import load_fleet
from fake_driver.publishing import installer, legacy
from harness.clusters.named import records
from harness.clusters.nodes import KwokPoolSpec, node_manifest
from harness.core.versions import REPO_ROOT
from harness.kit.kube import Kube

RAW_DRIVER = "neuron.example.org"


def fleet_text(nodes: int) -> str:
    h100, mig, raw = nodes // 2, nodes // 5, nodes // 10
    legacy = nodes - h100 - mig - raw
    devices = [
        {"name": f"nd-{k}", "attributes": {"cores": {"int": 8}}, "capacity": {"hbm": {"value": "96Gi"}}}
        for k in range(16)
    ]
    return yaml.safe_dump(
        {
            "personality": "nvidia-v25.12",
            "pools": [
                {"name": "h100", "count": h100, "profile": "h100-80gb-hbm3", "gpus": 8},
                {
                    "name": "a100-mig",
                    "count": mig,
                    "profile": "a100-80gb-pcie",
                    "gpus": 4,
                    "mig": {"mode": "static", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]},
                },
                {
                    "name": "legacy",
                    "count": legacy,
                    "profile": "h100-80gb-hbm3",
                    "gpus": 8,
                    "device_plugin": True,
                    "dra": False,
                },
            ],
            "raw_pools": [
                {"name": "trn", "count": raw, "slices": [{"driver": RAW_DRIVER, "devices": devices}]}
            ],
            "device_classes": [
                {
                    "metadata": {"name": "neuron"},
                    "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{RAW_DRIVER}'"}}]},
                }
            ],
        }
    )


def cli(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "harness.cli.main", *args]
    return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False)


def one_export(kubeconfig: str, out: Path) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of one export process."""
    argv = [
        sys.executable,
        "-m",
        "harness.cli.main",
        "fleet",
        "export",
        "--kubeconfig",
        kubeconfig,
        "--out",
        str(out),
    ]
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"fleet export failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return seconds, usage.ru_maxrss / 1024


def populate(kubeconfig: Path, fleet_file: Path) -> None:
    """The fleet's objects as a cluster of that size holds them (Nodes, legacy capacity,
    DeviceClasses, ResourceSlices), without waiting for kwok to make 1,000 nodes Ready: the
    export reads objects, not node health."""
    fleet = load_fleet(fleet_file)
    kube = Kube.from_kubeconfig(kubeconfig)
    try:
        for pool, members in fleet.node_pools:
            for name in members:
                kube.create(node_manifest(KwokPoolSpec(pool, len(members)), name))
        for raw_class in fleet.device_classes:
            kube.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", **raw_class})
        legacy.advertise(kube.api_client, fleet)
        for personality in {p.personality.name: p.personality for p in fleet.pools if p.dra}.values():
            installer.install(kube.api_client, personality, fleet=fleet, gpu_resources_enabled_override=True)
    finally:
        kube.close()
    published = cli_module(
        "fake_driver", "publish", "--fleet", str(fleet_file), "--kubeconfig", str(kubeconfig)
    )
    if published.returncode != 0:
        raise SystemExit(f"publish failed: {published.stderr[-2000:]}")


def cli_module(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", module, *args]
    return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800, check=False)


def measure(nodes: int, runs: int, work: Path) -> dict[str, Any]:
    name = f"bench-export-{os.getpid()}"
    fleet = work / f"fleet-{nodes}.yaml"
    fleet.write_text(fleet_text(nodes))
    up = cli("cluster", "up", "--name", name, "--no-fleet")
    try:
        if up.returncode != 0:
            raise SystemExit(f"cluster up failed: {up.stderr[-2000:]}")
        kubeconfig = records.state_dir(name) / "admin.kubeconfig"
        started = time.monotonic()
        populate(kubeconfig, fleet)
        populate_seconds = time.monotonic() - started
        out = work / f"exported-{nodes}.yaml"
        figures = [one_export(str(kubeconfig), out) for _ in range(runs)]
        exported = yaml.safe_load(out.read_text())
        made = yaml.safe_load(fleet.read_text())
        wanted = {p["name"]: p["count"] for p in made["pools"] + made["raw_pools"]}
        return {
            "nodes": nodes,
            "populate_seconds": round(populate_seconds, 1),
            "export_seconds": [round(s, 2) for s, _ in figures],
            "export_seconds_median": round(statistics.median(s for s, _ in figures), 2),
            "peak_rss_mib": [round(m, 1) for _, m in figures],
            "peak_rss_mib_median": round(statistics.median(m for _, m in figures), 1),
            "same_pools": {p["name"]: p["count"] for p in exported["pools"] + exported["raw_pools"]}
            == wanted,
        }
    finally:
        cli("cluster", "down", "--name", name, timeout=600)
        cli("cluster", "delete", "--name", name, timeout=600)  # its directory too


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,1000", help="comma-separated cluster sizes")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        for size in (int(n) for n in args.nodes.split(",")):
            print(json.dumps(measure(size, args.runs, Path(tmp))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
