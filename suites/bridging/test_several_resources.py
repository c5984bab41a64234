"""Three containers with several DRA-backed extended resources each (KEP-5004): the scheduler
makes one claim with one request per (container, resource) and maps each back in the pod's
status. Upstream counterpart: kubernetes test/e2e/dra extended-resource cases with several
containers and resources. The resources are two test-unique classes' implicit names
(`deviceclass.resource.kubernetes.io/<class>`), recognized from 1.35 (harness.core.expectations)."""

from __future__ import annotations

import pytest

from fixtures.driver import DriverUnderTest, MakeGpuPool
from fixtures.requirements import skip
from harness.clusters.base import Cell
from harness.core.expectations import implicit_names_recognized
from harness.core.requirements import Kind, Reason
from harness.kit import builders as b
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.pods import wait_phase

pytestmark = [pytest.mark.feature_gate("DRAExtendedResource")]


def test_three_containers_with_several_resources_get_one_request_per_container_and_resource(
    kube: Kube, namespace: str, driver: DriverUnderTest, gpu_pool: MakeGpuPool, objects: Created, cell: Cell
) -> None:
    if not implicit_names_recognized(cell.number):
        # 1.34: the implicit names get no device at all (test_extended_resource.py asserts that).
        skip(Reason(Kind.VERSION, minor=cell.minor, profile=cell.profile, need="1.35"))
    pool = gpu_pool(nodes=1, gpus=8)
    classes = {k: f"{namespace}-{k}" for k in ("a", "b")}
    for name in classes.values():
        objects.create(b.device_class(name, selectors=[f'device.driver == "{driver.driver}"']))
    res = {k: f"deviceclass.resource.kubernetes.io/{c}" for k, c in classes.items()}
    wants = {"c0": {"a": "1", "b": "2"}, "c1": {"a": "1"}, "c2": {"a": "1", "b": "1"}}
    containers = [b.container(c, limits={res[k]: n for k, n in w.items()}) for c, w in wants.items()]
    kube.create(b.pod("several", namespace, containers=containers, node_selector=pool.node_selector))

    pod = wait_phase(kube, namespace, "several", "Running")

    [claim] = claims_of(kube, namespace, "several")
    # container-<i>-request-<j>: j is the resource's place among the container's sorted names.
    expected = [
        (f"container-{i}-request-{j}", k, n)
        for i, w in enumerate(wants.values())
        for j, (k, n) in enumerate(sorted(w.items()))
    ]
    assert [
        (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
        for r in claim["spec"]["devices"]["requests"]
    ] == [(name, classes[k], int(n)) for name, k, n in expected]
    # Mappings go resource by resource (sorted names), then container by container:
    # extendeddynamicresources.go createDeviceRequests @ v1.37.2 loops over resourceNames first.
    by_resource = sorted(
        zip([c for c, w in wants.items() for _ in w], expected, strict=True), key=lambda m: m[1][1]
    )
    assert pod["status"]["extendedResourceClaimStatus"]["requestMappings"] == [
        {"containerName": c, "resourceName": res[k], "requestName": name} for c, (name, k, _) in by_resource
    ]
    assert len({r["device"] for r in allocated_devices(claim)}) == 6
