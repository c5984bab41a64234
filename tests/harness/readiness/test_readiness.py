"""Readiness checks from crafted summaries: the status rules and remediation text (the report
built from them is tested in test_readiness_report.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.requirements import Capability, Kind, Reason
from harness.core.versions import REPO_ROOT
from harness.readiness import CHECKS, Status, evaluate
from harness.readiness.catalog import CHECK_IDS
from harness.readiness.checks import skip_meaning, uncovered
from harness.readiness.gates import gate_remediation
from harness.reports.summary import read_summary, write_summary
from tests.support.readiness_data import (
    DYN,
    EXT,
    GANG,
    GATE_OFF,
    LIFE,
    NO_MAP,
    SMOKE,
    gate_off,
    rec,
    summary,
)

# ---- status rules --------------------------------------------------------------------------


def test_all_passed_is_pass() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT), rec(LIFE), rec(SMOKE)])
    assert (r.status, r.detail, r.remediation) == (Status.PASS, "2 of 2 passed", "")
    assert r.counts == {"passed": 2, "failed": 0, "skipped": 0, "errors": 0}


def test_no_test_of_the_check_is_skip() -> None:
    r = evaluate(CHECK_IDS["gang"], [rec(SMOKE)])
    assert (r.status, r.detail) == (Status.SKIP, "no test of this check ran in this cell")


def test_a_failure_is_fail_with_the_failure_line_and_the_checks_remediation() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT, "failed", "AssertionError: claim not created"), rec(LIFE)])
    assert r.status == Status.FAIL
    assert r.detail == (
        "1 of 2 failed; test_legacy_gpu_request_gets_a_scheduler_created_claim: "
        "AssertionError: claim not created"
    )
    assert r.remediation == CHECK_IDS["bridging"].on_fail


def test_setup_error_counts_as_fail() -> None:
    assert (
        evaluate(CHECK_IDS["cluster"], [rec(SMOKE, "errors", "cluster: exited early")]).status == Status.FAIL
    )


def test_bridging_skipped_because_the_gate_is_off_is_fail_naming_gate_components_and_version() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT, "skipped", GATE_OFF), rec(LIFE, "skipped", GATE_OFF)])
    assert r.status == Status.FAIL
    assert r.detail == f"skipped: {GATE_OFF.message()}"
    assert r.remediation == (
        "pods requesting nvidia.com/gpu stay Pending on DRA-only nodes in 1.35/defaults: enable feature gate "
        "DRAExtendedResource on kube-apiserver, kube-scheduler, kube-controller-manager and kubelet, "
        "or upgrade to 1.36 where it is beta and on by default (GA in 1.37)"
    )


def test_class_without_extended_resource_name_is_warn_when_other_bridging_tests_pass() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT, "skipped", NO_MAP), rec(LIFE)])
    assert r.status == Status.WARN
    assert r.detail == f"1 of 2 passed, 1 skipped: {NO_MAP.message()}"
    assert "set extendedResourceName: nvidia.com/gpu on it" in r.remediation
    assert "DeviceClass gpu.nvidia.com" in r.remediation


def test_class_without_extended_resource_name_is_fail_when_nothing_bridged_runs() -> None:
    r = evaluate(CHECK_IDS["bridging"], [rec(EXT, "skipped", NO_MAP)])
    assert r.status == Status.FAIL


def test_gang_skipped_for_an_off_gate_is_warn_with_the_gate_remediation() -> None:
    msg = gate_off("GenericWorkload", "1.36")
    r = evaluate(CHECK_IDS["gang"], [rec(GANG, "skipped", msg)])
    assert r.status == Status.WARN
    assert r.remediation == gate_remediation("GenericWorkload")
    assert r.remediation.startswith(
        "enable feature gate GenericWorkload on kube-apiserver and kube-scheduler"
    )


def test_min_version_skip_is_warn_naming_the_version() -> None:
    msg = Reason(Kind.VERSION, minor="1.34", need="1.35")
    r = evaluate(CHECK_IDS["gang"], [rec(GANG, "skipped", msg)])
    assert (r.status, r.remediation) == (
        Status.WARN,
        "needs Kubernetes 1.35; this cell runs 1.34: upgrade the control plane",
    )


def test_dynamic_mig_gate_off_names_the_gate_and_the_release_where_it_is_on() -> None:
    msg = gate_off("DRAPartitionableDevices", "1.35")
    r = evaluate(CHECK_IDS["mig-dynamic"], [rec(DYN, "skipped", msg)])
    assert r.status == Status.WARN
    assert r.remediation == (
        "enable feature gate DRAPartitionableDevices on kube-apiserver, kube-scheduler and kubelet, "
        "or upgrade to 1.36 where it is beta and on by default"
    )


def test_a_skip_that_does_not_matter_is_skip_or_leaves_pass() -> None:
    inverse = Reason(
        Kind.FEATURE_GATE, False, minor="1.37", profile="dra-all", gate="DRAExtendedResource", state=True
    )
    check = CHECK_IDS["bridging"]
    assert evaluate(check, [rec(EXT, "skipped", inverse)]).status == Status.SKIP
    both = evaluate(check, [rec(EXT), rec(LIFE, "skipped", inverse)])
    assert (both.status, both.detail) == (Status.PASS, "1 of 2 passed (1 not applicable here)")


def test_a_part_not_built_here_is_said_so_not_called_not_applicable() -> None:
    unbuilt = Reason(Kind.NOT_BUILT, text="the kubelet v1.38.0-beta.0 cannot be built: iptables-wrappers 403")
    inverse = Reason(
        Kind.FEATURE_GATE, False, minor="1.37", profile="dra-all", gate="DRAExtendedResource", state=True
    )
    check = CHECK_IDS["bridging"]
    alone = evaluate(check, [rec(EXT, "skipped", unbuilt)])
    assert (alone.status, alone.detail) == (
        Status.SKIP,
        "not built here: the kubelet v1.38.0-beta.0 cannot be built: iptables-wrappers 403",
    )
    mixed = evaluate(check, [rec(EXT, "skipped", unbuilt), rec(LIFE, "skipped", inverse)])
    assert mixed.detail == (
        "not applicable: covers cells where feature gate DRAExtendedResource is off; it is on in "
        "1.37/dra-all; not built here: the kubelet v1.38.0-beta.0 cannot be built: iptables-wrappers 403"
    )


def test_a_skip_without_reasons_is_skip_whatever_its_wording() -> None:
    worded = rec(GANG, "skipped", "needs feature gate GenericWorkload, off in 1.36/defaults")
    assert skip_meaning(CHECK_IDS["gang"], worded) == (Status.SKIP, "")


# Every reason kind with what it means for a bridged check and for any other check. A new
# Kind without a row here fails the test below; one without a rule fails mypy (assert_never).
_REQUIRED_OFF = "needs feature gate DRAExtendedResource, off in 1.35/defaults"
KIND_OUTCOMES: dict[Kind, list[tuple[Reason, str, Status, Status]]] = {
    Kind.FEATURE_GATE: [
        (GATE_OFF, _REQUIRED_OFF, Status.FAIL, Status.WARN),
        (
            gate_off("DRAPartitionableDevices", "1.35"),
            "needs feature gate DRAPartitionableDevices, off in 1.35/defaults",
            Status.WARN,
            Status.WARN,
        ),
        (
            Reason(Kind.FEATURE_GATE, minor="1.34", gate="GenericWorkload"),
            "needs feature gate GenericWorkload, unknown to Kubernetes 1.34",
            Status.WARN,
            Status.WARN,
        ),
        (
            Reason(Kind.FEATURE_GATE, False, "1.37", "dra-all", gate="DRAExtendedResource", state=True),
            "covers cells where feature gate DRAExtendedResource is off; it is on in 1.37/dra-all",
            Status.SKIP,
            Status.SKIP,
        ),
        (
            Reason(Kind.FEATURE_GATE, False, "1.37", "dra-all", gate="DRAPartitionableDevices"),
            "covers cells where feature gate DRAPartitionableDevices is off; "
            "it is unknown to Kubernetes 1.37",
            Status.SKIP,
            Status.SKIP,
        ),
    ],
    Kind.VERSION: [
        (
            Reason(Kind.VERSION, minor="1.34", need="1.35"),
            "needs Kubernetes >= 1.35 (cell is 1.34)",
            Status.WARN,
            Status.WARN,
        )
    ],
    Kind.API: [
        (
            Reason(Kind.API, minor="1.36", profile="defaults", need="scheduling.k8s.io/v1alpha2"),
            "needs scheduling.k8s.io/v1alpha2 served (runtime-config), not served in 1.36/defaults",
            Status.WARN,
            Status.WARN,
        )
    ],
    Kind.DRIVER_CAPABILITY: [
        (
            NO_MAP,
            "nvidia-v0.4 installs gpu.nvidia.com without extendedResourceName nvidia.com/gpu",
            Status.FAIL,
            Status.WARN,
        ),
        (
            Reason(
                Kind.DRIVER_CAPABILITY,
                False,
                "1.37",
                "dra-all",
                capability=Capability.BRIDGE,
                driver="nvidia-v25.12",
            ),
            "the bridge is available in 1.37/dra-all with nvidia-v25.12",
            Status.SKIP,
            Status.SKIP,
        ),
    ],
    Kind.PROVIDER: [
        (
            Reason(
                Kind.PROVIDER,
                text="the rollout suite installs and removes the driver itself: fake driver only",
            ),
            "the rollout suite installs and removes the driver itself: fake driver only",
            Status.SKIP,
            Status.SKIP,
        )
    ],
    Kind.FLEET: [
        (
            Reason(
                Kind.FLEET, device_class="gpu.example.com", need="MIG devices", text="2 node(s): a (8), b (8)"
            ),
            "needs MIG devices of class gpu.example.com; the fleet has 2 node(s): a (8), b (8)",
            Status.SKIP,
            Status.SKIP,
        )
    ],
    Kind.NOT_BUILT: [
        (
            Reason(Kind.NOT_BUILT, text="the kubelet v1.37.2 is not built: run `make nodeparts K8S=1.37`"),
            "the kubelet v1.37.2 is not built: run `make nodeparts K8S=1.37`",
            Status.SKIP,
            Status.SKIP,
        )
    ],
}


def test_every_driver_capability_has_a_row() -> None:
    rows = {r.capability for r, *_ in KIND_OUTCOMES[Kind.DRIVER_CAPABILITY]}
    assert rows == set(Capability), "give each new Capability a row in KIND_OUTCOMES"


def test_every_reason_kind_has_a_readiness_outcome() -> None:
    assert set(KIND_OUTCOMES) == set(Kind), (
        "give the new Kind a row in KIND_OUTCOMES and a rule in reason_meaning"
    )


@pytest.mark.parametrize(
    ("reason", "wording", "bridged", "other"),
    [row for rows in KIND_OUTCOMES.values() for row in rows],
    ids=lambda v: v.kind.value if isinstance(v, Reason) else "",
)
def test_a_reason_decides_the_status_by_its_fields_and_keeps_its_wording(
    reason: Reason, wording: str, bridged: Status, other: Status
) -> None:
    assert reason.message() == wording
    assert skip_meaning(CHECK_IDS["bridging"], rec(EXT, "skipped", reason))[0] == bridged
    assert skip_meaning(CHECK_IDS["gang"], rec(GANG, "skipped", reason))[0] == other
    assert Reason.from_json(reason.to_json()) == reason


def test_summary_json_keeps_reasons_and_reads_files_written_before_them(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_summary(path, summary("1.35", "nvidia-v0.4", rec(EXT, "skipped", GATE_OFF)))
    assert read_summary(path).tests[0].reasons == [GATE_OFF]
    data = json.loads(path.read_text())
    assert data["tests"][0]["reasons"] == [
        {
            "kind": "feature_gate",
            "minor": "1.35",
            "profile": "defaults",
            "gate": "DRAExtendedResource",
            "state": False,
        }
    ]
    del data["tests"][0]["reasons"]
    path.write_text(json.dumps(data))
    assert read_summary(path).tests[0].reasons == []


def test_every_suite_test_collected_today_belongs_to_a_check() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    nodeids = [line for line in done.stdout.splitlines() if line.startswith("suites/")]
    assert nodeids, done.stdout + done.stderr
    missing = uncovered(rec(n) for n in nodeids)
    assert missing == [], "give these tests a check in CHECKS (harness/readiness/catalog.py)"


def test_check_ids_are_unique_and_every_check_names_tests_and_a_remediation() -> None:
    assert len({c.id for c in CHECKS}) == len(CHECKS)
    assert all(c.tests and c.on_fail and c.title for c in CHECKS)
