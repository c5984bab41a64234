"""`dra-harness scan` on the live cluster, as a ServiceAccount that may only get/list/watch:
a migrated, healthy pool is READY; each staged failure mode is found; no secret leaks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.namespace import TEST_LABEL
from fixtures.scan import MakeKubeconfig
from harness.core.versions import REPO_ROOT
from harness.kit import builders as b
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import wait_phase, wait_unschedulable
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.serial]  # the scan reads the whole cluster


def _scan(kubeconfig: Path, out: Path) -> tuple[int, str, dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "scan", f"--kubeconfig={kubeconfig}", f"--json={out}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, done.stdout + done.stderr, report


def _other_tests_gone(kube: Kube, namespace: str) -> None:
    """The scan reads the whole cluster: wait until earlier tests' namespaces are deleted."""
    wait_for(
        lambda: [
            n["metadata"]["name"]
            for n in kube.list("v1", "Namespace", label_selector=TEST_LABEL)
            if n["metadata"]["name"] != namespace
        ],
        lambda others: others == [],
        timeout=TIMEOUTS.deletion,
        describe="other tests' namespaces deleted",
    )


def _checks(report: dict[str, object]) -> set[tuple[str, str, str]]:
    return {(f["severity"], f["check"], f["subject"]) for f in report["findings"]}  # type: ignore[attr-defined]


@pytest.mark.feature_gate("DRAExtendedResource")
@pytest.mark.bridged
@pytest.mark.fake_driver_only("cluster to itself (the scan's verdict covers every node and class)")
def test_a_healthy_migrated_pool_is_ready(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
) -> None:
    pool = gpu_pool(nodes=1, gpus=2)
    kube.create(
        b.legacy_pod("legacy", namespace, driver.extended_resource, 1, node_selector=pool.node_selector)
    )
    wait_phase(kube, namespace, "legacy", "Running")
    kubeconfig = service_account_kubeconfig(read=True)
    _other_tests_gone(kube, namespace)

    code, output, report = _scan(kubeconfig, tmp_path / "scan.json")

    assert code == 0, output
    assert output.splitlines()[-1] == "verdict: READY"
    assert {c for c in _checks(report) if c[0] != "INFO"} == set()
    token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
    assert token not in output
    assert token not in (tmp_path / "scan.json").read_text()


@pytest.mark.feature_gate("DRAExtendedResource")
def test_staged_failure_modes_are_each_found(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    service_account_kubeconfig: MakeKubeconfig,
    tmp_path: Path,
    objects: Created,
) -> None:
    both = gpu_pool(nodes=1, gpus=2, suffix="both", device_plugin=True)
    dra = gpu_pool(nodes=1, gpus=2, suffix="dra")
    tag = namespace.rsplit("-", 1)[1]
    unmapped = f"legacy.dra-harness.io/unmapped-{tag}"
    typo_class, typo_resource = f"{namespace}-typo", f"legacy.dra-harness.io/typo-{tag}"
    objects.create(
        b.device_class(
            typo_class,
            extended_resource_name=typo_resource,
            selectors=[f'device.attributes["{driver.driver}"].productName == "NVIDIA H100"'],
        )
    )
    kube.create(b.legacy_pod("unmapped", namespace, unmapped, 1, node_selector=dra.node_selector))
    wait_unschedulable(kube, namespace, "unmapped")
    _other_tests_gone(kube, namespace)

    code, output, report = _scan(service_account_kubeconfig(read=True), tmp_path / "scan.json")

    assert code == 3, output
    assert output.splitlines()[-1] == "verdict: NOT READY"
    assert {
        ("BLOCKING", "double-stack", f"node/{both.nodes[0]}"),
        ("BLOCKING", "unmapped-legacy-resource", f"pod/{namespace}/unmapped"),
        ("BLOCKING", "selector-matches-nothing", f"deviceclass/{typo_class}"),
    } <= _checks(report)


def test_a_user_without_read_access_gets_one_line_and_exit_1(
    service_account_kubeconfig: MakeKubeconfig, tmp_path: Path
) -> None:
    code, output, report = _scan(service_account_kubeconfig(read=False), tmp_path / "scan.json")

    assert code == 1
    assert output == (
        "dra-harness: the kubeconfig's user may not list Node (v1): forbidden (403); "
        "the scan needs get/list\n"
    )
    assert report == {}


def test_an_unreachable_cluster_gets_one_line_and_exit_1(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "gone.kubeconfig"
    unreachable = {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}
    kubeconfig.write_text(yaml.safe_dump(b.token_kubeconfig(unreachable, "abc")))
    code, output, _ = _scan(kubeconfig, tmp_path / "scan.json")

    assert code == 1
    assert output == "dra-harness: cannot reach the API server https://127.0.0.1:1: connection refused\n"
