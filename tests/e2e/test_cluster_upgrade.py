"""`dra-harness cluster upgrade`: a named cluster's control plane replaced in place by its
supervisor (harness.clusters.named.upgrade), against real components: a bridged pod keeps its
claim, new pods allocate, the publisher keeps publishing; refusals leave the cluster as it
was; a Ctrl-C of the command leaves the step whole and says so."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator

import pytest

from fixtures.requirements import provider_unmet, skip
from harness.clusters.local.upgrade import CONTROL_PLANE_ORDER, SKEW_POLICY, stored_in_dropped_versions
from harness.clusters.named import records
from harness.clusters.named.upgrade import STEP_TIMEOUT, StepOutcome
from harness.controlplane.build import controlplane_built
from harness.core.versions import load_matrix
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.gang import gang_api, gang_objects
from harness.kit.kube import Kube
from harness.kit.waits import TIMEOUTS, wait_for
from harness.upgrade.rehearsal import pod_allocations, wait_running
from tests.e2e.lifecycle_probe import assert_nothing_left, cli, finish, recorded_ports, remove_cluster

NS = "upgrade"
STEP = re.compile(
    r"^# cluster '(?P<name>[^']+)' upgraded (?P<before>[\d.]+) -> (?P<to>[\d.]+) in (?P<seconds>[\d.]+)s "
    r"\(kube-apiserver [\d.]+s, kube-controller-manager [\d.]+s, kube-scheduler [\d.]+s\)$"
)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> Iterator[str]:
    missing = [m for m in ("1.36", "1.37") if not controlplane_built(load_matrix().minor(m))]
    if missing:
        skip(
            provider_unmet(
                f"control plane {', '.join(missing)} not built: make controlplane K8S={missing[0]}"
            )
        )
    cluster = f"t{os.getpid()}-{request.node.name[5:17].replace('_', '-')}".strip("-")
    yield cluster
    remove_cluster(cluster)


def _up(name: str, minor: str, *extra: str) -> Kube:
    code, _, err = finish(cli("cluster", "up", "--name", name, "-k", minor, *extra), "cluster up")
    assert code == 0, err
    kube = Kube.from_kubeconfig(records.state_dir(name) / "admin.kubeconfig")
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return kube


def _bridged(kube: Kube, pod: str) -> None:
    """One nvidia.com/gpu on the demo fleet's DRA pool: the scheduler makes its claim (KEP-5004)."""
    limits = {"nvidia.com/gpu": "1"}
    kube.create(
        b.pod(pod, NS, containers=[b.container(limits=limits)], node_selector={"dra-harness.io/pool": "h100"})
    )
    wait_running(kube, NS, [pod])


def _upgrade(name: str, to: str) -> tuple[int, str, str]:
    return finish(cli("cluster", "upgrade", "--name", name, "--to", to), f"cluster upgrade --to {to}")


def test_a_named_cluster_upgrades_in_place_and_its_bridged_pod_keeps_its_claim(name: str) -> None:
    kube = _up(name, "1.36")
    _bridged(kube, "before")
    kept = pod_allocations(kube, NS, ["before"])
    [(_, _, [device])] = kept["before"]
    publisher = records.running(name).components["fake-driver-publisher"]  # type: ignore[union-attr]

    code, out, err = _upgrade(name, "1.37")

    assert (code, err) == (0, ""), out
    header, *rest = out.splitlines()
    step = STEP.match(header)
    assert step is not None, out
    kwok = len(kube.list(*kinds.NODE))  # the demo fleet's nodes, no real one
    assert rest == [f"kwok nodes: {kwok}, no kubelet: left as they are"], out
    assert (step["name"], step["before"], step["to"]) == (name, "1.36", "1.37"), out
    outcome = StepOutcome.read(records.state_dir(name))
    assert outcome is not None
    assert (outcome.ok, list(outcome.components)) == (True, list(CONTROL_PLANE_ORDER))
    assert kube.git_version() == "v1.37.2"
    assert wait_running(kube, NS, ["before"]) == {"before": "Running"}
    assert pod_allocations(kube, NS, ["before"]) == kept
    _bridged(kube, "after")
    [(_, _, [other])] = pod_allocations(kube, NS, ["after"])["after"]
    assert other != device
    status = finish(cli("cluster", "status", "--name", name), "cluster status")
    assert status[1].splitlines()[0] == f"# cluster {name!r}: Kubernetes v1.37.2, gates dra-all", status
    h100 = next(line.split() for line in status[1].splitlines() if line.startswith("h100 "))
    assert h100 == ["h100", "2", "2", "16", "2", "0", "2"], status[1]  # both pods bridged there
    record = records.running(name)
    assert record is not None
    assert (record.phase, record.minor) == ("ready", "1.37")
    current = record.components["fake-driver-publisher"]
    assert current.alive(), f"publisher {publisher} -> {current} not running after the step"
    assert finish(cli("cluster", "down", "--name", name), "cluster down")[0] == 0  # the new processes too
    assert_nothing_left(
        records.state_dir(name), recorded_ports(records.state_dir(name)), "down after the step"
    )


def _gang(kube: Kube) -> None:
    for obj in gang_objects(gang_api("1.37"), "gang", NS, min_count=2):
        kube.create(obj)


def _delete_gang(kube: Kube) -> None:
    for obj in reversed(gang_objects(gang_api("1.37"), "gang", NS, min_count=2)):
        kube.delete(obj["apiVersion"], obj["kind"], "gang", NS)


def test_refused_steps_change_nothing_and_an_interrupted_one_is_carried_through(name: str) -> None:
    kube = _up(name, "1.37", "--no-fleet")
    _gang(kube)
    code, out, err = _upgrade(name, "1.36")
    gv = "scheduling.k8s.io/v1beta1"
    assert (code, out) == (1, "")
    assert err.startswith(
        f"dra-harness: cluster {name!r}: 2 object(s) stored as {gv}, which 1.36 cannot read ("
    ), err
    assert err.rstrip().endswith(
        f"delete them before the step: {gv} workloads {NS}/gang, {gv} podgroups {NS}/gang; "
        "nothing changed: the cluster runs 1.37"
    ), err
    assert _upgrade(name, "1.35")[2] == (
        f"dra-harness: cluster {name!r}: 1.37 -> 1.35 skips a minor: kube-apiserver moves one minor at a "
        f"time ({SKEW_POLICY}); step through each minor\n"
    )
    assert (
        _upgrade(name, "1.37")[2] == f"dra-harness: cluster {name!r}: the control plane already runs 1.37\n"
    )
    assert _upgrade("t-no-such-cluster", "1.36")[:2] == (1, "")
    assert records.running(name).minor == "1.37"  # type: ignore[union-attr]
    assert kube.git_version() == "v1.37.2"

    _delete_gang(kube)
    wait_for(
        lambda: stored_in_dropped_versions(kube, "1.37", "1.36"),
        lambda left: left == [],
        timeout=TIMEOUTS.deletion,
        describe="the gang's Workload and PodGroup gone",
    )
    first = cli("cluster", "upgrade", "--name", name, "--to", "1.36")
    upgrading = wait_for(
        lambda: records.read_record(records.state_dir(name)),
        lambda r: r is not None and r.phase.startswith("upgrading"),
        timeout=TIMEOUTS.api_object,
        describe="the record saying the step runs",
    )
    assert upgrading is not None
    assert upgrading.phase == "upgrading 1.37 -> 1.36"
    second = _upgrade(name, "1.36")
    assert second == (
        1,
        "",
        f"dra-harness: cluster {name!r} is busy: another dra-harness command (an upgrade, up or down) holds "
        "its lock; run this again when it is done\n",
    )
    os.kill(first.pid, signal.SIGINT)
    code, out, err = finish(first, "interrupted cluster upgrade")
    assert (code, out) == (130, "")
    assert err.startswith(
        f"dra-harness: interrupted while waiting: the supervisor of cluster {name!r} completes the step "
        "1.37 -> 1.36 as one"
    ), err
    done = wait_for(
        lambda: records.read_record(records.state_dir(name)),
        lambda r: r is not None and r.phase == "ready",
        timeout=STEP_TIMEOUT,
        describe="the interrupted step carried through",
    )
    assert done is not None
    assert done.minor == "1.36"
    assert Kube.from_kubeconfig(records.state_dir(name) / "admin.kubeconfig").git_version() == "v1.36.3"
