"""Two DeviceClasses on one extendedResourceName (a stand-in driver installed beside the real
one): what kube-scheduler does with a pod asking for the name, and the scan's BLOCKING line.

On 1.35+ the scheduler maps the name to the newest class, and when one of them is deleted it
drops the name until the class that remains changes or the scheduler restarts
(harness.core.expectations.ambiguous_mapping_outcome): the test ends by updating the driver's class,
which is also how the session's mapping is given back (for new pods: one rejected meanwhile
stays Pending)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.scan import MakeKubeconfig, other_tests_gone, run_scan
from harness.clusters.base import Cell
from harness.core.expectations import ambiguous_mapping_outcome, deleting_a_class_drops_a_shared_mapping
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import own_reasons, scheduling_message, wait_phase, wait_unschedulable
from harness.qualify.preflight import preflight

pytestmark = [pytest.mark.serial]  # the scan reads the whole cluster; the mapping is the session's

STANDIN_DRIVER = "standin.dra-harness.io"


def _touch(kube: Kube, device_class: str, value: str | None) -> None:
    """Any update of a class makes kube-scheduler map its extendedResourceName again."""
    patch = {"metadata": {"labels": {"dra-harness.io/touched": value}}}
    kube.patch(*kinds.DEVICE_CLASS, device_class, patch)


@pytest.mark.feature_gate("DRAExtendedResource")
@pytest.mark.min_version("1.35")  # 1.34 picks a class anew each cycle, in list order
@pytest.mark.bridged
@pytest.mark.fake_driver_only("cluster to itself (a second class on the driver's extended resource)")
def test_two_classes_on_one_extended_resource_strand_pods_and_block_the_scan(
    kube: Kube,
    namespace: str,
    driver: DriverUnderTest,
    gpu_pool: MakeGpuPool,
    service_account_kubeconfig: MakeKubeconfig,
    objects: Created,
    cell: Cell,
    tmp_path: Path,
) -> None:
    resource, standin = driver.extended_resource, f"{namespace}-standin"
    pool = gpu_pool(nodes=1, gpus=2)
    objects.create(
        b.device_class(
            standin, extended_resource_name=resource, selectors=[f'device.driver == "{STANDIN_DRIVER}"']
        )
    )
    try:
        kube.create(b.legacy_pod("stranded", namespace, resource, 1, node_selector=pool.node_selector))
        pod = wait_unschedulable(kube, namespace, "stranded")
        # The newer class won: its claim selects the stand-in's devices, which this node lacks.
        assert own_reasons(scheduling_message(pod)) == {"cannot allocate all claims": 1}
        kubeconfig = service_account_kubeconfig(read=True)
        other_tests_gone(kube, namespace)

        code, output, report = run_scan(kubeconfig, tmp_path / "scan.json")

        outcome = ambiguous_mapping_outcome(cell.number, [driver.device_class, standin])
        message = (
            f"mapped by 2 DeviceClasses ({driver.device_class}, {standin}): {outcome}; "
            f"1 Pending pod(s) request it: {namespace}/stranded"
        )
        assert code == 3, output
        assert (
            f"BLOCKING {'ambiguous-mapping':<26} extendedresource/{resource}: {message}"
            in output.splitlines()
        )
        assert {
            "check": "ambiguous-mapping",
            "status": "BLOCKING",
            "why": f"1 finding(s); extendedresource/{resource}: {message}",
        } in report["checks"]  # type: ignore[operator]
        assert f"bridging: {resource}: not reliable, 2 DeviceClasses map it (ambiguous-mapping)" in output
        # qualify refuses the cluster before it creates anything, with the same words.
        _, missing = preflight(kube, driver.driver, driver.device_class)
        assert missing == [f"extendedresource/{resource}: {message}"]

        kube.delete(*kinds.DEVICE_CLASS, standin)
        kube.create(b.legacy_pod("after", namespace, resource, 1, node_selector=pool.node_selector))
        assert deleting_a_class_drops_a_shared_mapping(cell.number)
        pod = wait_unschedulable(kube, namespace, "after")
        # The driver's own class still maps the name, but the scheduler dropped it.
        assert own_reasons(scheduling_message(pod)) == {f"Insufficient {resource}": 1}
    finally:
        kube.delete(*kinds.DEVICE_CLASS, standin)
        _touch(kube, driver.device_class, namespace)
        _touch(kube, driver.device_class, None)
    # The update gave the scheduler the name back: the pod the stand-in's class stranded runs
    # (the DynamicResources plugin requeues it), and so does a new one...
    wait_phase(kube, namespace, "stranded", "Running")
    kube.create(b.legacy_pod("fresh", namespace, resource, 1, node_selector=pool.node_selector))
    wait_phase(kube, namespace, "fresh", "Running")
    # ...but not the pod NodeResourcesFit rejected meanwhile: an update that keeps the class's
    # extendedResourceName does not requeue it (noderesources/fit.go:574-576 @ v1.37.2).
    pod = kube.get(*kinds.POD, "after", namespace)
    assert own_reasons(scheduling_message(pod)) == {f"Insufficient {resource}": 1}
