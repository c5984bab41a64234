"""The shape of tests/e2e/test_nvidia_real_driver.py's cluster (NVIDIA's gpu-kubelet-plugin,
each release versions.toml pins, on 8 H100s, 8 A100s with static MIG on two, 2 more H100s with
static MIG on one) and what its tests compare with: the MIG devices the plugin names, the
personality of that release (nvidia-v0.4 for v0.4.1, nvidia-v0.5 for v0.5.0) rendering the same
pools, the differences kept on purpose, and the environment the plugin's CDI spec sets."""

from __future__ import annotations

import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from fake_driver.api.apilimits import parse_minor
from fake_driver.facts.personalities import PERSONALITIES
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import render_node
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.drivers import load_drivers
from harness.kit import kinds
from tests.fake_driver.slicediff import Difference, matches
from tests.fake_driver.slicediff import Path as DiffPath
from tests.fake_driver.test_fd_real_fidelity import published
from tests.support.realdriver import RealDriverCluster, real_driver_cluster

DRIVER = "nvidia@v0.4.1"
PERSONALITY = "nvidia-v0.4"
VERSIONS = load_drivers()["nvidia"].versions  # every release the e2e tests run, each its cluster


def personality_of(version: str) -> str:
    """The NVIDIA personality that mimics `version` (its `release`)."""
    [name] = [p.name for p in PERSONALITIES.values() if p.is_nvidia and p.release == version]
    return name


def for_version(pools: Sequence[RealPoolSpec], version: str) -> tuple[RealPoolSpec, ...]:
    return tuple(replace(p, driver=f"nvidia@{version}") for p in pools)


GPUS = 8
MIG_PROFILE = "a100-80gb-pcie"
# Split [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb] by the NVML stand-in (nvmlstub/mig.go), placed by
# fake_driver.facts.profiles place_layout: the A100s' GPUs 0 and 1, and GPU 0 of a third node's 2 H100s
# (the 8-H100 node stays whole: qualify's bridging needs a node with 8 GPUs of the class). Both
# parts name these profiles with the same GI profile ids and placements.
LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
MIG = {"mode": "static", "layout": LAYOUT, "gpus": [0, 1]}
# The health check gate on (versions.toml [drivers.nvidia.settings] device_health): qualify's
# device-health makes one GPU sick through the NVML stand-in (control.fault_injector).
HEALTH = {"device_health": True}
POOLS = (
    RealPoolSpec("h100", count=1, gpus=GPUS, profile="h100-80gb-hbm3", driver=DRIVER, settings=HEALTH),
    RealPoolSpec("a100", count=1, gpus=GPUS, profile=MIG_PROFILE, driver=DRIVER, mig=MIG, settings=HEALTH),
    RealPoolSpec(
        "h100m",
        count=1,
        gpus=2,
        profile="h100-80gb-hbm3",
        driver=DRIVER,
        mig=MIG | {"gpus": [0]},
        settings=HEALTH,
    ),
)
MIG_NODE = "a100-0"
# Per split GPU: <profile without dots>-<GI profile id>-<placement start> (mig.go
# ToCanonicalName, after gpu-<parent minor>-mig-) -> (profile, placement start, size).
MIG_PLACED = {
    "2g20gb-14-0": ("2g.20gb", 0, 2),
    "1g10gb-19-2": ("1g.10gb", 2, 1),
    "1g10gb-19-3": ("1g.10gb", 3, 1),
    "3g40gb-9-4": ("3g.40gb", 4, 4),
}

# Differences kept on purpose: (path pattern, "*" = any one segment) -> why.
ALLOWED: dict[DiffPath, str] = {
    ("*", "metadata", "labels", "dra-harness.io/managed-by"): (
        "the fake labels every object it writes as the harness's (fake_driver/api/ownership.py), so "
        "cleanup and leak checks find them; the real driver's slices carry no labels"
    ),
}


def node_of(pool: RealPoolSpec) -> str:
    return pool.node_names()[0]


def mig_devices(parent: int) -> dict[str, tuple[str, int, int]]:
    """The MIG devices the plugin names on GPU `parent`: name -> (profile, start, size)."""
    return {f"gpu-{parent}-mig-{suffix}": placed for suffix, placed in MIG_PLACED.items()}


def split_gpus(pool: RealPoolSpec) -> list[int]:
    return list(pool.mig.get("gpus", [])) if pool.mig else []


def device_names(pool: RealPoolSpec) -> list[str]:
    """What the plugin publishes for the pool's node: whole GPUs and the split ones' MIG devices."""
    split = split_gpus(pool)
    whole = [f"gpu-{i}" for i in range(pool.gpus) if i not in split]
    return sorted(whole + [name for p in split for name in mig_devices(p)])


def allowed(d: Difference) -> DiffPath | None:
    return next((p for p in ALLOWED if matches(d.path, p)), None)


def rendered(
    env: RealDriverCluster, pool: RealPoolSpec, personality: str = PERSONALITY
) -> list[dict[str, Any]]:
    """The personality's slices for the pool's node (its uid as the owner)."""
    node = node_of(pool)
    raw: dict[str, Any] = {"name": pool.name, "nodes": [node], "profile": pool.profile, "gpus": pool.gpus}
    raw |= {"personality": personality, **({"mig": dict(pool.mig)} if pool.mig else {})}
    fleet = fleet_from_dict({"pools": [raw]})
    uid = env.kube.get(*kinds.NODE, node)["metadata"]["uid"]
    return list(render_node(fleet.node(node), parse_minor(env.cluster.minor.name), node_uid=uid).slices)


def cdi_env(env: RealDriverCluster, node: str, claim_uid: str) -> dict[str, str]:
    """The environment the plugin's CDI spec for the claim sets (the spec's and its devices'
    containerEdits), from the node's CDI directory."""
    cdi_dir = env.cdi_dir(node)
    [spec] = [yaml.safe_load(p.read_text()) for p in sorted(cdi_dir.iterdir()) if claim_uid in p.read_text()]
    edits = [spec.get("containerEdits", {}), *(d.get("containerEdits", {}) for d in spec["devices"])]
    return dict(e.split("=", 1) for edit in edits for e in edit.get("env", []))


@contextmanager
def nvidia_cluster(
    run_dir: Path, pools: Sequence[RealPoolSpec], minor: str | None = None
) -> Iterator[RealDriverCluster]:
    """real_driver_cluster (of `minor`, the default when None), then the fake driver roots'
    check: one per node, and neither a root nor a device node made with mknod in it outlives
    the cluster."""
    with real_driver_cluster(run_dir, pools, minor) as env:
        roots = env.roots
        yield env
    left = [str(p) for p in run_dir.rglob("*") if stat.S_ISCHR(p.lstat().st_mode)]
    nodes = sorted(n for p in pools for n in p.node_names())
    assert (sorted(roots), left, [r for r in roots.values() if r.exists()]) == (nodes, [], [])


def published_devices(env: RealDriverCluster, node: str) -> dict[str, dict[str, Any]]:
    """The devices the plugin published for `node`, by name."""
    slices = published(env.kube, "gpu.nvidia.com", node)
    return {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}
