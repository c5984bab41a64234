"""Benchmark: a real DRA driver on real nodes (not a test). Binaries cached (make drivers).

    python bench/real_driver.py [--drivers example@v0.2.1,example@v0.3.0,example@v0.4.0]
                                [--runs 5] [--nodes 2] [--suite suites/node ...]

Per driver@version: the real nodes' start to Ready with the driver's slices published (from the
pool's start, after the control plane is up), per run and the median of `--runs`; then one
`dra-harness qualify --driver-spec` on the last run's cluster: its wall time, tests run and
skipped, and each capability's verdict (with the reason of every NOT SUPPORTED). Prints one
JSON line per driver, then a capability x driver table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.versions import REPO_ROOT
from harness.qualify.run import DEFAULT_SUITES as SUITES

GPUS_PER_NODE = 8  # as a matrix real-driver cell's (harness/cli/realcell.py): the 8-GPU requests run


def start(driver: str, nodes: int, run_dir: Path) -> tuple[LocalCluster, float]:
    pool = RealPoolSpec("ex", count=nodes, gpus=GPUS_PER_NODE, driver=driver)
    cluster = LocalCluster(profile="dra-all", run_dir=run_dir, real_pools=[pool])
    cluster.start()
    assert cluster.real is not None
    return cluster, cluster.real.ready_seconds


def qualify(cluster: LocalCluster, driver: str, suites: list[str], out: Path) -> dict[str, Any]:
    assert cluster.real is not None
    image = next(iter(cluster.real.parts.values())).busybox_ref
    argv = [sys.executable, "-m", "harness.cli.main", "qualify", f"--kubeconfig={cluster.kubeconfig}"]
    argv += [f"--driver-spec={driver}", f"--container-image={image}", f"--out={out}"]
    argv += [f"--suite={s}" for s in suites]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800, check=False)
    wall = time.monotonic() - started
    report = json.loads((out / "qualify.json").read_text()) if (out / "qualify.json").exists() else {}
    return {
        "exit": done.returncode,
        "wall_seconds": round(wall, 1),
        "totals": report.get("totals", {}),
        "verdicts": {c["id"]: c["verdict"] for c in report.get("capabilities", [])},
        "not_supported": [
            line for line in done.stdout.splitlines() if line.startswith(("NOT SUPPORTED", "FAIL"))
        ],
    }


def measure(driver: str, runs: int, nodes: int, suites: list[str]) -> dict[str, Any]:
    ready: list[float] = []
    result: dict[str, Any] = {"driver": driver, "nodes": nodes}
    with tempfile.TemporaryDirectory(prefix="bench-real-driver-") as tmp:
        for i in range(runs):
            cluster, seconds = start(driver, nodes, Path(tmp) / f"run{i}")
            ready.append(round(seconds, 2))
            try:
                if i == runs - 1:
                    result["qualify"] = qualify(cluster, driver, suites, Path(tmp) / "qualify")
            finally:
                cluster.stop()
    result["ready_seconds"] = ready
    result["ready_median"] = statistics.median(ready)
    return result


def table(results: list[dict[str, Any]]) -> str:
    ids = list(results[0]["qualify"]["verdicts"]) if results and "qualify" in results[0] else []
    rows = [f"{'capability':<22}" + "".join(f"{r['driver']:>18}" for r in results)]
    for cap in ids:
        rows.append(f"{cap:<22}" + "".join(f"{r['qualify']['verdicts'].get(cap, '-'):>18}" for r in results))
    for key in ("passed", "skipped", "failed"):
        rows.append(
            f"{'tests ' + key:<22}" + "".join(f"{r['qualify']['totals'].get(key, 0):>18}" for r in results)
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drivers", default="example@v0.2.1,example@v0.3.0,example@v0.4.0")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--suite", action="append", help=f"default: {', '.join(SUITES)}")
    args = parser.parse_args()
    results = []
    for driver in args.drivers.split(","):
        result = measure(driver, args.runs, args.nodes, args.suite or list(SUITES))
        print(json.dumps(result), flush=True)
        results.append(result)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
