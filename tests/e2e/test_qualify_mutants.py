"""A verdict is worth what it catches: `dra-harness qualify` of planted-bug builds of the
example driver (mutants/example-v0.4.0/*.patch, make mutants) on a real node, each with only
the node-side test its bug belongs to, must say FAIL for node-side with the bug's symptom in
the evidence and exit with FAIL's code; the unmutated release passes the same tests, exit 0.
Nothing of a run (the plugin's process, a node's mount) outlives its cluster.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane.driverparts import driver_path
from harness.controlplane.mutantparts import (
    mutant_built,
    mutant_names,
    mutant_path,
    not_built_line,
    patch_dir,
)
from harness.core.drivers import driver_ref
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.qualify.report import EXIT_CODES
from harness.reports.verdicts import Word
from tests.support.realdriver import real_driver_cluster, real_driver_missing

DRIVER = "example@v0.4.0"
VIEW = "suites/node/test_container_view.py::"
SEES = VIEW + "test_the_container_sees_exactly_its_claimed_device_and_its_neighbour_none"
CALLS = VIEW + "test_prepare_and_unprepare_are_called_once_and_the_claim_is_released"
RESTART = VIEW + "test_a_plugin_restart_keeps_the_running_pod_and_serves_a_new_one"
pytestmark = [pytest.mark.real_node]


@dataclass(frozen=True)
class Case:
    suites: tuple[str, ...]
    symptom: str  # a regex the FAIL evidence must match (exact text, groups for device names)
    check: Callable[[re.Match[str]], bool] = lambda m: True


def _neighbour(m: re.Match[str]) -> bool:
    return int(m["shown"]) == int(m["allocated"]) ^ 1  # the patch's gpu-N^1


CASES = {
    "wrong-device": Case(
        (SEES,),
        r"the claiming container shows \['gpu-(?P<shown>\d)'\], allocated gpu-(?P<allocated>\d)",
        _neighbour,
    ),
    "extra-device": Case(
        (SEES,),
        r"the claiming container shows \['gpu-(?P<a>\d)', 'gpu-(?P<b>\d)'\], allocated gpu-(?P<c>\d)",
        lambda m: m["c"] in (m["a"], m["b"]) and int(m["a"]) == int(m["b"]) ^ 1,
    ),
    "unprepare-error": Case(
        (CALLS,),
        r"waiting for claim [\w-]+/[\w-]+ released with its pod; last observed:\s+\['[\w-]+'\]; "
        r"failed on mx-0: \['\d+ UnprepareResources with an error'\]",
    ),
    "cdi-left-behind": Case(
        (CALLS,),
        r"CDI spec of claim [\w-]+ left on mx-0 after NodeUnprepareResources: "
        r"\['/var/run/cdi/k8s\.gpu\.example\.com-gpu_[0-9a-f-]{36}\.yaml'\]",
    ),
    "slow-first-prepare": Case((CALLS,), r"failed on mx-0: \['1 NodePrepareResources DeadlineExceeded'"),
    "forgets-after-restart": Case(
        (RESTART,),
        r"CDI spec of claim [\w-]+, prepared before the plugin restart, left on mx-0 after "
        r"NodeUnprepareResources: \['/var/run/cdi/k8s\.gpu\.example\.com-gpu_[0-9a-f-]{36}\.yaml'\]",
    ),
    "renamed-device": Case(
        (SEES,),
        r"allocated \{[^}]*'device': 'gpu-\d'[^}]*\} is not a device the driver publishes for node mx-0",
    ),
}
# the unmutated release, with every test a mutant runs
NONE = "none"
ALL_SUITES = tuple(dict.fromkeys(s for c in CASES.values() for s in c.suites))


def test_every_mutant_has_a_case() -> None:
    spec, version = driver_ref(DRIVER)
    assert sorted(CASES) == mutant_names(spec, version), f"{patch_dir(spec, version)} and CASES differ"


@pytest.mark.parametrize("mutant", [NONE, *CASES])
def test_qualify_fails_the_mutant_on_its_capability(
    mutant: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    spec, version = driver_ref(DRIVER)
    if why := real_driver_missing(DRIVER):
        pytest.skip(why)
    if mutant != NONE and mutant_built(spec, version, mutant) is None:
        pytest.skip(not_built_line(spec, version, mutant))
    pool = RealPoolSpec("mx", count=1, gpus=2, driver=DRIVER, mutant="" if mutant == NONE else mutant)
    suites = ALL_SUITES if mutant == NONE else CASES[mutant].suites
    out = tmp_path / "results"
    run_dir = tmp_path / "cluster"
    with real_driver_cluster(run_dir, [pool]) as env:
        published = _pool(env.kube)
        started = time.monotonic()
        done = env.qualify(DRIVER, out, suites)
        took = time.monotonic() - started
        republished = _pool(env.kube)
        assert env.cluster.real is not None
        plugin = env.cluster.real.plugins["mx"].binary
        # what the check after the teardown looks for is seen while it runs
        assert any(f" {plugin} " in f" {p} " for p in _processes(run_dir)), _processes(run_dir)
        assert plugin == (
            mutant_path(spec, version, mutant) if mutant != NONE else driver_path(spec, version)
        )
    record_property("qualify_seconds", round(took))

    report = json.loads((out / "qualify.json").read_text())
    [node_side] = [c for c in report["capabilities"] if c["id"] == "node-side"]
    if mutant == NONE:
        assert (done.returncode, node_side["verdict"]) == (0, "PASS"), done.stdout[-4000:] + done.stderr
        assert node_side["counts"] == {"passed": len(suites), "failed": 0, "skipped": 0, "errors": 0}
    else:
        case = CASES[mutant]
        assert (done.returncode, node_side["verdict"]) == (EXIT_CODES[Word.FAIL], "FAIL"), (
            done.stdout[-4000:] + done.stderr
        )
        [nodeid] = case.suites
        [evidence] = [e for e in node_side["evidence"] if e.startswith(nodeid + ": ")]
        match = re.search(case.symptom, evidence)
        assert match is not None, evidence
        assert case.check(match), evidence
    if mutant == "renamed-device":  # the first prepared device renamed, the generation kept
        generation, devices = published
        renamed = [d for d in republished[1] if d not in devices]
        assert (republished[0], len(renamed)) == (generation, 1), (published, republished)
        gone = [d for d in devices if d not in republished[1]]
        assert gone == [renamed[0].removesuffix("-renamed")], (published, republished)
    else:
        assert republished == published
    print(f"{mutant}: node-side {node_side['verdict']}, qualify {took:.0f}s: {node_side['evidence']}")
    _assert_nothing_left(mutant, run_dir)


def _pool(kube: Kube) -> tuple[int, list[str]]:
    """The generation and device names of the driver's pool on the node (one slice)."""
    [published] = [s for s in kube.list(*kinds.RESOURCE_SLICE) if s["spec"]["driver"] == "gpu.example.com"]
    spec = published["spec"]
    return spec["pool"]["generation"], sorted(d["name"] for d in spec["devices"])


def _processes(run_dir: Path) -> list[str]:
    """Processes of a run: those naming its directory, as the plugin's --kubeconfig and the
    nodes' kubelets and containerds do (the unmutated binary is shared with other runs, so its
    path alone says nothing)."""
    running = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile
            continue
        if proc.name.isdigit() and any(str(run_dir) in word for word in argv):
            running.append(f"{proc.name} {' '.join(argv)[:200]}")
    return running


def _assert_nothing_left(mutant: str, run_dir: Path) -> None:
    """No process of the run and no mount under its directory."""
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(run_dir) in line]
    running = _processes(run_dir)
    assert (running, mounts) == ([], []), f"left by {mutant}: processes {running}, mounts {mounts}"
