"""NVIDIA's real DRA driver (gpu-kubelet-plugin v0.4.1) with static MIG on a fake driver root
(issue 35 item 2): one real node with 2 A100 80GB GPUs, GPU 0 split [3g.40gb, 2g.20gb, 1g.10gb,
1g.10gb] by the NVML stand-in (nvmlstub/mig.go) from the fake driver's profile. The plugin
publishes GPU 1 whole and GPU 0's four MIG devices (names, profile, parentUUID, memory and
engine capacities, memorySlice<i> capacities; static MIG in v0.4.1 publishes no counters:
cmd/gpu-kubelet-plugin/driver.go publishResources, deviceinfo.go MigDeviceInfo.GetDevice); a
pod claiming one through the chart's mig.nvidia.com class runs and its container gets the
parent's /dev/nvidia0 and the MIG device's two capability nodes (cdi.go GetDevNodesForMigDevice);
the nvidia-v0.4 personality renders the same slice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fake_driver.apilimits import parse_minor
from fake_driver.fleet import fleet_from_dict
from fake_driver.profiles import MIB, get_profile, gpu_uuid
from fake_driver.slices import render_node
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.nvidiamig import caps_minors, mig_device_uuid, parse_mig
from harness.clusters.realnodes.nvidiaroot import nvml_calls
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.errors import HarnessError
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube, parse_quantity
from harness.kit.nodepods import container_output, view_container
from harness.kit.pods import wait_phase
from tests.e2e.test_nvidia_real_driver import DRIVER, PERSONALITY, _allowed
from tests.fake_driver.slicediff import slice_differences
from tests.fake_driver.test_fd_real_fidelity import published
from tests.realdriver import real_driver_missing

pytestmark = [pytest.mark.own_target("test-nvidia"), pytest.mark.real_node]

PROFILE = "a100-80gb-pcie"
GPUS = 2
MIG = {"mode": "static", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "gpus": [0]}
POOL = RealPoolSpec("mig", count=1, gpus=GPUS, profile=PROFILE, driver=DRIVER, mig=MIG)
NODE = "mig-0"
# gpu-<parent minor>-mig-<profile without dots>-<GI profile id>-<placement start> (mig.go
# ToCanonicalName), as fake_driver.profiles place_layout places the layout.
MIG_DEVICES = {
    "gpu-0-mig-2g20gb-14-0": ("2g.20gb", 0, 2),
    "gpu-0-mig-1g10gb-19-2": ("1g.10gb", 2, 1),
    "gpu-0-mig-1g10gb-19-3": ("1g.10gb", 3, 1),
    "gpu-0-mig-3g40gb-9-4": ("3g.40gb", 4, 4),
}


@dataclass
class MigCluster:
    cluster: LocalCluster
    kube: Kube
    root: Path

    @property
    def image(self) -> str:
        assert self.cluster.real is not None
        return next(iter(self.cluster.real.parts.values())).busybox_ref


@pytest.fixture(scope="module")
def mig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MigCluster]:
    why = real_driver_missing(DRIVER)
    if why:
        pytest.skip(why)
    cluster = LocalCluster(profile="dra-all", run_dir=tmp_path_factory.mktemp("nvmig"), real_pools=[POOL])
    try:
        cluster.start()
    except HarnessError as err:  # start() has undone what it started
        pytest.fail(f"real nodes: {err}", pytrace=False)
    assert cluster.real is not None
    root = cluster.real.nodes[NODE].driver_root
    assert root is not None
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    try:
        yield MigCluster(cluster, kube, root)
    finally:
        kube.close()
        cluster.stop()
    assert not root.exists()


def _devices(env: MigCluster) -> dict[str, dict[str, Any]]:
    slices = published(env.kube, "gpu.nvidia.com", NODE)
    return {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}


def test_the_plugin_publishes_the_layouts_mig_devices_and_the_other_gpu_whole(mig: MigCluster) -> None:
    hw, devices = get_profile(PROFILE), _devices(mig)
    assert sorted(devices) == sorted([*MIG_DEVICES, "gpu-1"])
    placements = {p.start: p for p in parse_mig(PROFILE, GPUS, MIG, NODE).placements}
    for name, (profile, start, size) in MIG_DEVICES.items():
        m, attrs, capacity = hw.mig_profile(profile), devices[name]["attributes"], devices[name]["capacity"]
        assert (attrs["type"], attrs["profile"], attrs["parentUUID"], attrs["uuid"]) == (
            {"string": "mig"},
            {"string": profile},
            {"string": gpu_uuid(NODE, 0)},
            {"string": mig_device_uuid(NODE, 0, placements[start])},
        )
        assert parse_quantity(capacity["memory"]["value"]) == m.memory_mib * MIB
        assert parse_quantity(capacity["multiprocessors"]["value"]) == m.multiprocessors
        slices = sorted(k for k in capacity if k.startswith("memorySlice"))
        assert slices == [f"memorySlice{s}" for s in range(start, start + size)]
        assert "consumesCounters" not in devices[name]  # static MIG: no counters in v0.4.1
    assert devices["gpu-1"]["attributes"]["uuid"] == {"string": gpu_uuid(NODE, 1)}
    calls = set(nvml_calls(mig.root))
    assert {"nvmlDeviceGetMigMode", "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlGpuInstanceGetInfo"} <= calls


def test_a_mig_claim_container_gets_the_parent_and_the_mig_devices_capability_nodes(mig: MigCluster) -> None:
    kube, ns = mig.kube, "nv-mig"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        kube.create(b.claim_template("one", ns, [b.exact_request("mig", "mig.nvidia.com")]))
        shows = "ls /dev/nvidia-caps; ls -d /dev/nvidia[0-9]*; env | grep ^NVIDIA_VISIBLE_DEVICES= || true"
        command = ["sh", "-c", shows]
        container = view_container("main", mig.image, command, claims=["mig"])
        pod = b.pod("p", ns, containers=[container], claim_templates={"mig": "one"})
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE}
        kube.create(pod)
        wait_phase(kube, ns, "p", "Running")
        [claim] = claims_of(kube, ns, "p")
        [result] = allocated_devices(claim)
        assert (result["driver"], result["pool"], result["device"] in MIG_DEVICES) == (
            "gpu.nvidia.com",
            NODE,
            True,
        ), result
        gi = 1 + sorted(MIG_DEVICES, key=lambda n: MIG_DEVICES[n][1]).index(result["device"])
        lines = container_output(kube, ns, "p", "main").split()
        assert sorted(lines) == sorted(
            [
                *(f"nvidia-cap{n}" for n in caps_minors(0, gi, 0)),
                "/dev/nvidia0",
                "NVIDIA_VISIBLE_DEVICES=void",
            ]
        ), lines
    finally:
        kube.delete(*kinds.NAMESPACE, ns)


def test_the_nvidia_personality_renders_what_the_real_plugin_publishes_with_mig(mig: MigCluster) -> None:
    real = published(mig.kube, "gpu.nvidia.com", NODE)
    pool = {"name": "mig", "nodes": [NODE], "profile": PROFILE, "gpus": GPUS, "personality": PERSONALITY}
    fleet = fleet_from_dict({"pools": [pool | {"mig": MIG}]})
    uid = mig.kube.get(*kinds.NODE, NODE)["metadata"]["uid"]
    fake = list(render_node(fleet.node(NODE), parse_minor(mig.cluster.minor.name), node_uid=uid).slices)
    unexplained = [str(d) for d in slice_differences(real, fake) if _allowed(d) is None]
    assert not unexplained, "differences from the real plugin:\n" + "\n".join(unexplained)
