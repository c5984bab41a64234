"""Publisher, faults, legacy, installer and ledger against an in-memory API (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest
from fd_fakeapi import FakeRest

from fake_driver import faults, installer, legacy
from fake_driver.deviceclasses import render_device_classes
from fake_driver.errors import InstallRefusedError, NodeNotFoundError, PublishError
from fake_driver.fleet import Fleet, fleet_from_dict
from fake_driver.kube import ApiError
from fake_driver.ledger import Ledger, Usage
from fake_driver.personalities import get_personality
from fake_driver.profiles import get_profile
from fake_driver.publisher import Publisher

Obj = dict[str, Any]


def _fleet(**pool: Any) -> Fleet:
    base = {
        "name": "p",
        "nodes": ["n1", "n2"],
        "profile": "h100-80gb-hbm3",
        "gpus": 2,
        "personality": "nvidia-v0.4",
    }
    return fleet_from_dict({"pools": [{**base, **pool}]})


@pytest.fixture
def api() -> FakeRest:
    rest = FakeRest()
    rest.add_node("n1")
    rest.add_node("n2")
    return rest


def _pool_slices(api: FakeRest, node: str) -> list[Obj]:
    return [s for s in api.slices() if s["spec"]["nodeName"] == node]


def test_publish_all_creates_owned_slices(api: FakeRest) -> None:
    report = Publisher(api, _fleet(), "1.35").publish_all()
    assert [(r.node, r.action, r.generation) for r in report.results] == [
        ("n1", "created", 1),
        ("n2", "created", 1),
    ]
    (s,) = _pool_slices(api, "n1")
    assert s["metadata"]["name"].startswith("00000-gpu.nvidia.com-n1-")
    assert s["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "uid-n1", "controller": True}
    ]
    assert s["spec"]["pool"] == {"name": "n1", "generation": 1, "resourceSliceCount": 1}


def test_unchanged_pool_keeps_generation_and_restart_makes_no_duplicates(api: FakeRest) -> None:
    Publisher(api, _fleet(), "1.35").publish_all()
    again = Publisher(api, _fleet(), "1.35").publish_all()  # a restarted publisher
    assert [r.action for r in again.results] == ["unchanged", "unchanged"]
    assert len(api.slices()) == 2
    assert {s["spec"]["pool"]["generation"] for s in api.slices()} == {1}


def test_change_bumps_generation_and_updates_in_place(api: FakeRest) -> None:
    Publisher(api, _fleet(), "1.35").publish_all()
    names = sorted(s["metadata"]["name"] for s in api.slices())
    report = Publisher(api, _fleet(gpus=4), "1.35").publish_all()
    assert [(r.action, r.generation) for r in report.results] == [("updated", 2), ("updated", 2)]
    assert sorted(s["metadata"]["name"] for s in api.slices()) == names
    assert [len(s["spec"]["devices"]) for s in _pool_slices(api, "n1")] == [4]


def test_layout_change_adds_and_removes_slices(api: FakeRest) -> None:
    Publisher(api, _fleet(), "1.35").publish_node("n1")
    Publisher(api, _fleet(mig="dynamic"), "1.35").publish_node("n1")
    assert len(_pool_slices(api, "n1")) == 3
    assert {s["spec"]["pool"]["generation"] for s in _pool_slices(api, "n1")} == {2}
    Publisher(api, _fleet(), "1.35").publish_node("n1")
    (s,) = _pool_slices(api, "n1")
    assert s["spec"]["pool"] == {"name": "n1", "generation": 3, "resourceSliceCount": 1}


def test_missing_node_is_reported_not_published(api: FakeRest) -> None:
    api.delete_node("n2")
    pub = Publisher(api, _fleet(), "1.35")
    assert pub.publish_all().missing == ("n2",)
    with pytest.raises(NodeNotFoundError, match="'n2' does not exist"):
        pub.publish_node("n2")


def test_sync_follows_node_deletion(api: FakeRest) -> None:
    pub = Publisher(api, _fleet(), "1.35")
    pub.publish_all()
    api.delete_node("n2")
    report = pub.sync()
    assert report.by_action("removed") == ("n2",)
    assert {s["spec"]["nodeName"] for s in api.slices()} == {"n1"}


def test_remove_all_on_stop(api: FakeRest) -> None:
    pub = Publisher(api, _fleet(), "1.35")
    pub.publish_all()
    api.objects["/apis/resource.k8s.io/v1/resourceslices/other"] = {
        "metadata": {"name": "other"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "elsewhere"},
    }
    assert pub.remove_all() == 2
    assert [s["metadata"]["name"] for s in api.slices()] == ["other"]


def test_rejected_slice_names_the_field_and_writes_nothing(api: FakeRest) -> None:
    def reject(method: str, path: str, body: Obj) -> Obj:
        raise ApiError(
            422, "Invalid", "spec.devices[0].attributes: Too many", ("spec.devices[0].attributes",)
        )

    api.hook = reject
    with pytest.raises(PublishError, match=r"fields: spec\.devices\[0\]\.attributes"):
        Publisher(api, _fleet(), "1.35").publish_node("n1")
    assert api.slices() == []
    assert all(dry for (m, _, dry) in api.calls if m in ("POST", "PUT"))


def test_failure_after_dry_run_leaves_no_half_published_pool(api: FakeRest) -> None:
    Publisher(api, _fleet(mig="dynamic"), "1.35").publish_node("n1")  # 3 slices

    def fail_real_writes(method: str, path: str, body: Obj) -> Obj:
        real_write = not api.calls[-1][2]
        if method == "PUT" and real_write and "sharedCounters" not in body["spec"]:
            raise ApiError(500, "InternalError", "etcd timeout")
        return body

    api.hook = fail_real_writes
    with pytest.raises(PublishError, match="etcd timeout"):
        Publisher(api, _fleet(gpus=1, mig="dynamic"), "1.35").publish_node("n1")
    assert _pool_slices(api, "n1") == []


def test_dropped_gated_field_is_an_error_naming_the_gate(api: FakeRest) -> None:
    def gate_off(method: str, path: str, body: Obj) -> Obj:
        body["spec"].pop("sharedCounters", None)
        for d in body["spec"].get("devices", ()):
            d.pop("consumesCounters", None)
        return body

    api.hook = gate_off
    with pytest.raises(
        PublishError, match=r"dropped spec\.sharedCounters \(feature gate DRAPartitionableDevices\)"
    ):
        Publisher(api, _fleet(mig="dynamic"), "1.34").publish_node("n1")
    assert api.slices() == []
    api.hook = gate_off
    Publisher(api, _fleet(mig="dynamic"), "1.34", on_dropped_fields="ignore").publish_node("n1")
    assert len(api.slices()) == 2


def test_faults_crash_drop_attribute_unhealthy_recover(api: FakeRest) -> None:
    pub = Publisher(api, _fleet(), "1.35")
    pub.publish_all()
    faults.drop_attribute(pub, ["n2"], "productName")
    n2 = _pool_slices(api, "n2")[0]["spec"]
    assert n2["pool"]["generation"] == 2
    assert all("productName" not in d["attributes"] for d in n2["devices"])
    assert all("productName" in d["attributes"] for d in _pool_slices(api, "n1")[0]["spec"]["devices"])

    faults.mark_unhealthy(pub, "n1", ["gpu-0"])
    devs = _pool_slices(api, "n1")[0]["spec"]["devices"]
    assert devs[0]["taints"] == [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]

    faults.crash(pub, ["n1"])
    assert [r.action for r in pub.sync().results] == ["crashed", "unchanged"]
    faults.crash(pub, ["n1"], wipe=True)
    assert _pool_slices(api, "n1") == []

    faults.recover(pub, ["n1", "n2"])
    assert (
        "annotations" not in api.objects["/api/v1/nodes/n1"]["metadata"]
        or not api.objects["/api/v1/nodes/n1"]["metadata"]["annotations"]
    )
    n1 = _pool_slices(api, "n1")[0]["spec"]
    assert all("taints" not in d and "productName" in d["attributes"] for d in n1["devices"])


def test_unhealthy_removal_mode_override(api: FakeRest) -> None:
    pub = Publisher(api, _fleet(personality="nvidia-v25.8"), "1.35")
    pub.publish_all()
    faults.mark_unhealthy(pub, "n1", ["gpu-1"], mode="remove")
    assert [d["name"] for d in _pool_slices(api, "n1")[0]["spec"]["devices"]] == ["gpu-0"]


def test_legacy_advertise_and_withdraw(api: FakeRest) -> None:
    fleet = _fleet(device_plugin=True)
    assert legacy.advertise(api, fleet) == {"n1": 2, "n2": 2}
    assert api.objects["/api/v1/nodes/n1"]["status"] == {
        "capacity": {"nvidia.com/gpu": "2"},
        "allocatable": {"nvidia.com/gpu": "2"},
    }
    legacy.withdraw(api, ["n1"])
    assert api.objects["/api/v1/nodes/n1"]["status"]["allocatable"] == {"nvidia.com/gpu": "0"}
    legacy.withdraw(api, ["n2"], remove=True)
    assert api.objects["/api/v1/nodes/n2"]["status"]["allocatable"] == {}
    assert legacy.advertising_nodes(api) == {}


def test_installer_refuses_gpu_mode_next_to_device_plugin(api: FakeRest) -> None:
    fleet = _fleet(device_plugin=True)
    legacy.advertise(api, fleet, ["n2"])
    p = get_personality("nvidia-v25.12")
    with pytest.raises(InstallRefusedError) as e:
        installer.install(api, p, fleet=fleet)
    msg = str(e.value)
    assert "nodes advertise nvidia.com/gpu through the device plugin: n2 (2)" in msg
    assert "gpuResourcesEnabledOverride=true" in msg
    assert "\n" not in msg
    assert api.under("/apis/resource.k8s.io/v1/deviceclasses") == []
    names = installer.install(api, p, fleet=fleet, gpu_resources_enabled_override=True)
    assert names == [
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "vfio.gpu.nvidia.com",
        "compute-domain-daemon.nvidia.com",
        "compute-domain-default-channel.nvidia.com",
    ]
    gpu = api.objects["/apis/resource.k8s.io/v1/deviceclasses/gpu.nvidia.com"]
    assert gpu["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    installer.install(api, p, fleet=fleet, gpu_resources_enabled_override=True)  # idempotent (replace)


def test_example_installer_has_no_device_plugin_guard(api: FakeRest) -> None:
    legacy.advertise(api, _fleet(device_plugin=True))
    assert installer.install(api, get_personality("example-v0.4")) == ["gpu.example.com"]


@pytest.mark.parametrize(
    ("personality", "ext"),
    [
        ("nvidia-v25.3", None),
        ("nvidia-v25.8", None),
        ("nvidia-v25.12", "nvidia.com/gpu"),
        ("nvidia-v0.4", "nvidia.com/gpu"),
    ],
)
def test_gpu_class_extended_resource_only_from_v25_12(personality: str, ext: str | None) -> None:
    classes = {c["metadata"]["name"]: c for c in render_device_classes(get_personality(personality))}
    gpu = classes["gpu.nvidia.com"]["spec"]
    assert gpu.get("extendedResourceName") == ext
    assert gpu["selectors"] == [
        {
            "cel": {
                "expression": "device.driver == 'gpu.nvidia.com' && "
                "device.attributes['gpu.nvidia.com'].type == 'gpu'"
            }
        }
    ]
    assert "extendedResourceName" not in classes["mig.nvidia.com"]["spec"]
    assert ("vfio.gpu.nvidia.com" in classes) == (ext is not None)


def test_per_mig_profile_classes() -> None:
    classes = render_device_classes(
        get_personality("nvidia-v0.4"),
        compute_domains=False,
        mig_profile_classes=get_profile("h100-80gb-hbm3"),
    )
    by_name = {c["metadata"]["name"]: c["spec"] for c in classes}
    spec = by_name["mig-1g-10gb.gpu.nvidia.com"]
    assert spec["extendedResourceName"] == "nvidia.com/mig-1g.10gb"
    assert spec["selectors"][0]["cel"]["expression"].endswith(
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
    )
    assert by_name["mig-1g-10gb-me.gpu.nvidia.com"]["extendedResourceName"] == "nvidia.com/mig-1g.10gb-me"
    assert len(classes) == 3 + 7  # gpu, mig, vfio + one per H100 MIG profile


def test_ledger_double_advertising_and_over_promise() -> None:
    fleet = fleet_from_dict(
        {
            "pools": [
                {
                    "name": "a",
                    "nodes": ["n1"],
                    "profile": "h100-80gb-hbm3",
                    "gpus": 2,
                    "device_plugin": True,
                    "mig": "dynamic",
                },
                {"name": "b", "nodes": ["n2"], "profile": "l4", "gpus": 2},
            ]
        }
    )
    led = Ledger.for_fleet(fleet, (1, 35))
    units = led.legacy_units("n1")
    assert units == tuple(g.uuid for g in led.gpus("n1"))
    assert led.double_advertised() == {"n1": units}
    assert led.legacy_units("n2") == ()

    mig = led.dra("gpu.nvidia.com", "n1", "gpu-0-mig-1g10gb-19-0")
    other_mig = led.dra("gpu.nvidia.com", "n1", "gpu-0-mig-1g10gb-19-1")
    unit0 = led.legacy("n1", 0)
    conflicts = Ledger.conflicts([Usage("pod-a", mig), Usage("pod-b", other_mig), Usage("pod-legacy", unit0)])
    assert [(c.gpu_uuid, c.owners) for c in conflicts] == [(units[0], ("pod-a", "pod-b", "pod-legacy"))]
    assert Ledger.conflicts([Usage("pod-a", mig), Usage("pod-b", other_mig)]) == []
    assert led.overcommit("n1", legacy_in_use=2, dra_shares=[mig]) == 1
    assert led.overcommit("n1", legacy_in_use=1, dra_shares=[mig]) == 0
