"""The fake driver's Publisher against the real API server: names, ownership, generations,
restart safety, removal, and what the real garbage collector does with a deleted node."""

from __future__ import annotations

import pytest

from fake_driver.api import apilimits
from fake_driver.api.kube import ApiError, KubeRest
from fake_driver.core.errors import NodeNotFoundError, PublishError
from fake_driver.publishing.publisher import Publisher
from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet, fleet_of
from harness.clusters.base import Cell
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import device_names, node_slices, pools
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.fake_driver_only("own slices, faults and installer")]

V04 = GpuPoolSpec(gpus=2, personality="nvidia-v0.4", nodes=2, suffix="p")


def test_publish_all_creates_one_owned_slice_per_node(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    fleet = gpu_fleet(V04, classes=False)
    n0, n1 = fleet.node_names

    assert [(r.node, r.action, r.generation, r.slices) for r in fleet.report.results] == [
        (n0, "created", 1, 1),
        (n1, "created", 1, 1),
    ]
    [s] = node_slices(kube, n0)
    # The server cuts generateName to 58 characters before adding 5 random ones.
    assert s["metadata"]["name"][:-5] == f"00000-gpu.nvidia.com-{n0}-"[:58]
    assert len(s["metadata"]["name"]) == min(len(f"00000-gpu.nvidia.com-{n0}-"), 58) + 5
    assert s["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "name": n0,
            "uid": kube.get(*kinds.NODE, n0)["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert s["spec"]["pool"] == {"name": n0, "generation": 1, "resourceSliceCount": 1}
    assert device_names([s]) == ["gpu-0", "gpu-1"]


def test_restarted_publisher_writes_nothing_and_makes_no_duplicates(
    kube: Kube, gpu_fleet: MakeGpuFleet
) -> None:
    fleet = gpu_fleet(V04, classes=False)
    before = {n: node_slices(kube, n) for n in fleet.node_names}

    again = fleet.publisher_for().publish_all()  # a new process: no memory of the first

    assert [r.action for r in again.results] == ["unchanged", "unchanged"]
    after = {n: node_slices(kube, n) for n in fleet.node_names}
    assert {n: [s["metadata"]["resourceVersion"] for s in ss] for n, ss in after.items()} == {
        n: [s["metadata"]["resourceVersion"] for s in ss] for n, ss in before.items()
    }
    assert [pools(ss) for ss in after.values()] == [
        [{"name": n, "generation": 1, "resourceSliceCount": 1}] for n in fleet.node_names
    ]


def test_change_bumps_generation_and_updates_in_place(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    fleet = gpu_fleet(V04, classes=False)
    n0, _ = fleet.node_names
    [old] = node_slices(kube, n0)

    report = fleet.publisher_for(
        fleet_of([GpuPoolSpec(gpus=4, personality="nvidia-v0.4")], [fleet.node_names])
    ).publish_all()

    assert [(r.action, r.generation) for r in report.results] == [("updated", 2), ("updated", 2)]
    [new] = node_slices(kube, n0)
    assert new["metadata"]["name"] == old["metadata"]["name"]
    assert new["metadata"]["uid"] == old["metadata"]["uid"]
    assert new["spec"]["pool"] == {"name": n0, "generation": 2, "resourceSliceCount": 1}
    assert device_names([new]) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


@pytest.mark.feature_gate("DRAPartitionableDevices")  # DynamicMIG layouts need shared counters
def test_layout_change_adds_and_removes_slices(kube: Kube, gpu_fleet: MakeGpuFleet, cell: Cell) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, personality="nvidia-v0.4", suffix="p"), classes=False)
    [node] = fleet.node_names
    dynamic = fleet_of([GpuPoolSpec(gpus=2, personality="nvidia-v0.4", mig="dynamic")], [[node]])

    fleet.publisher_for(dynamic).publish_node(node)

    # From 1.35 a counters slice then one devices slice per GPU; before, one slice per GPU.
    count = 3 if cell.number >= apilimits.SPLIT_COUNTERS_SINCE else 2
    several = node_slices(kube, node)
    assert pools(several) == [{"name": node, "generation": 2, "resourceSliceCount": count}] * count
    assert [s["spec"]["sharedCounters"][0]["name"] for s in several[:1]] == ["gpu-0-counter-set"]
    assert len(device_names(several)) == 2 * 26  # per H100: the full GPU + 25 MIG placements

    fleet.publisher_for().publish_node(node)

    [one] = node_slices(kube, node)
    assert one["spec"]["pool"] == {"name": node, "generation": 3, "resourceSliceCount": 1}


def test_missing_node_is_reported_not_published(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, suffix="p"), classes=False, publish=False)
    [node] = fleet.node_names
    ghost = f"{node}-ghost"
    pub = fleet.publisher_for(fleet_of([GpuPoolSpec(gpus=2)], [[node, ghost]]))

    assert pub.publish_all().missing == (ghost,)
    with pytest.raises(NodeNotFoundError, match=f"'{ghost}' does not exist"):
        pub.publish_node(ghost)
    assert node_slices(kube, ghost) == []
    assert len(node_slices(kube, node)) == 1


def test_deleted_node_takes_its_slices_with_it(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    fleet = gpu_fleet(V04, classes=False)
    n0, n1 = fleet.node_names

    kube.delete(*kinds.NODE, n1)

    wait_for(
        lambda: node_slices(kube, n1),
        lambda slices: slices == [],
        timeout=TIMEOUTS.deletion,
        describe=f"garbage collector deleting the slices owned by Node {n1}",
    )
    assert len(node_slices(kube, n0)) == 1


def test_sync_removes_slices_of_a_node_deleted_without_cascade(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    fleet = gpu_fleet(V04, classes=False)
    n0, n1 = fleet.node_names
    # What `delete --cascade=orphan` leaves, made directly: the garbage collector orphans only
    # the dependents its graph has seen and deletes one it sees later, still owned by the gone
    # node, as dangling (pkg/controller/garbagecollector/garbagecollector.go orphanDependents,
    # attemptToDeleteItem @ v1.37.2); seen under load in a parallel run.
    for s in node_slices(kube, n1):
        unowned = {"metadata": {"ownerReferences": None}}
        kube.patch(*kinds.RESOURCE_SLICE, s["metadata"]["name"], unowned)
    kube.delete(*kinds.NODE, n1)
    wait_for(
        lambda: [n["metadata"]["name"] for n in kube.list(*kinds.NODE, field_selector=f"metadata.name={n1}")],
        lambda names: names == [],
        timeout=TIMEOUTS.deletion,
        describe=f"Node {n1} deleted (its slices orphaned)",
    )
    [orphan] = node_slices(kube, n1)
    assert "ownerReferences" not in orphan["metadata"]

    report = fleet.publisher.sync()

    assert report.by_action("removed") == (n1,)
    assert report.by_action("unchanged") == (n0,)
    assert node_slices(kube, n1) == []


def test_remove_all_on_stop_leaves_other_nodes_alone(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, objects: Created
) -> None:
    fleet = gpu_fleet(V04, classes=False)
    other = f"{namespace}-elsewhere"
    objects.create(
        b.resource_slice(other, driver="gpu.nvidia.com", node_name=other, devices=[b.device("gpu-0")])
    )
    assert fleet.publisher.remove_all() == 2

    assert [node_slices(kube, n) for n in fleet.node_names] == [[], []]
    assert [s["metadata"]["name"] for s in node_slices(kube, other)] == [other]


@pytest.mark.min_version("1.35")  # a 1.34 server accepts the 1.34 layout
@pytest.mark.feature_gate("DRAPartitionableDevices")  # DynamicMIG layouts need shared counters
def test_rejected_slice_names_the_field_and_writes_nothing(kube: Kube, gpu_fleet: MakeGpuFleet) -> None:
    # Rendered for 1.34 (counter sets and devices in one slice), sent to a newer server.
    fleet = gpu_fleet(
        GpuPoolSpec(gpus=1, personality="nvidia-v25.12", suffix="p"), classes=False, publish=False
    )
    [node] = fleet.node_names
    dynamic = fleet_of([GpuPoolSpec(gpus=1, mig="dynamic")], [[node]])

    with pytest.raises(PublishError) as err:
        Publisher(kube.api_client, dynamic, "1.34").publish_node(node)

    assert str(err.value).startswith(f"gpu.nvidia.com slice for node {node} rejected (fields: spec")
    assert node_slices(kube, node) == []


@pytest.mark.min_version("1.35")
@pytest.mark.feature_gate("DRAPartitionableDevices")  # DynamicMIG layouts need shared counters
def test_failed_write_leaves_no_half_published_pool(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, objects: Created
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=2, suffix="p"), classes=False, publish=False)
    [node] = fleet.node_names
    # A real admission denial of the third slice (GPU 1's devices), after two were written.
    policy = f"{namespace}-deny-gpu-1"
    expression = "!has(object.spec.devices) || !object.spec.devices.exists(d, d.name == 'gpu-1')"
    admission = "admissionregistration.k8s.io/v1"
    objects.create(
        {
            "apiVersion": admission,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": policy},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["resource.k8s.io"],
                            "apiVersions": ["*"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["resourceslices"],
                        }
                    ]
                },
                "matchConditions": [{"name": "this-node", "expression": f"object.spec.nodeName == '{node}'"}],
                "validations": [{"expression": expression, "message": "write of gpu-1 failed"}],
            },
        }
    )
    objects.create(
        {
            "apiVersion": admission,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": policy},
            "spec": {"policyName": policy, "validationActions": ["Deny"]},
        }
    )
    _wait_policy_active(kube, node)
    dynamic = fleet_of([GpuPoolSpec(gpus=2, mig="dynamic")], [[node]])

    with pytest.raises(PublishError, match="write of gpu-1 failed"):
        fleet.publisher_for(dynamic, dry_run_first=False).publish_node(node)

    assert node_slices(kube, node) == []


def _wait_policy_active(kube: Kube, node: str) -> None:
    rest = KubeRest(kube.api_client)
    probe = b.resource_slice(
        f"{node}-probe", driver="gpu.nvidia.com", node_name=node, devices=[b.device("gpu-1")]
    )

    def denied() -> bool:
        try:
            rest.create(f"/apis/{kinds.RESOURCE_V1}/resourceslices", probe, dry_run=True)
        except ApiError:
            return True
        return False

    wait_for(
        denied, timeout=TIMEOUTS.api_object, describe="ValidatingAdmissionPolicy in force (dry run denied)"
    )


@pytest.mark.parametrize(
    ("gate", "mig"),
    [
        pytest.param(
            "DRAPartitionableDevices",
            "dynamic",
            marks=pytest.mark.feature_gate("DRAPartitionableDevices", enabled=False),
        )
    ],
)
def test_field_dropped_by_a_disabled_gate_is_an_error_naming_the_gate(
    kube: Kube, cell: Cell, gpu_fleet: MakeGpuFleet, gate: str, mig: str
) -> None:
    fleet = gpu_fleet(GpuPoolSpec(gpus=1, suffix="p"), classes=False, publish=False)
    [node] = fleet.node_names
    dynamic = fleet_of([GpuPoolSpec(gpus=1, mig=mig)], [[node]])

    with pytest.raises(PublishError, match=rf"dropped spec\.sharedCounters \(feature gate {gate}\)"):
        fleet.publisher_for(dynamic).publish_node(node)

    assert node_slices(kube, node) == []
