"""NVIDIA's real DRA driver without a GPU: gpu-kubelet-plugin v0.4.1 (versions.toml
[drivers.nvidia]) on 2 real nodes, 8 H100s on one and 8 A100s on the other, each node with a
fake driver root whose libnvidia-ml.so.1 is the project's stand-in fed by the fake driver's GPU
profile. The slices it publishes carry the profile's GPUs; a claim's container sees exactly
/dev/nvidia<N> of its GPU; the nvidia-v0.4 personality renders the same slices field by field
(every difference fixed or in ALLOWED with its reason); the roots, device nodes included, are
gone after teardown.
"""

from __future__ import annotations

import json
import re
import shlex
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_driver.apilimits import parse_minor
from fake_driver.fleet import fleet_from_dict
from fake_driver.legacy import LEGACY_RESOURCE
from fake_driver.profiles import get_profile, gpu_uuid
from fake_driver.slices import render_node
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes import node as realnode
from harness.clusters.realnodes.nvidiaroot import make_root, nvml_calls
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.drivers import driver_ref
from harness.core.errors import HarnessError
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.checks.detectors import Severity, detect_double_stack
from harness.kit.drastate import allocated_devices, claims_of
from harness.kit.kube import Kube
from harness.kit.nodepods import container_env, container_output, env_pod, view_container
from harness.kit.pods import wait_phase
from tests.fake_driver.slicediff import Difference, matches, slice_differences
from tests.fake_driver.slicediff import Path as DiffPath
from tests.fake_driver.test_fd_real_fidelity import published
from tests.realdriver import real_driver_missing, run_qualify

pytestmark = [pytest.mark.own_target("test-nvidia"), pytest.mark.real_node]

DRIVER = "nvidia@v0.4.1"
PERSONALITY = "nvidia-v0.4"
GPUS = 8
POOLS = (
    RealPoolSpec("h100", count=1, gpus=GPUS, profile="h100-80gb-hbm3", driver=DRIVER),
    RealPoolSpec("a100", count=1, gpus=GPUS, profile="a100-40gb", driver=DRIVER),
)

NODE_SIDE_SUITES = ("suites/node", "suites/bridging", "suites/driver", "suites/shared_devices")
QUALIFY_VERDICTS = {
    "bridging": "PASS",
    "mixed-pools": "PASS",
    "partitions": "NOT SUPPORTED",  # full GPUs only: the stand-in has MIG off
    "prioritized-list": "PASS",
    "cel-selectors": "PASS",
    "consumable-capacity": "NOT SUPPORTED",
    "gang": "NOT TESTED",  # suites/gang is not in this run
    "failure-modes": "NOT TESTED",  # suite not run here
    "node-side": "PASS",
}

# Differences kept on purpose: (path pattern, "*" = any one segment) -> why.
ALLOWED: dict[DiffPath, str] = {
    ("*", "metadata", "labels", "dra-harness.io/managed-by"): (
        "the fake labels every object it writes as the harness's (fake_driver/ownership.py), so "
        "cleanup and leak checks find them; the real driver's slices carry no labels"
    ),
}


def _missing() -> str | None:
    return real_driver_missing(DRIVER)


@dataclass
class NvidiaCluster:
    cluster: LocalCluster
    kube: Kube
    roots: dict[str, Path]  # node -> its fake driver root

    @property
    def image(self) -> str:
        assert self.cluster.real is not None
        return next(iter(self.cluster.real.parts.values())).busybox_ref


@pytest.fixture(scope="module")
def nvidia(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NvidiaCluster]:
    why = _missing()
    if why:
        pytest.skip(why)
    run_dir = tmp_path_factory.mktemp("nvidia")
    # dra-all: what the personality renders is compared with all gates on, as for the example.
    cluster = LocalCluster(profile="dra-all", run_dir=run_dir, real_pools=list(POOLS))
    try:
        cluster.start()
    except HarnessError as err:  # start() has undone what it started
        pytest.fail(f"real nodes: {err}", pytrace=False)
    assert cluster.real is not None
    roots = {name: root for name, n in cluster.real.nodes.items() if (root := n.driver_root) is not None}
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    try:
        yield NvidiaCluster(cluster, kube, roots)
    finally:
        kube.close()
        cluster.stop()
    # The roots' device nodes were made with mknod: none may outlive the cluster.
    left = [str(p) for p in run_dir.rglob("*") if stat.S_ISCHR(p.lstat().st_mode)]
    assert (sorted(roots), left, [r for r in roots.values() if r.exists()]) == (["a100-0", "h100-0"], [], [])


def _node(pool: RealPoolSpec) -> str:
    return pool.node_names()[0]


@pytest.mark.parametrize("pool", POOLS, ids=lambda p: p.profile)
def test_the_plugin_publishes_the_profiles_gpus_with_node_unique_uuids(
    nvidia: NvidiaCluster, pool: RealPoolSpec
) -> None:
    node, hw = _node(pool), get_profile(pool.profile)
    [slice_] = published(nvidia.kube, "gpu.nvidia.com", node)
    devices = {d["name"]: d for d in slice_["spec"]["devices"]}
    assert sorted(devices) == sorted(f"gpu-{i}" for i in range(GPUS))
    for i in range(GPUS):
        attrs = devices[f"gpu-{i}"]["attributes"]
        assert (attrs["type"], attrs["uuid"], attrs["productName"]) == (
            {"string": "gpu"},
            {"string": gpu_uuid(node, i)},
            {"string": hw.product_name},
        )
    calls = nvml_calls(nvidia.roots[node])
    assert {"nvmlInitWithFlags", "nvmlDeviceGetCount_v2", "nvmlDeviceGetUUID"} <= set(calls), calls


def test_a_claim_container_sees_exactly_its_gpu_device_node(nvidia: NvidiaCluster) -> None:
    kube, ns, node = nvidia.kube, "nv-view", _node(POOLS[0])
    spec, _ = driver_ref(DRIVER)
    view = spec.container_view
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        kube.create(b.claim_template("one", ns, [b.exact_request("gpu", "gpu.nvidia.com")]))
        # What the driver shows (its container view), then the environment CDI gave.
        command = ["sh", "-c", f"{shlex.join(view.command)}; env"]
        container = view_container("main", nvidia.image, command, claims=["gpu"])
        pod = b.pod("p", ns, containers=[container], claim_templates={"gpu": "one"})
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
        kube.create(pod)
        wait_phase(kube, ns, "p", "Running")
        [claim] = claims_of(kube, ns, "p")
        [result] = allocated_devices(claim)
        assert (result["driver"], result["pool"]) == ("gpu.nvidia.com", node)
        output = container_output(kube, ns, "p", "main")
        assert view.devices(output) == [result["device"]]
        env = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
        spec_env = _cdi_env(nvidia, node, claim["metadata"]["uid"])
        assert "NVIDIA_VISIBLE_DEVICES" in spec_env, spec_env
        assert env["NVIDIA_VISIBLE_DEVICES"] == spec_env["NVIDIA_VISIBLE_DEVICES"]
    finally:
        kube.delete(*kinds.NAMESPACE, ns)


def _cdi_env(nvidia: NvidiaCluster, node: str, claim_uid: str) -> dict[str, str]:
    """The environment the plugin's CDI spec for the claim sets (the spec's and its devices'
    containerEdits), from the node's CDI directory."""
    assert nvidia.cluster.real is not None
    cdi_dir = nvidia.cluster.real.node(node).layout.cdi_dir
    [spec] = [yaml.safe_load(p.read_text()) for p in sorted(cdi_dir.iterdir()) if claim_uid in p.read_text()]
    edits = [spec.get("containerEdits", {}), *(d.get("containerEdits", {}) for d in spec["devices"])]
    return dict(e.split("=", 1) for edit in edits for e in edit.get("env", []))


def _allowed(d: Difference) -> DiffPath | None:
    return next((p for p in ALLOWED if matches(d.path, p)), None)


@pytest.mark.parametrize("pool", POOLS, ids=lambda p: p.profile)
def test_the_nvidia_personality_renders_what_the_real_plugin_publishes(
    nvidia: NvidiaCluster, pool: RealPoolSpec
) -> None:
    node = _node(pool)
    real = published(nvidia.kube, "gpu.nvidia.com", node)
    fake = _rendered(nvidia, pool)
    diffs = slice_differences(real, fake)
    unexplained = [str(d) for d in diffs if _allowed(d) is None]
    assert not unexplained, "differences from the real plugin:\n" + "\n".join(unexplained)


def test_no_allowed_difference_is_stale(nvidia: NvidiaCluster) -> None:
    used = set()
    for pool in POOLS:
        real = published(nvidia.kube, "gpu.nvidia.com", _node(pool))
        used |= {_allowed(d) for d in slice_differences(real, _rendered(nvidia, pool))}
    assert sorted(".".join(p) for p in set(ALLOWED) - used) == []


def _rendered(nvidia: NvidiaCluster, pool: RealPoolSpec) -> list[dict[str, Any]]:
    node = _node(pool)
    fleet = fleet_from_dict(
        {
            "pools": [
                {
                    "name": pool.name,
                    "nodes": [node],
                    "profile": pool.profile,
                    "gpus": GPUS,
                    "personality": PERSONALITY,
                }
            ]
        }
    )
    uid = nvidia.kube.get(*kinds.NODE, node)["metadata"]["uid"]
    return list(render_node(fleet.node(node), parse_minor(nvidia.cluster.minor.name), node_uid=uid).slices)


def _qualify(env: NvidiaCluster, out: Path, *suites: str) -> subprocess.CompletedProcess[str]:
    return run_qualify(env.cluster.kubeconfig, DRIVER, env.image, out, suites)


def test_qualify_the_real_nvidia_driver(nvidia: NvidiaCluster, tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = _qualify(nvidia, out, *NODE_SIDE_SUITES)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    report = json.loads((out / "qualify.json").read_text())
    assert report["totals"]["failed"] == report["totals"]["errors"] == 0
    verdicts = {c["id"]: c["verdict"] for c in report["capabilities"]}
    assert verdicts == QUALIFY_VERDICTS, done.stdout
    [node_cap] = [c for c in report["capabilities"] if c["id"] == "node-side"]
    seen = [e for e in node_cap["evidence"] if "in the claiming container shows" in e]
    assert len(seen) == 1, node_cap["evidence"]
    assert re.search(
        r"on (h|a)100-0, `sh -c .*` in the claiming container shows \['gpu-\d'\] "
        r"\(allocated: (h|a)100-0/gpu-\d\); in the other container: \[\]$",
        seen[0],
    ), seen[0]


def test_a_plugin_that_cannot_start_shows_its_log_and_what_it_looked_for_in_the_root(
    nvidia: NvidiaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bad input: a driver root without its NVML library (removed once written). The real
    plugin exits; the failure names the root's contents and ends with the plugin's own log."""

    def without_library(*args: Any, **kwargs: Any) -> Path:
        root = make_root(*args, **kwargs)
        (root / "usr/lib64/libnvidia-ml.so.1").unlink()
        return root

    monkeypatch.setattr(realnode, "make_root", without_library)
    assert nvidia.cluster.real is not None
    pool = RealPoolSpec("bad", count=1, gpus=1, profile="t4", driver=DRIVER)
    with pytest.raises(HarnessError) as failed:
        nvidia.cluster.real.add_pool(pool)
    nvidia.kube.delete(*kinds.NODE, "bad-0")
    first, *tail = str(failed.value).splitlines()
    root = nvidia.cluster.run_dir / "nodes/bad-0/driver-root"
    assert first.startswith("node bad-0: kubelet-plugin (driver nvidia@v0.4.1, "), first
    assert (
        f"did not come up (exited; driver root {root}: usr/lib64/libnvidia-ml.so.1 MISSING, "
        "usr/bin/nvidia-smi present, usr/bin/nvidia-cdi-hook present, dev present, "
        "dev/nvidiactl present; NVML calls: none); last lines of "
    ) in first, first
    assert 1 <= len(tail) <= 20
    assert 'error locating "libnvidia-ml.so.1"' in tail[-1], tail
    assert not root.exists()


def test_a_device_plugin_beside_the_real_driver_hands_one_gpu_out_twice(nvidia: NvidiaCluster) -> None:
    """The double stack with the real driver: the fake device plugin advertises the node's one
    GPU as nvidia.com/gpu beside NVIDIA's plugin publishing it; a legacy pod and a claim pod
    both get it (the same UUID), and the detector names the node."""
    assert nvidia.cluster.real is not None
    kube, ns, node = nvidia.kube, "nv-double", "ds-0"
    pool = RealPoolSpec("ds", count=1, gpus=1, profile="h100-80gb-hbm3", driver=DRIVER, device_plugin=True)
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
