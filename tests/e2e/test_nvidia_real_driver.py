"""NVIDIA's real DRA driver without a GPU: gpu-kubelet-plugin at each release versions.toml
[drivers.nvidia] pins (v0.4.1, v0.5.0; one cluster each) on 3 real nodes: 8 H100s, 8 A100s with
static MIG on two, 2 H100s with static MIG on one (tests/support/nvidiareal.py), each node with a fake
driver root whose libnvidia-ml.so.1 is the project's stand-in fed by the fake driver's GPU
profile. The slices it publishes carry the profile's GPUs and the layout's MIG devices; a
claim's container sees exactly /dev/nvidia<N> of its GPU, or the parent's and the MIG device's
capability nodes; the release's personality (nvidia-v0.4, nvidia-v0.5) renders the same slices
field by field (every difference fixed or in ALLOWED with its reason); qualify gives a verdict
per capability; the roots, device nodes included, are gone after teardown. Static MIG in v0.4.1
and v0.5.0 publishes no counters (cmd/gpu-kubelet-plugin/driver.go publishResources,
deviceinfo.go MigDeviceInfo.GetDevice @ both).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fake_driver.facts.profiles import MIB, get_profile, gpu_uuid
from fake_driver.publishing.legacy import LEGACY_RESOURCE
from harness.clusters.realnodes import node as realnode
from harness.clusters.realnodes.nvidiamig import caps_minors, mig_device_uuid, parse_mig
from harness.clusters.realnodes.nvidiaroot import make_root, nvml_calls
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.drivers import driver_ref
from harness.core.errors import HarnessError
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.detectors import Severity, detect_double_stack
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import parse_quantity
from harness.kit.nodepods import container_env, container_output, env_pod, view_container
from harness.kit.pods import wait_phase
from tests.fake_driver.slicediff import slice_differences
from tests.fake_driver.test_fd_real_fidelity import published
from tests.support.nvidiareal import (
    ALLOWED,
    MIG_NODE,
    POOLS,
    VERSIONS,
    allowed,
    cdi_env,
    device_names,
    for_version,
    mig_devices,
    node_of,
    nvidia_cluster,
    personality_of,
    published_devices,
    rendered,
    split_gpus,
)
from tests.support.realdriver import (
    RealDriverCluster,
    assert_node_side_evidence,
    real_driver_missing,
)

pytestmark = [pytest.mark.real_node, pytest.mark.real_plugin_comparison]

QUALIFY_VERDICTS = {
    "bridging": "PASS",
    "mixed-pools": "PASS",
    "partitions": "PASS",
    "prioritized-list": "PASS",
    "cel-selectors": "PASS",
    "consumable-capacity": "NOT SUPPORTED",
    "gang": "PASS",
    "failure-modes": "PASS",
    "node-side": "PASS",
    "device-health": "PASS",  # the built-in injector: Xid 79 -> gpu.nvidia.com/xid=79 NoSchedule
}


@pytest.fixture(scope="module", params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def nvidia(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config, version: str
) -> Iterator[RealDriverCluster]:
    minor = pytestconfig.getoption("--k8s-version")  # `--k8s-version 1.38`: on 1.38 nodes
    if why := real_driver_missing(f"nvidia@{version}", minor):
        pytest.skip(why)
    with nvidia_cluster(
        tmp_path_factory.mktemp(f"nvidia-{version}"), for_version(POOLS, version), minor
    ) as env:
        yield env


@pytest.mark.parametrize("pool", POOLS, ids=lambda p: p.name)
def test_the_plugin_publishes_the_profiles_gpus_with_node_unique_uuids(
    nvidia: RealDriverCluster, pool: RealPoolSpec
) -> None:
    node, hw = node_of(pool), get_profile(pool.profile)
    devices = published_devices(nvidia, node)
    assert sorted(devices) == device_names(pool)
    for i in [i for i in range(pool.gpus) if i not in split_gpus(pool)]:
        attrs = devices[f"gpu-{i}"]["attributes"]
        assert (attrs["type"], attrs["uuid"], attrs["productName"]) == (
            {"string": "gpu"},
            {"string": gpu_uuid(node, i)},
            {"string": hw.product_name},
        )
    calls = nvml_calls(nvidia.roots[node])
    assert {"nvmlInitWithFlags", "nvmlDeviceGetCount_v2", "nvmlDeviceGetUUID"} <= set(calls), calls


@pytest.mark.parametrize("pool", [p for p in POOLS if p.mig], ids=lambda p: p.name)
def test_the_plugin_publishes_the_layouts_mig_devices(nvidia: RealDriverCluster, pool: RealPoolSpec) -> None:
    """The MIG devices' names are go-nvlib's from NVML's memory sizes (mig_profile.go
    getMigMemorySizeGB): on the H100 they match only with a real GPU's sizes, not nominal ones."""
    node = node_of(pool)
    hw, devices = get_profile(pool.profile), published_devices(nvidia, node)
    placements = {p.start: p for p in parse_mig(pool.profile, pool.gpus, pool.mig, node).placements}
    for parent in split_gpus(pool):
        for name, (profile, start, size) in mig_devices(parent).items():
            m, attrs, capacity = (
                hw.mig_profile(profile),
                devices[name]["attributes"],
                devices[name]["capacity"],
            )
            assert (attrs["type"], attrs["profile"], attrs["parentUUID"], attrs["uuid"]) == (
                {"string": "mig"},
                {"string": profile},
                {"string": gpu_uuid(node, parent)},
                {"string": mig_device_uuid(node, parent, placements[start])},
            )
            assert parse_quantity(capacity["memory"]["value"]) == m.memory_mib * MIB
            assert parse_quantity(capacity["multiprocessors"]["value"]) == m.multiprocessors
            slices = sorted(k for k in capacity if k.startswith("memorySlice"))
            assert slices == [f"memorySlice{s}" for s in range(start, start + size)]
            assert "consumesCounters" not in devices[name]  # static MIG: no counters in v0.4.1
    calls = set(nvml_calls(nvidia.roots[node]))
    assert {"nvmlDeviceGetMigMode", "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlGpuInstanceGetInfo"} <= calls


@contextmanager
def _claim_pod(
    env: RealDriverCluster, ns: str, device_class: str, command: list[str], node: str
) -> Iterator[tuple[dict[str, Any], dict[str, Any], str]]:
    """A Running pod on `node` with a claim of one device of `device_class`, its container running
    `command`: (the claim, its allocation result, the command's output). Its namespace goes after."""
    kube = env.kube
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        kube.create(b.claim_template("one", ns, [b.exact_request("dev", device_class)]))
        container = view_container("main", env.image, command, claims=["dev"])
        pod = b.pod("p", ns, containers=[container], claim_templates={"dev": "one"})
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
        kube.create(pod)
        wait_phase(kube, ns, "p", "Running")
        [claim] = claims_of(kube, ns, "p")
        [result] = allocated_devices(claim)
        assert (result["driver"], result["pool"]) == ("gpu.nvidia.com", node), result
        yield claim, result, container_output(kube, ns, "p", "main")
    finally:
        kube.delete(*kinds.NAMESPACE, ns)


def test_a_claim_container_sees_exactly_its_gpu_device_node(nvidia: RealDriverCluster, version: str) -> None:
    node, view = node_of(POOLS[0]), driver_ref(f"nvidia@{version}")[0].container_view
    # What the driver shows (its container view), then the environment CDI gave.
    command = ["sh", "-c", f"{shlex.join(view.command)}; env"]
    with _claim_pod(nvidia, "nv-view", "gpu.nvidia.com", command, node) as (claim, result, output):
        assert view.devices(output) == [result["device"]]
        env = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
        spec_env = cdi_env(nvidia, node, claim["metadata"]["uid"])
        assert "NVIDIA_VISIBLE_DEVICES" in spec_env, spec_env
        assert env["NVIDIA_VISIBLE_DEVICES"] == spec_env["NVIDIA_VISIBLE_DEVICES"]


def test_a_mig_claim_container_gets_the_parent_and_the_mig_devices_capability_nodes(
    nvidia: RealDriverCluster,
) -> None:
    """cmd/gpu-kubelet-plugin/cdi.go GetDevNodesForMigDevice: the parent's /dev/nvidia<minor>
    and the GPU instance's and compute instance's capability nodes."""
    shows = "ls /dev/nvidia-caps; ls -d /dev/nvidia[0-9]*; env | grep ^NVIDIA_VISIBLE_DEVICES= || true"
    with _claim_pod(nvidia, "nv-mig", "mig.nvidia.com", ["sh", "-c", shows], MIG_NODE) as (_, result, output):
        [parent] = [p for p in split_gpus(POOLS[1]) if result["device"] in mig_devices(p)]
        # GPU instance ids are 1.. in placement order on each GPU (harness.clusters.realnodes.nvidiamig)
        placed = mig_devices(parent)
        gi = 1 + sorted(placed, key=lambda n: placed[n][1]).index(result["device"])
        assert sorted(output.split()) == sorted(
            [
                *(f"nvidia-cap{n}" for n in caps_minors(parent, gi, 0)),
                f"/dev/nvidia{parent}",
                "NVIDIA_VISIBLE_DEVICES=void",
            ]
        ), output


@pytest.mark.parametrize("pool", POOLS, ids=lambda p: p.name)
def test_the_nvidia_personality_renders_what_the_real_plugin_publishes(
    nvidia: RealDriverCluster, pool: RealPoolSpec, version: str
) -> None:
    """Full GPUs and MIG devices, on each node."""
    real = published(nvidia.kube, "gpu.nvidia.com", node_of(pool))
    diffs = slice_differences(real, rendered(nvidia, pool, personality_of(version)))
    unexplained = [str(d) for d in diffs if allowed(d) is None]
    assert not unexplained, "differences from the real plugin:\n" + "\n".join(unexplained)


def test_no_allowed_difference_is_stale(nvidia: RealDriverCluster, version: str) -> None:
    used = set()
    for pool in POOLS:
        real = published(nvidia.kube, "gpu.nvidia.com", node_of(pool))
        used |= {allowed(d) for d in slice_differences(real, rendered(nvidia, pool, personality_of(version)))}
    assert sorted(".".join(p) for p in set(ALLOWED) - used) == []


HEALTH_SUITE = ("suites/device_health/test_any_driver.py",)
# Planted bugs of device-health, before qualify's own run: they leave the device it then picks
# untainted or tainted None (the plugin's Xid 79 replaces the key's taint: allocatable.go
# AddOrUpdateTaint @ v0.4.1 and v0.5.0).
# A non-fatal Xid (13, xidsToSkip in device_health.go @ v0.4.1 and v0.5.0): a taint with effect
# None, which keeps nothing off the device.
_XID_13 = (
    "import json, sys; from pathlib import Path; from harness.clusters.realnodes.nvidiafaults import inject; "
    "roots = json.loads(sys.argv[1]); inject(Path(roots[sys.argv[2]]), sys.argv[2], 'xid', sys.argv[3], 13)"
)


@pytest.mark.parametrize(
    ("bug", "state"),
    [
        ("ignores-the-fault", r"published, no taint"),
        ("taints-with-effect-none", r"tainted gpu\.nvidia\.com/xid=13:None"),
    ],
    ids=["ignores-the-fault", "taints-with-effect-none"],
)
def test_device_health_fails_a_driver_that_does_not_keep_claims_off_a_sick_device(
    nvidia: RealDriverCluster, tmp_path: Path, version: str, bug: str, state: str
) -> None:
    # a template's literal braces are doubled ({node} and {device} are its only fields)
    roots = json.dumps({node: str(root) for node, root in nvidia.roots.items()})
    roots = roots.replace("{", "{{").replace("}", "}}")
    inject = {
        "ignores-the-fault": ["true", "{node}", "{device}"],  # the command does nothing
        "taints-with-effect-none": [sys.executable, "-c", _XID_13, roots, "{node}", "{device}"],
    }[bug]
    out = tmp_path / "results"
    done = nvidia.qualify(f"nvidia@{version}", out, HEALTH_SUITE, inject=inject)

    assert done.returncode == 3, done.stdout[-4000:] + done.stderr
    report = json.loads((out / "qualify.json").read_text())
    [health] = [c for c in report["capabilities"] if c["id"] == "device-health"]
    assert (health["verdict"], health["headline"]) == ("FAIL", "FAIL, 1 of 1 failed")
    [evidence] = health["evidence"]
    assert re.fullmatch(
        r"suites/device_health/test_any_driver\.py::test_a_sick_device_is_kept_from_new_claims: Failed: the "
        r"fault changed nothing that keeps claims off (gpu-\d): timed out after 90s waiting for \1 of "
        r"(h100|a100|h100m)-0 tainted NoSchedule/NoExecute or withdrawn by gpu\.nvidia\.com; last observed:"
        rf"\n{state}",
        evidence,
    ), evidence


def test_qualify_the_real_nvidia_driver(nvidia: RealDriverCluster, tmp_path: Path, version: str) -> None:
    """Qualify's default suites, the plugin restarted through this process (the nodes' owner)."""
    out = tmp_path / "results"
    done = nvidia.qualify(f"nvidia@{version}", out)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    report = json.loads((out / "qualify.json").read_text())
    assert report["totals"]["failed"] == report["totals"]["errors"] == 0
    verdicts = {c["id"]: c["verdict"] for c in report["capabilities"]}
    assert verdicts == QUALIFY_VERDICTS, done.stdout
    assert_node_side_evidence(report, r"(h100|a100|h100m)-0", r"sh -c .*")
    [health] = [c for c in report["capabilities"] if c["id"] == "device-health"]
    [seen] = health["evidence"]
    assert re.fullmatch(
        r"passed: test_a_sick_device_is_kept_from_new_claims: on (h100|a100|h100m)-0, gpu-\d after the "
        r"fault: tainted gpu\.nvidia\.com/xid=79:NoSchedule; a claim only it meets: Pending \(cannot "
        r"allocate all claims\); a claim tolerating gpu\.nvidia\.com/xid got it \(taint "
        r"gpu\.nvidia\.com/xid=79:NoSchedule\)",
        seen,
    ), seen
    # The split A100s' MIG devices are what partitions ran on (the fleet's own tests skip).
    [partitions] = [c for c in report["capabilities"] if c["id"] == "partitions"]
    assert "passed: test_a_partition_device_is_allocated_on_its_node" in partitions["evidence"]
    # v0.4.1 hides a MIG-enabled GPU and publishes no counters: nothing to exclude or fill, said so;
    # its container view (/dev/nvidia<N>) cannot name a MIG device.
    assert partitions["headline"].startswith("PASS, 1 of 9 ran; 8 skipped: "), partitions["headline"]
    skipped = {e.split(":", 1)[0].removeprefix("skipped "): e for e in partitions["evidence"]}
    for check in (
        "test_a_partition_waits_while_its_parent_is_allocated",
        "test_partitions_fill_their_counter_set",
    ):
        [line] = [e for name, e in skipped.items() if name.startswith(check)]
        assert "a100-0: parentUUID GPU-" in line, line
        assert "(4 partitions, parent not published)" in line, line
    [view] = [e for name, e in skipped.items() if name.startswith("test_a_partition_claims_container")]
    assert view.endswith("--container-device-pattern '^(?P<device>gpu-\\\\d+)$' cannot"), view


def test_a_plugin_that_cannot_start_shows_its_log_and_what_it_looked_for_in_the_root(
    nvidia: RealDriverCluster, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    """Bad input: a driver root without its NVML library (removed once written). The real
    plugin exits; the failure names the root's contents and ends with the plugin's own log."""

    def without_library(*args: Any, **kwargs: Any) -> Path:
        root = make_root(*args, **kwargs)
        (root / "usr/lib64/libnvidia-ml.so.1").unlink()
        return root

    monkeypatch.setattr(realnode, "make_root", without_library)
    assert nvidia.cluster.real is not None
    pool = RealPoolSpec("bad", count=1, gpus=1, profile="t4", driver=f"nvidia@{version}")
    with pytest.raises(HarnessError) as failed:
        nvidia.cluster.real.add_pool(pool)
    nvidia.kube.delete(*kinds.NODE, "bad-0")
    first, *tail = str(failed.value).splitlines()
    root = nvidia.cluster.run_dir / "nodes/bad-0/driver-root"
    assert first.startswith(f"node bad-0: kubelet-plugin (driver nvidia@{version}, "), first
    assert (
        f"did not come up (exited; driver root {root}: usr/lib64/libnvidia-ml.so.1 MISSING, "
        "usr/bin/nvidia-smi present, usr/bin/nvidia-cdi-hook present, dev present, "
        "dev/nvidiactl present; NVML calls: none); last lines of "
    ) in first, first
    assert 1 <= len(tail) <= 20
    assert 'error locating "libnvidia-ml.so.1"' in tail[-1], tail
    assert not root.exists()


def test_a_device_plugin_beside_the_real_driver_hands_one_gpu_out_twice(
    nvidia: RealDriverCluster, version: str
) -> None:
    """The double stack with the real driver: the fake device plugin advertises the node's one
    GPU as nvidia.com/gpu beside NVIDIA's plugin publishing it; a legacy pod and a claim pod
    both get it (the same UUID), and the detector names the node."""
    assert nvidia.cluster.real is not None
    kube, ns, node = nvidia.kube, "nv-double", "ds-0"
    pool = RealPoolSpec(
        "ds", count=1, gpus=1, profile="h100-80gb-hbm3", driver=f"nvidia@{version}", device_plugin=True
    )
    try:
        nvidia.cluster.real.add_pool(pool)
    except HarnessError as err:
        pytest.fail(f"real nodes: {err}", pytrace=False)
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        kube.create(b.claim_template("one", ns, [b.exact_request("gpu", "gpu.nvidia.com")]))
        kube.create(env_pod("legacy", ns, nvidia.image, node, limits={LEGACY_RESOURCE: "1"}))
        kube.create(env_pod("claim", ns, nvidia.image, node, claim_templates={"gpu": "one"}))
        for name in ("legacy", "claim"):
            wait_phase(kube, ns, name, "Running")
        [claim] = claims_of(kube, ns, "claim")
        [result] = allocated_devices(claim)
        [slice_] = published(kube, "gpu.nvidia.com", node)
        [device] = [d for d in slice_["spec"]["devices"] if d["name"] == result["device"]]
        legacy_uuid = container_env(kube, ns, "legacy")["NVIDIA_VISIBLE_DEVICES"]
        assert (legacy_uuid, device["attributes"]["uuid"]["string"]) == (gpu_uuid(node, 0), gpu_uuid(node, 0))
        findings = detect_double_stack(
            [kube.get(*kinds.NODE, node)],
            kube.list(*kinds.RESOURCE_SLICE),
            kube.list(*kinds.DEVICE_CLASS),
            LEGACY_RESOURCE,
            gpu_drivers=["gpu.nvidia.com"],
        )
        assert [(f.check, f.severity, f.subject) for f in findings] == [
            ("double-stack", Severity.BLOCKING, f"node/{node}")
        ]
    finally:
        kube.delete(*kinds.NAMESPACE, ns)
        nvidia.cluster.real.remove_pool(pool.name)  # and the driver's slices
        kube.delete(*kinds.NODE, node)
