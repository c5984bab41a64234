"""Pure parts of qualification: verdicts from outcomes and reasons, the version floor, node
selectors, choosing nodes from an inventory, stand-in pool specs, the attribute inventory."""

from __future__ import annotations

import argparse
import fnmatch
import subprocess
import sys

import pytest

from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import render_node
from harness.core.errors import HarnessError
from harness.core.requirements import Kind, Reason
from harness.core.versions import REPO_ROOT
from harness.kit.fleet_inventory import Inventory, NodeDevices, choose, parse_selector
from harness.qualify.capabilities import ABOUT_THE_CLUSTER, CAPABILITIES, Verdict, decide, deciding, undecided
from harness.qualify.inventory import inventory
from harness.qualify.preflight import version_problem
from harness.qualify.run import DEFAULT_SUITES, QualifyRequest, check_request
from harness.qualify.standin import StandinPoolSpec, device_classes, renamed
from harness.reports.summary import TestRecord

[BRIDGING] = [c for c in CAPABILITIES if c.id == "bridging"]
[HEALTH] = [c for c in CAPABILITIES if c.id == "device-health"]
HEALTH_TEST = "suites/device_health/test_any_driver.py::test_a_sick_device_is_kept_from_new_claims"
NODEID = "suites/bridging/test_extended_resource.py::test_x"


def _record(outcome: str, *reasons: Reason, message: str = "", nodeid: str = NODEID) -> TestRecord:
    return TestRecord(nodeid, "bridging", outcome, 1.0, message, list(reasons))


def test_a_failure_decides_fail_with_its_message() -> None:
    result = decide(BRIDGING, [_record("passed"), _record("failed", message="boom")])
    assert (result.verdict, result.evidence) == (Verdict.FAIL, [f"{NODEID}: boom"])


def test_a_pass_with_no_failure_is_pass() -> None:
    assert decide(BRIDGING, [_record("passed")]).verdict is Verdict.PASS


def test_skips_for_what_the_fleet_lacks_are_not_supported() -> None:
    lacks = Reason(Kind.FLEET, device_class="c", need="MIG devices", text="2 nodes")
    result = decide(BRIDGING, [_record("skipped", lacks)])
    assert (result.verdict, result.evidence) == (
        Verdict.NOT_SUPPORTED,
        ["test_x: needs MIG devices of class c; the fleet has 2 nodes"],
    )


def test_skips_only_for_the_fake_drivers_controls_are_not_tested() -> None:
    result = decide(
        BRIDGING, [_record("skipped", Reason(Kind.PROVIDER, text="needs the fake driver's fleet"))]
    )
    assert (result.verdict, result.evidence) == (
        Verdict.NOT_TESTED,
        ["test_x: needs the fake driver's fleet"],
    )


def test_tests_of_other_capabilities_do_not_count() -> None:
    other = _record("failed", nodeid="suites/gang/test_gang.py::test_y")
    assert decide(BRIDGING, [other]).verdict is Verdict.NOT_TESTED


@pytest.mark.parametrize(
    ("major", "minor", "line"), [(1, 34, ""), (1, 37, ""), (1, 33, "1.33; qualification needs >= 1.34")]
)
def test_the_version_floor_is_1_34(major: int, minor: int, line: str) -> None:
    got = version_problem(major, minor)
    assert got == (f"the cluster runs Kubernetes {line}" if line else "")


def test_node_selectors_parse_or_say_what_is_wrong() -> None:
    assert parse_selector("a=b, c=d") == {"a": "b", "c": "d"}
    assert parse_selector("") == {}
    with pytest.raises(ValueError, match=r"node selector 'pool': expected key=value\[,key=value\]"):
        parse_selector("pool")


def _node(name: str, count: int, **labels: str) -> NodeDevices:
    devices = tuple({"name": f"gpu-{i}"} for i in range(count))
    return NodeDevices(name, labels, devices, devices)


def test_choose_takes_the_smallest_nodes_that_fit_the_selector() -> None:
    inv = Inventory("d", "c", (_node("a", 8, pool="x"), _node("b", 4, pool="x"), _node("c", 2, pool="y")))
    assert [n.node for n in choose(inv, 1, 3, {})] == ["b"]
    assert [n.node for n in choose(inv, 2, 1, {"pool": "x"})] == ["b", "a"]
    assert choose(inv, 1, 9, {}) == []
    assert inv.summary() == "3 node(s) with devices of the class: a (8), b (4), c (2)"


def test_standin_pools_parse_or_say_the_shape() -> None:
    assert StandinPoolSpec.parse("mig:1:2:dynamic") == StandinPoolSpec("mig", 1, 2, "dynamic")
    for bad in ("big:1", "big:x:8", "big:1:8:wide"):
        with pytest.raises(argparse.ArgumentTypeError, match=rf"pool '{bad}': expected name:count:gpus"):
            StandinPoolSpec.parse(bad)


def test_the_standin_classes_never_name_the_fake_driver() -> None:
    classes = device_classes("gpu.acme.example")
    assert [c["metadata"]["name"] for c in classes] == [
        "gpu.acme.example",
        "mig.gpu.acme.example",
        "vfio.gpu.acme.example",
    ]
    assert "nvidia.com/gpu" in str(classes)  # the legacy name it bridges stays
    assert "gpu.nvidia.com" not in str(classes)
    assert renamed({"a": ["gpu.nvidia.com", "x"]}, "gpu.nvidia.com", "d") == {"a": ["d", "x"]}


def test_inventory_lists_names_and_types_per_kind_against_the_closest_personality() -> None:
    device = {
        "name": "gpu-0",
        "attributes": {"type": {"string": "gpu"}, "uuid": {"string": "u"}, "index": {"int": 0}},
        "capacity": {"memory": {"value": "80Gi"}},
    }
    slices = [{"spec": {"driver": "d", "nodeName": "n", "devices": [device]}}]
    [kind] = inventory(slices, "d", "1.37")
    assert (kind.kind, kind.devices, kind.attributes, kind.capacity) == (
        "gpu",
        1,
        {"index": "int", "type": "string", "uuid": "string"},
        ["memory"],
    )
    assert kind.personality.startswith("nvidia-")
    assert "productName" in kind.missing
    assert kind.extra == []
    # index: only nvidia-v25.3 publishes it (deviceinfo.go @ v25.3.2), read, never run here
    assert (kind.personality, kind.checked) == (
        "nvidia-v25.3",
        "from source reading at v25.3.2, not compared with a running plugin",
    )


def _collected(*paths: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *paths, "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    nodeids = [line for line in done.stdout.splitlines() if line.startswith("suites/")]
    assert nodeids, done.stdout + done.stderr
    return nodeids


def test_every_test_qualify_runs_decides_one_capability_or_is_declared_the_clusters() -> None:
    nodeids = _collected(*DEFAULT_SUITES)
    assert undecided(nodeids, DEFAULT_SUITES) == [], (
        "give these tests a capability in CAPABILITIES, or a reason in ABOUT_THE_CLUSTER "
        "(harness/qualify/capabilities.py)"
    )
    several = {n: deciding(n) for n in nodeids if len(deciding(n)) > 1}
    assert several == {}
    stale = [
        p
        for p in [*ABOUT_THE_CLUSTER, *(p for cap in CAPABILITIES for p in cap.tests)]
        if not any(fnmatch.fnmatch(n, p) for n in nodeids)
    ]
    assert stale == [], "these patterns match no test qualify runs"


def test_a_new_suite_file_deciding_nothing_is_named() -> None:
    new = "suites/bridging/test_something_new.py::test_x"
    assert undecided([new, "suites/smoke/test_y.py::test_z"], DEFAULT_SUITES) == [new]
    assert deciding("suites/bridging/test_extended_resource_name.py::test_a") == []
    assert deciding("suites/bridging/test_bridge_unavailable.py::test_a") == []
    assert deciding("suites/mig/test_prioritized_scoring.py::test_a") == ["prioritized-list"]


def test_inventory_ties_go_to_the_newest_personality_compared_with_a_running_plugin() -> None:
    """nvidia-v25.12, nvidia-v0.4 and nvidia-v0.5 publish a full H100 with the same names: the
    inventory of such a device names nvidia-v0.5 and how it was checked."""
    pool = {"name": "p", "nodes": ["n"], "gpus": 1, "profile": "h100-80gb-hbm3"}
    fleet = fleet_from_dict({"pools": [pool | {"personality": "nvidia-v25.12"}]})
    slices = list(render_node(fleet.node("n"), (1, 37)).slices)
    [kind] = inventory(slices, "gpu.nvidia.com", "1.37")
    assert (kind.kind, kind.personality, kind.checked, kind.extra) == (
        "gpu",
        "nvidia-v0.5",
        "compared with the real plugin v0.5.0",
        [],
    )


def test_device_health_without_an_injector_is_not_tested_and_says_so() -> None:
    # the skip's reason as suites/device_health/test_any_driver.py gives it
    no = Reason(
        Kind.PROVIDER, text="how to make one of the driver's devices sick: no --inject-fault-command given"
    )
    result = decide(HEALTH, [_record("skipped", no, nodeid=HEALTH_TEST)])
    assert (result.verdict, result.evidence) == (
        Verdict.NOT_TESTED,
        [
            "test_a_sick_device_is_kept_from_new_claims: how to make one of the driver's devices sick: "
            "no --inject-fault-command given"
        ],
    )
    failed = decide(HEALTH, [_record("failed", message="the fault changed nothing", nodeid=HEALTH_TEST)])
    assert (failed.verdict, failed.evidence) == (Verdict.FAIL, [f"{HEALTH_TEST}: the fault changed nothing"])
    assert decide(HEALTH, [_record("passed", nodeid=HEALTH_TEST)]).verdict is Verdict.PASS


def test_device_health_runs_last_and_a_new_test_in_its_file_decides_it() -> None:
    assert DEFAULT_SUITES[-1] == "suites/device_health/test_any_driver.py"
    assert deciding(HEALTH_TEST) == ["device-health"]
    # the suite is a file: its other tests are held to deciding a capability too
    other = "suites/device_health/test_any_driver.py::test_other"
    assert undecided([other], DEFAULT_SUITES) == []
    assert undecided(["suites/device_health/test_nvidia_device_health.py::t"], DEFAULT_SUITES) == []


def test_the_fault_command_is_checked_and_carried_to_the_suites() -> None:
    kubeconfig = REPO_ROOT / "pyproject.toml"  # any readable file: check_request does not parse it
    req = QualifyRequest(
        kubeconfig, "gpu.acme", "gpu.acme", "nvidia.com/gpu", inject_fault="sick {node} {device}"
    )
    check_request(req)
    assert req.command().endswith(" '--inject-fault-command=sick {node} {device}'")
    assert "--inject-fault-command=sick {node} {device}" in req.pytest_argv(REPO_ROOT)
    bad = QualifyRequest(kubeconfig, "gpu.acme", "gpu.acme", "nvidia.com/gpu", inject_fault="sick {node}")
    with pytest.raises(HarnessError) as err:
        check_request(bad)
    assert str(err.value) == (
        "--inject-fault-command: 'sick {node}' names no {device}: it must say which device to make sick"
    )
