"""`fleet export` round trip on the real control plane: the demo cluster exported, replayed by
`cluster up --fleet`, gives the same scan (findings, checks, pools) and the same `cluster
status` pool table."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters.named import records
from tests.e2e.lifecycle_probe import cli, finish, remove_cluster


@pytest.fixture
def names() -> Iterator[tuple[str, str]]:
    pair = (f"t{os.getpid()}-exported", f"t{os.getpid()}-replay")
    yield pair
    for name in pair:
        remove_cluster(name)


def _kubeconfig(name: str) -> str:
    return str(records.state_dir(name) / "admin.kubeconfig")


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
    fleet = tmp_path / "fleet.yaml"
    code, out, err = finish(
        cli("fleet", "export", "--kubeconfig", _kubeconfig(exported), "--out", str(fleet)), "fleet export"
    )
    assert code == 0, err
    assert out.strip() == f"fleet: 5 node(s) in 3 pool(s) written to {fleet}; left out: 0"
    before, before_table = _scan_and_status(exported, tmp_path / "before.json")
    finish(cli("cluster", "down", "--name", exported), "cluster down")

    code, _, err = finish(
        cli("cluster", "up", "--name", replay, "--fleet", str(fleet)), "cluster up (replay)"
    )
    assert code == 0, err
    after, after_table = _scan_and_status(replay, tmp_path / "after.json")
    assert after == before
    assert after_table == before_table
    assert [row.split()[0] for row in after_table[1:]] == ["a100-mig", "h100", "legacy"]
    assert before["findings"], "the demo fleet has findings to compare (its legacy pool)"
