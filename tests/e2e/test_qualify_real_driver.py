"""`dra-harness qualify` against a driver nobody here wrote: the upstream dra-example-driver's
kubelet plugin (versions.toml [test] drivers) on 2 real nodes of a local cluster, built from the
module proxy. No FAIL may come from an assumption only the fake driver meets; the node side
(what a container sees, Prepare and Unprepare) must be a verdict, not NOT TESTED; a plugin
restart (--plugin-restart-command, through this process) keeps running pods and serves new ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.versions import load_matrix
from tests.e2e.test_report_renders import render_to_artifacts
from tests.support.realdriver import (
    RealDriverCluster,
    assert_node_side_evidence,
    real_driver_cluster,
    real_driver_missing,
)

DRIVER = next((d for d in load_matrix().test_drivers if d.startswith("example@")), "example@v0.4.0")
POOL = RealPoolSpec("ex", count=2, gpus=4, driver=DRIVER)
SUITES = (
    "suites/node",
    "suites/bridging",
    "suites/driver",
    "suites/shared_devices",
    "suites/gang",
    "suites/device_health/test_any_driver.py",
)
# Its own real-node cluster: scheduled in a real-node lane, so quiet-host tests wait for it.
pytestmark = [pytest.mark.real_node, pytest.mark.real_plugin_comparison]


@pytest.fixture(scope="module")
def example(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[RealDriverCluster]:
    minor = pytestconfig.getoption("--k8s-version")  # `--k8s-version 1.38`: on 1.38 nodes
    if why := real_driver_missing(DRIVER, minor):
        pytest.skip(why)
    with real_driver_cluster(tmp_path_factory.mktemp("example"), [POOL], minor) as env:
        yield env


def test_qualify_the_example_driver_on_real_nodes(example: RealDriverCluster, tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = example.qualify(DRIVER, out, SUITES)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    report = json.loads((out / "qualify.json").read_text())
    assert report["totals"]["failed"] == report["totals"]["errors"] == 0
    assert report["tested"] == (
        "the driver gpu.example.com (sigs.k8s.io/dra-example-driver v0.4.0), "
        "on the nodes of the cluster the kubeconfig names"
    )
    verdicts = {c["id"]: c["verdict"] for c in report["capabilities"]}
    assert verdicts == {
        "bridging": "PASS",
        "mixed-pools": "PASS",
        "partitions": "NOT SUPPORTED",  # the example driver publishes no MIG-like devices
        "prioritized-list": "PASS",
        "cel-selectors": "PASS",
        "consumable-capacity": "NOT SUPPORTED",  # not without --gpu-allow-multiple-allocations
        "gang": "PASS",  # on the driver's own node: gangs of its devices, claimed and bridged
        "failure-modes": "NOT TESTED",  # suite not run here (the stand-in's qualify runs it)
        "node-side": "PASS",
        # No injector: the example plugin has no device health to provoke (health.go @ v0.4.0 is
        # its gRPC liveness service; it publishes no device taint and withdraws no device).
        "device-health": "NOT TESTED",
    }, done.stdout
    [health] = [c for c in report["capabilities"] if c["id"] == "device-health"]
    assert health["evidence"] == [
        "test_a_sick_device_is_kept_from_new_claims: how to make one of the driver's devices sick: "
        "no --inject-fault-command given"
    ]
    node_side = [t for t in _tests(out) if t["nodeid"].startswith("suites/node/test_container_view.py")]
    assert sorted((t["nodeid"].rsplit("::", 1)[1], t["outcome"]) for t in node_side) == [
        ("test_a_plugin_restart_keeps_the_running_pod_and_serves_a_new_one", "passed"),
        ("test_an_unchanged_extended_resource_pod_gets_its_device_in_the_container", "passed"),
        ("test_prepare_and_unprepare_are_called_once_and_the_claim_is_released", "passed"),
        ("test_the_container_sees_exactly_its_claimed_device_and_its_neighbour_none", "passed"),
    ]
    assert_node_side_evidence(report, "ex-[01]", "env")
    messages, png = render_to_artifacts(out / "qualify.html", "qualify-example", tmp_path)
    assert messages == []
    assert png.stat().st_size > 50_000


def _tests(out: Path) -> list[dict[str, str]]:
    return list(json.loads((out / "summary.json").read_text())["tests"])
