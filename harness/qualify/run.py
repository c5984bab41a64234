"""`dra-harness qualify`: preflight, the suites in external mode, the qualification report.

Exit codes (harness.qualify.report.EXIT_CODES, the run's verdict word): 0 PASS, every
capability that ran passed on its first attempt; 3 FAIL, a test failed in any phase or pytest
itself exited 1; 4 NOTHING RAN, not one test passed or failed; 5 FLAKY, a capability passed
only on a rerun; 1 ERROR, the run could not start (bad input, a missing piece found by
preflight, the suites did not run: one line per problem and nothing created on the cluster)
or pytest did not complete (interrupted, an internal or usage error).
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.clusters.host.processes import run_child
from harness.core.drivers import inject_fault_argv, plugin_restart_argv
from harness.core.errors import HarnessError
from harness.core.layout import REPORTS, new_run_id
from harness.core.outputs import check_output
from harness.core.versions import REPO_ROOT
from harness.kit import kinds
from harness.kit.fleet_inventory import parse_selector
from harness.kit.kube import API_ERRORS, Kube, kubeconfig_files
from harness.kit.sonobuoy import results_dir
from harness.qualify.capabilities import Verdict, decide_all
from harness.qualify.inventory import KindInventory, inventory
from harness.qualify.preflight import ClusterFacts, preflight
from harness.qualify.report import Qualification, write_report
from harness.reports.summary import read_summary, what_was_tested

# The suites that say something about a driver; the others test the harness, the fake
# driver or the local provider, and only skip on an external driver.
DEFAULT_SUITES = (
    "suites/bridging",
    "suites/driver",
    "suites/failure_modes",
    "suites/mig",
    "suites/shared_devices",
    "suites/gang",
    "suites/node",
    # last: the device it makes sick stays sick (a driver's fault has no undo qualify knows)
    "suites/device_health/test_any_driver.py",
)
STANDIN_RELEASE = "the harness's stand-in: its fake driver published under this name"


@dataclass(frozen=True)
class ContainerViewArgs:
    """How a container shows its devices (the node-side tests), and the image they run."""

    command: str = ""
    device_pattern: str = ""
    image: str = ""

    def argv(self, prefix: str) -> list[str]:
        pairs = (("command", self.command), ("device-pattern", self.device_pattern), ("image", self.image))
        return [f"--{prefix}-{flag}={value}" for flag, value in pairs if value]


@dataclass(frozen=True)
class QualifyRequest:
    kubeconfig: Path
    driver: str
    device_class: str
    extended_resource: str
    node_selector: str = ""
    suites: tuple[str, ...] = DEFAULT_SUITES
    out: Path | None = None
    view: ContainerViewArgs = ContainerViewArgs()
    release: str = ""  # what the driver is (--driver-spec's module and version), for the header
    pytest_extra: tuple[str, ...] = ()  # a matrix cell's pytest arguments (harness.matrix.realcell)
    in_cluster: bool = False  # the kubeconfig is the pod's service account (harness.kit.incluster)
    plugin_restart: str = ""  # restarts the driver's kubelet plugin on node {node} (node side)
    inject_fault: str = ""  # makes device {device} of node {node} sick (device-health)

    def command(self) -> str:
        """The exact command that reproduces this run."""
        where = [] if self.in_cluster else [f"--kubeconfig={self.kubeconfig}"]
        argv = ["dra-harness", "qualify", *where, f"--driver-name={self.driver}"]
        argv += [f"--device-class={self.device_class}", f"--extended-resource={self.extended_resource}"]
        argv += [f"--node-selector={self.node_selector}"] if self.node_selector else []
        argv += [f"--suite={s}" for s in self.suites] if self.suites != DEFAULT_SUITES else []
        restart = [f"--plugin-restart-command={self.plugin_restart}"] if self.plugin_restart else []
        restart += [f"--inject-fault-command={self.inject_fault}"] if self.inject_fault else []
        return shlex.join([*argv, *self.view.argv("container"), *restart])

    def pytest_argv(self, out: Path, release: str = "") -> list[str]:
        return [
            sys.executable,
            "-m",
            "pytest",
            *self.suites,
            "-p",
            "no:randomly",
            "-q",
            "-rfEs",
            "--cluster-provider=existing",
            f"--kubeconfig={self.kubeconfig.resolve()}",
            "--driver=external",
            f"--driver-name={self.driver}",
            f"--device-class={self.device_class}",
            f"--extended-resource={self.extended_resource}",
            f"--node-selector={self.node_selector}",
            *self.view.argv("container"),
            f"--plugin-restart-command={self.plugin_restart}",
            f"--inject-fault-command={self.inject_fault}",
            f"--driver-release={release or self.release}",
            f"--junitxml={out / 'junit.xml'}",
            f"--summary-json={out / 'summary.json'}",
            *self.pytest_extra,
        ]


def check_request(req: QualifyRequest) -> None:
    """Bad input as one line, before the cluster is asked anything."""
    kubeconfig_files(req.kubeconfig)  # `a:b` merged; a FIFO or /dev/zero refused unread
    try:
        parse_selector(req.node_selector)
    except ValueError as err:
        raise HarnessError(str(err)) from None
    for suite in req.suites:
        if not (REPO_ROOT / suite.partition("::")[0]).exists():
            raise HarnessError(f"suite {suite} does not exist")
    try:
        plugin_restart_argv(req.plugin_restart)
        if req.inject_fault:
            inject_fault_argv(req.inject_fault)
    except ValueError as err:
        raise HarnessError(str(err)) from None
    v = req.view
    if bool(v.command) != bool(v.device_pattern):
        raise HarnessError("--container-command and --container-device-pattern go together")
    try:
        if v.device_pattern and "device" not in re.compile(v.device_pattern).groupindex:
            raise HarnessError("--container-device-pattern needs a (?P<device>...) group")
        shlex.split(v.command)
    except (re.error, ValueError) as err:
        raise HarnessError(f"--container-command/--container-device-pattern: {err}") from None


def _preflight(req: QualifyRequest) -> tuple[ClusterFacts, list[str]]:
    kube = Kube.from_kubeconfig(req.kubeconfig)
    try:
        return preflight(kube, req.driver, req.device_class)
    finally:
        kube.close()


def _inventory(req: QualifyRequest, minor: str) -> list[KindInventory]:
    kube = Kube.from_kubeconfig(req.kubeconfig)
    try:
        return inventory(kube.list(*kinds.RESOURCE_SLICE), req.driver, minor)
    except API_ERRORS as err:
        raise kube.failure(err) from None
    finally:
        kube.close()


def qualify(req: QualifyRequest) -> int:
    check_request(req)
    facts, missing = _preflight(req)
    if missing:
        for line in missing:
            print(f"dra-harness: {line}", file=sys.stderr)
        return 1
    run_id = new_run_id()
    sonobuoy = results_dir()  # inside a Sonobuoy plugin: where its worker waits for `done`
    out = req.out or (Path(sonobuoy) if sonobuoy else REPORTS / f"qualify-{run_id}")
    check_output(out, "results directory", directory=True)
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"dra-harness qualify: {req.driver} on Kubernetes {facts.git_version}; results in {out}", flush=True
    )
    started = time.monotonic()
    code = run_child(req.pytest_argv(out, STANDIN_RELEASE if facts.standin else ""), cwd=REPO_ROOT)
    if not (out / "summary.json").exists():
        raise HarnessError(f"the suites did not run (pytest exit {code}); its output is above")
    summary = read_summary(out / "summary.json")
    q = Qualification(req.driver, req.device_class, req.extended_resource, req.command(), facts)
    q.tested = what_was_tested(summary.cell)
    q.capabilities = decide_all(summary)
    q.inventory = _inventory(req, facts.minor)
    q.totals, q.wall_seconds = summary.totals, time.monotonic() - started
    q.pytest_exit = code
    tarball = write_report(q, out)
    for c in q.capabilities:
        why = f": {c.evidence[0]}" if c.evidence and c.verdict is not Verdict.PASS else ""
        ran = c.headline.removeprefix(str(c.verdict)).removeprefix(", ")  # "4 of 6 ran; ..."
        print(f"{c.verdict!s:<13} {c.capability.id}{f' ({ran})' if ran else ''}{why}")
    if q.verdict is Verdict.ERROR:
        print(f"dra-harness qualify: pytest exit {code}: the run did not complete", file=sys.stderr)
    print(f"{q.verdict}: report {out / 'qualify.html'}; results: {tarball}; exit {q.exit_code}")
    return q.exit_code
