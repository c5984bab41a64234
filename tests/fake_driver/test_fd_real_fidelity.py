"""Fidelity from the real output: the example-v0.4 personality rendered for the node the real
dra-example-driver v0.4.0 kubelet plugin runs on, compared field by field with the slices that
plugin published (device names, attribute names, types and values, UUIDs included, capacities
and their request policies, shared counters and consumptions, allowMultipleAllocations, pool,
generation, resourceSliceCount, driver, nodeName, slice names and owners). Three layouts: plain
(4 GPUs), --gpu-partitions=2 and --gpu-allow-multiple-allocations, each a real node of one
cluster per module (the plain pool starts it, the others are added and removed in turn).

Every difference is either fixed in the personality or in ALLOWED with its reason; the test
fails on any other difference, one line each (path, real value, fake value), and on an ALLOWED
entry no layout needs any more.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fake_driver.api.apilimits import parse_minor
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import render_node
from fixtures.options import run_options
from fixtures.real.realnodes import running
from harness.clusters.host.rundirs import session_run_dir
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane.driverparts import driver_built, not_built_line
from harness.core.drivers import driver_ref
from harness.core.errors import HarnessError
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.waits import TIMEOUTS, wait_for
from tests.fake_driver.slicediff import Difference, Path, matches, slice_differences

pytestmark = [pytest.mark.real_node, pytest.mark.real_plugin_comparison]

DRIVER = "example@v0.4.0"
PERSONALITY = "example-v0.4"
GPUS = 4


@dataclass(frozen=True)
class Layout:
    pool: str  # the real pool's name; its node is <pool>-0
    settings: dict[str, Any]  # the real driver's (versions.toml [drivers.example.settings])
    fleet: dict[str, Any]  # the same layout as fake fleet pool fields


LAYOUTS = {
    "plain": Layout("plain", {}, {}),
    "partitions": Layout("parts", {"partitions": 2}, {"partitions": 2}),
    "multiple-allocations": Layout("multi", {"multiple_allocations": True}, {"consumable_capacity": True}),
}
FIRST = LAYOUTS["plain"]

# Differences kept on purpose: (path pattern, "*" = any one segment) -> why.
ALLOWED: dict[Path, str] = {
    ("*", "metadata", "labels", "dra-harness.io/managed-by"): (
        "the fake labels every object it writes as the harness's (fake_driver/api/ownership.py), so "
        "cleanup and leak checks find them; the real driver's slices carry no labels"
    ),
}


@dataclass
class Fidelity:
    cluster: LocalCluster
    kube: Kube


@pytest.fixture(scope="module")
def fidelity(request: pytest.FixtureRequest) -> Iterator[Fidelity]:
    spec, version = driver_ref(DRIVER)
    if driver_built(spec, version) is None:
        pytest.skip(not_built_line(spec, version))
    opts = run_options(request.config)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    run_dir = session_run_dir(opts.minor or "default", "dra-all", f"{worker}-example-fidelity")
    # dra-all: the partitionable-devices and consumable-capacity gates, without which the API
    # server would drop sharedCounters, consumesCounters and requestPolicy from both sides.
    cluster = LocalCluster(opts.minor, "dra-all", run_dir=run_dir, real_pools=[_pool(FIRST)])
    with running(cluster) as kube:
        yield Fidelity(cluster, kube)


def _pool(layout: Layout) -> RealPoolSpec:
    return RealPoolSpec(layout.pool, count=1, gpus=GPUS, driver=DRIVER, settings=layout.settings)


@pytest.fixture(params=list(LAYOUTS))
def layout(request: pytest.FixtureRequest, fidelity: Fidelity) -> Iterator[Layout]:
    """The layout's real node, running (the first layout's is the cluster's own)."""
    chosen = LAYOUTS[request.param]
    if chosen == FIRST:
        yield chosen
        return
    real = fidelity.cluster.real
    assert real is not None
    pool = _pool(chosen)
    try:
        real.add_pool(pool)
    except HarnessError as err:
        pytest.fail(f"real nodes: {err}", pytrace=False)
    try:
        yield chosen
    finally:
        real.remove_pool(pool.name)  # and the driver's slices
        for node in pool.node_names():
            fidelity.kube.delete(*kinds.NODE, node)


def published(kube: Kube, driver: str, node: str) -> list[dict[str, Any]]:
    """The node's pool as the real plugin published it: every slice of its latest generation,
    in the server's order by name."""

    def pool() -> list[dict[str, Any]]:
        slices = [
            s
            for s in kube.list("resource.k8s.io/v1", "ResourceSlice")
            if s["spec"]["driver"] == driver and s["spec"]["pool"]["name"] == node
        ]
        return sorted(slices, key=lambda s: s["metadata"]["name"])

    def complete(slices: list[dict[str, Any]]) -> bool:
        pools = {(s["spec"]["pool"]["generation"], s["spec"]["pool"]["resourceSliceCount"]) for s in slices}
        return len(pools) == 1 and len(slices) == next(iter(pools))[1]

    return wait_for(pool, complete, timeout=TIMEOUTS.api_object, describe=f"{driver} slices of {node}")


def allowed(d: Difference) -> Path | None:
    return next((p for p in ALLOWED if matches(d.path, p)), None)


def test_example_personality_renders_what_the_real_v0_4_0_plugin_publishes(
    fidelity: Fidelity, layout: Layout
) -> None:
    node = f"{layout.pool}-0"
    spec, _ = driver_ref(DRIVER)
    real = published(fidelity.kube, spec.driver_name, node)
    fleet = fleet_from_dict(
        {
            "pools": [
                {"name": layout.pool, "nodes": [node], "profile": "l4", "gpus": GPUS}
                | {"personality": PERSONALITY, **layout.fleet}
            ]
        }
    )
    uid = fidelity.kube.get(*kinds.NODE, node)["metadata"]["uid"]
    minor = parse_minor(fidelity.cluster.minor.name)
    fake = render_node(fleet.node(node), minor, node_uid=uid).slices

    diffs = slice_differences(real, fake)
    unexplained = [str(d) for d in diffs if allowed(d) is None]
    assert not unexplained, "differences from the real plugin:\n" + "\n".join(unexplained)
    stale = sorted(".".join(p) for p in set(ALLOWED) - {allowed(d) for d in diffs})
    assert not stale, f"ALLOWED entries no difference needs any more: {stale}"
