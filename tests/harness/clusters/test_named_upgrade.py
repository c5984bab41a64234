"""What `cluster upgrade` decides before it touches a named cluster (pure: the record is made
here; the step itself runs against real nodes in tests/e2e/test_cluster_upgrade_real_nodes.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.cli.cluster import KUBELET_CHOICES
from harness.clusters.host.identity import ProcessIdentity
from harness.clusters.local.kubelets import DEFAULT_KUBELET_MODE, KUBELET_MODES
from harness.clusters.named import upgrade as named_upgrade
from harness.clusters.named.records import ClusterRecord
from harness.clusters.named.upgrade import REQUEST, StepOutcome, check_request, take_request
from harness.core.errors import HarnessError
from harness.core.versions import Minor

KUBELETS = {"real-0": "1.37", "real-1": "1.37"}


def test_the_command_offers_the_rehearsals_kubelet_modes_default_first() -> None:
    assert (KUBELET_CHOICES, KUBELET_CHOICES[0]) == (KUBELET_MODES, DEFAULT_KUBELET_MODE)


def _record(kubelets: dict[str, str]) -> ClusterRecord:
    return ClusterRecord(
        "x", "1.37", "v1.37.2", "dra-all", "ready", ProcessIdentity.of(os.getpid()), "/k", kubelets=kubelets
    )


def test_the_record_keeps_the_real_nodes_kubelet_minors() -> None:
    record = _record(KUBELETS)
    assert ClusterRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    without = {k: v for k, v in record.to_json().items() if k != "kubelets"}  # an older record
    assert ClusterRecord.from_json(without) == _record({})


@pytest.fixture
def unbuilt(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The cluster `x` runs 1.37 with two real nodes, and no kubelet is built."""
    asked: list[str] = []

    def kubelet_built(minor: Minor) -> None:
        asked.append(minor.name)

    monkeypatch.setattr(named_upgrade, "running", lambda name: _record(KUBELETS))
    monkeypatch.setattr(named_upgrade, "kubelet_built", kubelet_built)
    return asked


def test_a_kubelet_that_is_not_built_is_refused_before_anything_changes(unbuilt: list[str]) -> None:
    with pytest.raises(HarnessError) as refused:
        check_request("x", "1.38")
    assert str(refused.value) == (
        "cluster 'x': real node(s) real-0, real-1 would take the kubelet v1.38.0-beta.0, which is not "
        "built: run `make nodeparts K8S=1.38` first; nothing changed: the cluster runs 1.37 "
        "(`--kubelets keep` leaves them at it)"
    )
    assert unbuilt == ["1.38"]


def test_kept_kubelets_need_no_build(unbuilt: list[str]) -> None:
    assert check_request("x", "1.38", "keep")[1] == "1.38"
    assert unbuilt == []


def test_a_step_down_below_the_nodes_kubelets_is_refused(unbuilt: list[str]) -> None:
    with pytest.raises(HarnessError) as refused:
        check_request("x", "1.36")
    assert str(refused.value).startswith(
        "cluster 'x': a kubelet of 1.37 would be newer than kube-apiserver 1.36, which the version-skew "
    )


def test_a_request_without_a_mode_drains_and_the_outcome_keeps_each_nodes_versions(tmp_path: Path) -> None:
    (tmp_path / REQUEST).write_text(json.dumps({"id": "i", "before": "1.37", "to": "1.38"}))
    assert take_request(tmp_path) == {"id": "i", "before": "1.37", "to": "1.38", "kubelets": "drain"}
    nodes = {"real-0": ["v1.37.2", "v1.38.0-beta.0"]}
    outcome = StepOutcome("i", "1.37", "1.38", True, "1.37 -> 1.38", 1.0, {}, "drain", nodes, 3)
    outcome.write(tmp_path)
    assert StepOutcome.read(tmp_path) == outcome
