"""`fleet export` round trip on the real control plane: the demo cluster, plus a node of a
driver no personality imitates (replayed from its slices, its DeviceClass with it), exported,
replayed by `cluster up --fleet`, gives the same scan (findings, checks, pools) and the same
`cluster status` pool table."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.clusters.named import records
from harness.clusters.nodes import KwokPoolSpec, node_manifest, node_ready
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.waits import TIMEOUTS, wait_for
from tests.e2e.lifecycle_probe import cli, finish, remove_cluster


@pytest.fixture
def names() -> Iterator[tuple[str, str]]:
    pair = (f"t{os.getpid()}-exported", f"t{os.getpid()}-replay")
    yield pair
    for name in pair:
        remove_cluster(name)


def _kubeconfig(name: str) -> str:
    return str(records.state_dir(name) / "admin.kubeconfig")


def _add_foreign_driver_node(kubeconfig: str) -> None:
    """Node accel-0 (pool accel) with two devices of accel.example.org and its DeviceClass."""
    kube = Kube.from_kubeconfig(Path(kubeconfig))
    try:
        kube.create(node_manifest(KwokPoolSpec("accel", 1), "accel-0"))
        devices = [
            {
                "name": f"acc-{k}",
                "attributes": {"serial": {"string": f"S{k}"}},
                "capacity": {"hbm": {"value": "32Gi"}},
            }
            for k in range(2)
        ]
        spec = {
            "driver": "accel.example.org",
            "nodeName": "accel-0",
            "pool": {"name": "accel-0", "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        }
        kube.create(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": "accel-0-accel"},
                "spec": spec,
            }
        )
        cel = {"cel": {"expression": "device.driver == 'accel.example.org'"}}
        kube.create(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "accel"},
                "spec": {"selectors": [cel]},
            }
        )
        wait_for(
            lambda: kube.get(*kinds.NODE, "accel-0"),
            node_ready,
            timeout=TIMEOUTS.node_ready,
            describe="node accel-0 Ready",
        )
    finally:
        kube.close()


def _scan_and_status(name: str, out: Path) -> tuple[dict[str, object], list[str]]:
    code, _, err = finish(cli("scan", "--kubeconfig", _kubeconfig(name), "--json", str(out)), "scan")
    assert code in (0, 2, 3), err
    scanned = json.loads(out.read_text())
    code, status, err = finish(cli("cluster", "status", "--name", name), "cluster status")
    assert code == 0, err
    table = [line for line in status.splitlines() if not line.startswith(("#", "export KUBECONFIG"))]
    return scanned, table


def test_the_demo_cluster_exported_and_replayed_scans_the_same(
    names: tuple[str, str], tmp_path: Path
) -> None:
    exported, replay = names
    code, _, err = finish(cli("cluster", "up", "--name", exported), "cluster up (demo fleet)")
    assert code == 0, err
    _add_foreign_driver_node(_kubeconfig(exported))
    fleet = tmp_path / "fleet.yaml"
    code, out, err = finish(
        cli("fleet", "export", "--kubeconfig", _kubeconfig(exported), "--out", str(fleet)), "fleet export"
    )
    assert code == 0, err
    assert out.strip() == (
        f"fleet: 6 node(s) in 4 pool(s) (1 replayed from their slices) written to {fleet}; left out: 0"
    )
    before, before_table = _scan_and_status(exported, tmp_path / "before.json")
    finish(cli("cluster", "down", "--name", exported), "cluster down")

    code, _, err = finish(
        cli("cluster", "up", "--name", replay, "--fleet", str(fleet)), "cluster up (replay)"
    )
    assert code == 0, err
    after, after_table = _scan_and_status(replay, tmp_path / "after.json")
    assert after == before
    assert after_table == before_table
    assert [row.split()[0] for row in after_table[1:]] == ["a100-mig", "accel", "h100", "legacy"]
    accel = next(row.split() for row in after_table if row.startswith("accel "))
    assert accel[:4] == ["accel", "1", "1", "2"], "pool, nodes, ready, DRA devices published"
    (raw_pool,) = yaml.safe_load(fleet.read_text())["raw_pools"]
    assert [d["name"] for s in raw_pool["slices"] for d in s["devices"]] == ["acc-0", "acc-1"]
    assert before["findings"], "the demo fleet has findings to compare (its legacy pool)"
