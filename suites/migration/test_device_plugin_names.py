"""Device-plugin names with no DeviceClass (issue 37 item 2): pods ask for what the device
plugin's mixed MIG strategy advertises, `nvidia.com/mig-1g.10gb`, not only `nvidia.com/gpu`.
After the move such a pod stays Pending ("Insufficient nvidia.com/mig-1g.10gb") until a
DeviceClass sets that extendedResourceName; the scan names the pods before. NVIDIA's chart
(dra-driver-nvidia-gpu@v0.4.1 deployments/helm/dra-driver-nvidia-gpu/templates/
deviceclass-mig.yaml) renders one `mig.nvidia.com` class without a name; the class per MIG
profile is what dra-driver-nvidia-gpu#939 proposes and demo/specs/extended-resources/
mig-1g-12gb.yaml @ v0.4.1 shows (fake_driver.rendering.deviceclasses mig_profile_classes renders it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_driver.facts.personalities import get_personality
from fake_driver.facts.profiles import get_profile
from fake_driver.rendering.deviceclasses import render_device_classes
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from fixtures.nodes import MakePool
from fixtures.scan import MakeKubeconfig, other_tests_gone, run_scan
from harness.clusters.base import Cell
from harness.clusters.nodes import POOL_LABEL
from harness.core.expectations import class_add_requeues_fit_rejected_pod
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.migration import detect_unmapped_legacy_requests
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created
from harness.kit.pods import own_reasons, scheduling_message, wait_phase, wait_unschedulable

# The scan reads the whole cluster, and an extendedResourceName is cluster-wide.
pytestmark = [pytest.mark.serial, pytest.mark.feature_gate("DRAExtendedResource")]

MIG = "nvidia.com/mig-1g.10gb"
PROFILE = "h100-80gb-hbm3"
LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]  # gpu-0: two 1g.10gb devices, slots 2 and 3
ONE_G = {"gpu-0-mig-1g10gb-19-2", "gpu-0-mig-1g10gb-19-3"}  # their names (nvidia-v25.12)


def _mig_profile_class(personality: str) -> Obj:
    """The class for 1g.10gb as dra-driver-nvidia-gpu#939 proposes (one per profile)."""
    classes = render_device_classes(get_personality(personality), mig_profile_classes=get_profile(PROFILE))
    [mig] = [c for c in classes if c["spec"].get("extendedResourceName") == MIG]
    return mig


def test_a_mig_named_pod_is_pending_without_its_class_and_gets_that_profile_with_it(
    kube: Kube,
    namespace: str,
    gpu_fleet: MakeGpuFleet,
    node_pool: MakePool,
    service_account_kubeconfig: MakeKubeconfig,
    objects: Created,
    cell: Cell,
    tmp_path: Path,
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(profile=PROFILE, gpus=1, mig={"mode": "static", "layout": LAYOUT}))
    [node] = fleet.node_names
    legacy = node_pool(1, suffix="dp", extended_resources={MIG: "2"})  # mixed strategy's name
    kube.create(b.legacy_pod("on-legacy", namespace, MIG, 1, node_selector={POOL_LABEL: legacy.name}))
    wait_phase(kube, namespace, "on-legacy", "Running")
    kube.create(b.legacy_pod("migrated", namespace, MIG, 1, node_selector=fleet.node_selector))
    pod = wait_unschedulable(kube, namespace, "migrated")
    assert own_reasons(scheduling_message(pod)) == {f"Insufficient {MIG}": 1}
    other_tests_gone(kube, namespace)

    code, output, report = run_scan(service_account_kubeconfig(read=True), tmp_path / "scan.json")

    message = (
        "no DeviceClass maps it and only a device plugin serves it (on 1 node(s)): they stay Pending "
        f"once it leaves their pool; 2 pod(s) request it: {namespace}/migrated (not scheduled), "
        f"{namespace}/on-legacy (pool {legacy.name})"
    )
    assert code == 3, output
    line = f"BLOCKING {'unmapped-legacy-resource':<26} extendedresource/{MIG}: {message}"
    assert line in output.splitlines()
    assert {
        "check": "unmapped-legacy-resource",
        "status": "BLOCKING",
        "why": f"1 finding(s); extendedresource/{MIG}: {message}",
    } in report["checks"]  # type: ignore[operator]

    mig_class = objects.create(_mig_profile_class(fleet.fleet.pools[0].personality.name))
    class_name = mig_class["metadata"]["name"]
    kube.create(b.legacy_pod("after-class", namespace, MIG, 1, node_selector=fleet.node_selector))
    waiting = ["after-class"] + (["migrated"] if class_add_requeues_fit_rejected_pod(cell.number) else [])

    devices = set()
    for name in waiting:
        pod = wait_phase(kube, namespace, name, "Running")
        [claim] = claims_of(kube, namespace, name)
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == class_name
        [device] = allocated_devices(claim)
        assert (device["pool"], device["device"] in ONE_G) == (node, True)
        assert pod["status"]["extendedResourceClaimStatus"]["requestMappings"][0]["resourceName"] == MIG
        devices.add(device["device"])
    assert len(devices) == len(waiting)  # each its own 1g.10gb device
    assert detect_unmapped_legacy_requests(kube.list(*kinds.POD, namespace), [mig_class], []) == []
