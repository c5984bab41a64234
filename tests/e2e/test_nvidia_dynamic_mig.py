"""NVIDIA's real DRA driver with its DynamicMIG gate, without a GPU: gpu-kubelet-plugin v0.4.1
and v0.5.0 (versions.toml [drivers.nvidia], one cluster each, --feature-gates=DynamicMIG=true
because the pool's MIG is dynamic) on one real node with 2 A100 80GB PCIe, MIG mode on GPU 0
(Ampere needs a reset to toggle it, so GPU 0 offers only MIG devices and GPU 1, MIG off, only
itself: cmd/gpu-kubelet-plugin/nvlib.go isDynamicMIGCapable). The project's NVML stand-in
creates and destroys the MIG devices the plugin asks for (nvmlstub/migcreate.go) and their
capability files and nodes below the node's fake driver root.

The plugin publishes every profile x placement of GPU 0 as a device consuming counters of
GPU 0's counter set, field by field as the release's personality (nvidia-v0.4, nvidia-v0.5)
renders the pool; a pod
claiming one 1g.10gb device through the mig.nvidia.com class runs with the parent's
/dev/nvidia0 and exactly that MIG device's two capability nodes, created on Prepare (one GPU
instance, one compute instance in the stand-in's call log) and destroyed on Unprepare; nothing
of the root, device nodes included, outlives the cluster.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_driver.facts.personalities import get_personality
from fake_driver.facts.profiles import get_profile, gpu_uuid
from fake_driver.rendering.nvidia_devices import mig_device_name
from harness.clusters.realnodes.nvidiamig import NVIDIA_CAPS_MAJOR, caps_minors, live_capabilities
from harness.clusters.realnodes.nvidiaroot import nvml_calls
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices
from harness.kit.nodepods import REAL_KUBELET_GRACE_SECONDS, container_output, view_container
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for
from tests.fake_driver.slicediff import slice_differences
from tests.fake_driver.test_fd_real_fidelity import published
from tests.support.nvidiareal import (
    ALLOWED,
    DRIVER,
    PERSONALITY,
    VERSIONS,
    allowed,
    for_version,
    nvidia_cluster,
    personality_of,
    published_devices,
    rendered,
)
from tests.support.realdriver import RealDriverCluster, real_driver_missing

pytestmark = [pytest.mark.real_node, pytest.mark.real_plugin_comparison]

A100 = "a100-80gb-pcie"
POOL = RealPoolSpec("dyn", count=1, gpus=2, profile=A100, driver=DRIVER, mig={"mode": "dynamic", "gpus": [0]})
NODE = "dyn-0"
COUNTER_SET = "gpu-0-counter-set"
[LABEL] = ALLOWED  # the fake's ownership label: the one difference kept on purpose
# What the plugin changes through NVML (nvmlstub/migcreate.go; logged on every call).
CHANGING = (
    "nvmlDeviceSetMigMode",
    "nvmlDeviceCreateGpuInstanceWithPlacement",
    "nvmlGpuInstanceCreateComputeInstance",
    "nvmlComputeInstanceDestroy",
    "nvmlGpuInstanceDestroy",
)


@pytest.fixture(scope="module", params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory, version: str) -> Iterator[RealDriverCluster]:
    if why := real_driver_missing(f"nvidia@{version}"):
        pytest.skip(why)
    pools = for_version([POOL], version)
    with nvidia_cluster(tmp_path_factory.mktemp(f"nvidia-dynamic-mig-{version}"), pools) as env:
        yield env


def _changes(env: RealDriverCluster) -> dict[str, int]:
    counts = Counter(nvml_calls(env.roots[NODE]))
    return {name: counts[name] for name in CHANGING}


def _mig_spans() -> dict[str, range]:
    """Every MIG device the plugin offers on GPU 0 (each profile at each placement): its name
    (mig.go ToCanonicalName) -> the memory slices it takes."""
    hw, p = get_profile(A100), get_personality(PERSONALITY)
    return {
        mig_device_name(p, 0, m, start): range(start, start + m.placement_size)
        for m in hw.mig_profiles
        for start in m.placement_starts
    }


def test_the_plugin_publishes_gpu0s_mig_devices_consuming_its_counters_and_gpu1_whole(
    dynamic: RealDriverCluster,
) -> None:
    devices, spans = published_devices(dynamic, NODE), _mig_spans()
    assert sorted(devices) == sorted([*spans, "gpu-1"])
    assert len(spans) == 25, sorted(spans)  # 7 profiles: 7 + 7 + 4 + 3 + 2 + 1 + 1 placements
    for name, span in spans.items():
        [consumed] = devices[name]["consumesCounters"]
        slices = sorted(c for c in consumed["counters"] if c.startswith("memory-slice-"))
        assert (consumed["counterSet"], slices) == (COUNTER_SET, sorted(f"memory-slice-{s}" for s in span)), (
            name
        )
        assert devices[name]["attributes"]["parentUUID"] == {"string": gpu_uuid(NODE, 0)}
    assert "consumesCounters" not in devices["gpu-1"]
    assert devices["gpu-1"]["attributes"]["uuid"] == {"string": gpu_uuid(NODE, 1)}
    [counter_set] = [
        c
        for s in published(dynamic.kube, "gpu.nvidia.com", NODE)
        for c in s["spec"].get("sharedCounters", [])
    ]
    memory = sorted(c for c in counter_set["counters"] if c.startswith("memory-slice-"))
    assert (counter_set["name"], memory) == (COUNTER_SET, sorted(f"memory-slice-{s}" for s in range(8)))
    # Nothing is created before a claim asks: MIG mode is already on (Ampere), no instance yet.
    assert _changes(dynamic) == dict.fromkeys(CHANGING, 0)
    assert live_capabilities(dynamic.roots[NODE]) == ([], {})
    assert {
        "nvmlInitWithFlags",
        "nvmlDeviceGetVirtualizationMode",
        "nvmlDeviceGetGpuInstancePossiblePlacements_v2",
    } <= set(nvml_calls(dynamic.roots[NODE]))


def test_the_nvidia_personality_renders_what_the_plugin_publishes_in_dynamic_mode(
    dynamic: RealDriverCluster, version: str
) -> None:
    real = published(dynamic.kube, "gpu.nvidia.com", NODE)
    diffs = slice_differences(real, rendered(dynamic, POOL, personality_of(version)))
    unexplained = [str(d) for d in diffs if allowed(d) is None]
    assert not unexplained, f"{len(unexplained)} differences from the real plugin:\n" + "\n".join(unexplained)
    # Split slices (Kubernetes 1.35+: driver.go generateSplitResourceSlices): GPU 0's counter
    # set, its 25 MIG devices, GPU 1; only the fake's ownership label differs, on each.
    assert [len(s["spec"].get("devices", [])) for s in real] == [0, 25, 1]
    assert [(d.path[0], allowed(d)) for d in diffs] == [(f"slice{k}", LABEL) for k in range(3)], diffs


def test_a_mig_claim_creates_its_mig_device_and_deleting_it_destroys_it(
    dynamic: RealDriverCluster, tmp_path: Path
) -> None:
    """Prepare: nvlib.go createMigDevice (a GPU instance at the allocated placement, one compute
    instance); the container gets the parent's /dev/nvidia0 and the two capability nodes
    (cdi.go GetDevNodesForMigDevice). Unprepare: deleteMigDevice; the stand-in removes them.
    The node's whole call log, counted, is kept in the test's directory (nvml-calls.json)."""
    kube, ns, root = dynamic.kube, "nv-dynmig", dynamic.roots[NODE]
    one_g = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        kube.create(
            b.resource_claim("one", ns, [b.exact_request("mig", "mig.nvidia.com", selectors=[one_g])])
        )
        shows = "ls /dev/nvidia-caps; ls -d /dev/nvidia[0-9]*; env | grep ^NVIDIA_VISIBLE_DEVICES= || true"
        container = view_container("main", dynamic.image, ["sh", "-c", shows], claims=["mig"])
        pod = b.pod(
            "p", ns, containers=[container], claims={"mig": "one"}, grace_seconds=REAL_KUBELET_GRACE_SECONDS
        )
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE}
        kube.create(pod)
        wait_phase(kube, ns, "p", "Running")
        [result] = allocated_devices(kube.get(*kinds.RESOURCE_CLAIM, "one", ns))
        assert (result["driver"], result["pool"]) == ("gpu.nvidia.com", NODE), result
        assert result["device"] in {n for n in _mig_spans() if n.startswith("gpu-0-mig-1g10gb-19-")}, result
        # The first GPU instance on GPU 0 has id 1 (the lowest free), its compute instance id 0.
        gi_minor, ci_minor = caps_minors(0, 1, 0)
        lines = container_output(kube, ns, "p", "main").split()
        assert sorted(lines) == sorted(
            [f"nvidia-cap{gi_minor}", f"nvidia-cap{ci_minor}", "/dev/nvidia0", "NVIDIA_VISIBLE_DEVICES=void"]
        ), lines
        assert _changes(dynamic) == dict.fromkeys(CHANGING, 0) | {
            "nvmlDeviceCreateGpuInstanceWithPlacement": 1,
            "nvmlGpuInstanceCreateComputeInstance": 1,
        }
        created = (
            ["gpu0/mig/gi1/access", "gpu0/mig/gi1/ci0/access"],
            {f"nvidia-cap{n}": (NVIDIA_CAPS_MAJOR, n) for n in (gi_minor, ci_minor)},
        )
        assert live_capabilities(root) == created

        kube.delete(*kinds.POD, "p", ns)
        wait_for(
            lambda: [p["metadata"]["name"] for p in kube.list(*kinds.POD, ns)],
            lambda left: left == [],
            timeout=TIMEOUTS.deletion,
            describe=f"pod {ns}/p gone",
        )
        kube.delete(*kinds.RESOURCE_CLAIM, "one", ns)
        wait_for(
            lambda: (_changes(dynamic), live_capabilities(root)),
            lambda seen: seen[1] == ([], {}) and seen[0]["nvmlGpuInstanceDestroy"] == 1,
            timeout=TIMEOUTS.deletion,
            describe=f"the MIG device of claim {ns}/one destroyed on {NODE}, its capabilities gone",
        )
        assert _changes(dynamic) == {
            "nvmlDeviceSetMigMode": 0,  # Ampere: MIG stays on (nvlib.go maybeDisableMigMode)
            "nvmlDeviceCreateGpuInstanceWithPlacement": 1,
            "nvmlGpuInstanceCreateComputeInstance": 1,
            "nvmlComputeInstanceDestroy": 1,
            "nvmlGpuInstanceDestroy": 1,
        }
        calls = nvml_calls(root)
        kept = {"order": calls, "counts": dict(sorted(Counter(calls).items()))}
        (tmp_path / "nvml-calls.json").write_text(json.dumps(kept, indent=1))
    finally:
        kube.delete(*kinds.NAMESPACE, ns)
