"""`dra-harness cluster upgrade --name N --to 1.37`: the in-place upgrade (or downgrade) of a
named cluster (harness.clusters.named.lifecycle), carried out by its supervisor, which owns the
components (they die with it) and keeps the fake driver publishing.

The command checks what it can without touching the cluster (the name, the minor, the skew
policy's one minor at a time, the profile), takes the name's lock, refusing at once when
another command holds it, then asks the API server for objects stored in a version the target
cannot read, and only then for a built control plane (no long build in the middle of a step,
and no build asked for a step that cannot happen); it writes the request and signals the
supervisor (UPGRADE). The supervisor runs harness.clusters.local.upgrade.upgrade
(the same refusals: kubelet skew, objects stored in a version the target cannot read) with
its stop signals blocked, so a step is never cut in two: a `cluster down` waits for it, and a
Ctrl-C of the command only stops the waiting. Meanwhile its record's phase says
"upgrading A -> B"; the outcome goes to upgrade-result.json after the record names the new
version.

Real nodes take the step as the rehearsal's (harness.clusters.local.kubelets): after the
control plane, each node whose kubelet ran the old minor is cordoned, drained (`--kubelets
drain`, the default, upstream's documented way), given the target's kubelet and uncordoned;
`--kubelets keep` leaves them at their minor (the skew the policy allows). A target kubelet
that is not built is refused here, before the lock and the control plane: never a control
plane stepped and its kubelets not. Kwok nodes have no kubelet: they stay as they are.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.clusters.host.processes import exit_code, log_tail
from harness.clusters.local.kubelets import DEFAULT_KUBELET_MODE, KUBELET_MODES, nodes_to_swap
from harness.clusters.local.upgrade import (
    CONTROL_PLANE_ORDER,
    UpgradeRefused,
    skew_refusal,
    stored_refusal,
    upgrade,
)
from harness.clusters.named.records import LOG, ClusterRecord, locked, running, state_dir, validate_name
from harness.controlplane.build import controlplane_built
from harness.controlplane.nodeparts import kubelet_built
from harness.core.errors import HarnessError, WaitTimeout
from harness.core.versions import Minor, load_matrix
from harness.kit import kinds
from harness.kit.kube import API_ERRORS, Kube
from harness.kit.waits import TIMEOUTS, wait_for

if TYPE_CHECKING:
    from harness.clusters.local.cluster import LocalCluster

UPGRADE = signal.SIGUSR2
REQUEST = "upgrade-request.json"
RESULT = "upgrade-result.json"
# Three components restarted, each bounded by component_ready, and the checks before them.
STEP_TIMEOUT = TIMEOUTS.component_ready * 4
# Per real node swapped: its pods evicted, its claims unprepared, its kubelet Ready.
NODE_TIMEOUT = TIMEOUTS.deletion * 2 + TIMEOUTS.node_ready


def step_timeout(nodes: int) -> float:
    return STEP_TIMEOUT + nodes * NODE_TIMEOUT


@dataclass(frozen=True)
class StepOutcome:
    """What the supervisor did with one request (upgrade-result.json)."""

    id: str
    before: str
    to: str
    ok: bool
    message: str
    seconds: float = 0.0
    components: dict[str, float] = field(default_factory=dict)  # per component, in order
    kubelets: str = DEFAULT_KUBELET_MODE  # what the step did to real nodes' kubelets
    # real node -> [its kubeletVersion before, after] (the Node's status.nodeInfo)
    nodes: dict[str, list[str]] = field(default_factory=dict)
    kwok_nodes: int = 0  # nodes without a kubelet: left as they are

    @classmethod
    def read(cls, directory: Path) -> StepOutcome | None:
        try:
            data: Any = json.loads((directory / RESULT).read_text())
            return cls(**data) if isinstance(data, dict) else None
        except (OSError, ValueError, TypeError):
            return None

    def write(self, directory: Path) -> None:
        _write_json(directory / RESULT, asdict(self))


class Interrupted(Exception):
    """Ctrl-C while the command waited: `state` says what the cluster is left running."""

    def __init__(self, state: str, code: int):
        super().__init__(state)
        self.state, self.code = state, code


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)  # readers never see half a file


def check_request(name: str, to: str, kubelets: str = DEFAULT_KUBELET_MODE) -> tuple[ClusterRecord, str]:
    """The record of the running cluster and the target minor's name, or one line why not:
    what can be told without the cluster's lock or its API server (name, minor, skew with the
    kubelets as they will be, profile, the target's kubelet built when real nodes take it).
    A step that cannot happen never asks for a build (check_step comes after)."""
    validate_name(name)
    matrix = load_matrix()
    target = matrix.minor(to)
    record = running(name)
    if record is None:
        raise HarnessError(
            f"cluster {name!r} is not running: `dra-harness cluster up --name {name}` starts it"
        )
    swapped = nodes_to_swap(record.kubelets, record.minor, target.name, kubelets)
    after = [target.name if n in swapped else m for n, m in record.kubelets.items()]
    refusal = skew_refusal(record.minor, target.name, after)
    if refusal:
        raise UpgradeRefused(f"cluster {name!r}: {refusal}")
    target.profile(record.profile)  # a profile the target does not define: one line
    if swapped and (why := _kubelet_missing(target)):
        raise UpgradeRefused(
            f"cluster {name!r}: real node(s) {', '.join(swapped)} would take {why}; "
            f"nothing changed: the cluster runs {record.minor} (`--kubelets keep` leaves them at it)"
        )
    return record, target.name


def _kubelet_missing(target: Minor) -> str:
    """Why the target's kubelet cannot be swapped in now ("" when it is built)."""
    if target.kubelet_unavailable:
        return f"the kubelet {target.kubernetes}, which cannot be built: {target.kubelet_unavailable}"
    if kubelet_built(target) is None:
        return (
            f"the kubelet {target.kubernetes}, which is not built: run "
            f"`make nodeparts K8S={target.name}` first"
        )
    return ""


def check_step(record: ClusterRecord, to: str) -> None:
    """Under the lock, with the cluster ready: objects stored in a version the target cannot
    read (asked of its API server), then a built control plane, last."""
    stranded = stored_refusal(Path(record.kubeconfig), record.minor, to)
    if stranded:
        unchanged = f"nothing changed: the cluster runs {record.minor}"
        raise UpgradeRefused(f"cluster {record.name!r}: {stranded}; {unchanged}")
    target = load_matrix().minor(to)
    if not controlplane_built(target):  # a build takes minutes: not in the middle of a step
        raise HarnessError(
            f"the control plane of Kubernetes {target.kubernetes} is not built: run "
            f"`make controlplane K8S={target.name}` (or `dra-harness controlplane build -k {target.name}`), "
            "then this again"
        )


def request_upgrade(name: str, to: str, kubelets: str = DEFAULT_KUBELET_MODE) -> StepOutcome:
    """Have the supervisor of `name` step its control plane to `to`, then its real nodes'
    kubelets as `kubelets` says; its outcome (not ok: refused or failed, with the reason).
    Raises Interrupted on Ctrl-C, saying what runs."""
    if kubelets not in KUBELET_MODES:
        raise HarnessError(f"--kubelets {kubelets!r}: one of {', '.join(KUBELET_MODES)}")
    record, target = check_request(name, to, kubelets)
    directory = state_dir(name)
    busy = (
        f"cluster {name!r} is busy: another dra-harness command (an upgrade, up or down) holds its "
        "lock; run this again when it is done"
    )
    with locked(name, busy=busy):
        current = running(name)
        if current is None or current.supervisor != record.supervisor:
            raise HarnessError(f"cluster {name!r} stopped or restarted meanwhile; run this again")
        if current.phase != "ready" or current.minor != record.minor:
            raise HarnessError(
                f"cluster {name!r} is {current.phase} on {current.minor}; run this again later"
            )
        check_step(current, target)
        request_id = uuid.uuid4().hex
        carried_through = (
            f"interrupted while waiting: the supervisor of cluster {name!r} completes the step "
            f"{current.minor} -> {target} as one (or, if the new API server does not serve, goes back "
            f"to {current.minor}); `dra-harness cluster status --name {name}` shows which"
        )
        written = False
        try:
            body = {"id": request_id, "before": current.minor, "to": target, "kubelets": kubelets}
            _write_json(directory / REQUEST, body)
            written = True
            delivered = current.supervisor.signal(UPGRADE)
        except KeyboardInterrupt as stop:
            raise Interrupted(
                _withdraw(directory, name, current.minor, written, carried_through), exit_code(stop)
            ) from stop
        if not delivered:
            raise HarnessError(
                f"cluster {name!r}: its supervisor exited; `dra-harness cluster up --name {name}`"
            )
        try:
            swapped = nodes_to_swap(current.kubelets, current.minor, target, kubelets)
            return _await_outcome(directory, current, request_id, step_timeout(len(swapped)))
        except KeyboardInterrupt as stop:
            raise Interrupted(carried_through, exit_code(stop)) from stop


def _withdraw(directory: Path, name: str, minor: str, written: bool, taken: str) -> str:
    """Ctrl-C before the request was surely delivered: a request still there is removed (the
    supervisor now never takes it); one already gone was taken, and its step runs (`taken`)."""
    try:
        if written:
            (directory / REQUEST).unlink()
    except FileNotFoundError:
        return taken
    return f"interrupted before the upgrade began: cluster {name!r} runs {minor}"


def _await_outcome(directory: Path, record: ClusterRecord, request_id: str, timeout: float) -> StepOutcome:
    def observe() -> StepOutcome | None:
        if not record.supervisor.alive():
            tail = log_tail(directory / LOG).strip() or "<the supervisor wrote nothing>"
            raise HarnessError(f"cluster {record.name!r}: the supervisor exited during the upgrade:\n{tail}")
        return StepOutcome.read(directory)

    outcome = wait_for(
        observe,
        lambda o: o is not None and o.id == request_id,
        timeout=timeout,
        describe=f"cluster {record.name!r}: the supervisor's answer to the upgrade request",
    )
    assert outcome is not None
    return outcome


def take_request(directory: Path) -> dict[str, str] | None:
    """The pending request, removed so it is carried out once (None: a stray signal)."""
    try:
        data = json.loads((directory / REQUEST).read_text())
    except (OSError, ValueError):
        return None
    (directory / REQUEST).unlink(missing_ok=True)
    keys = ("id", "before", "to")
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in keys):
        return None
    mode = data.get("kubelets", DEFAULT_KUBELET_MODE)
    return {**{k: data[k] for k in keys}, "kubelets": str(mode)}


def carry_out(cluster: LocalCluster, request: dict[str, str]) -> StepOutcome:
    """The step, in the supervisor: refused or failed steps come back as not ok."""
    before, to = cluster.minor.name, request["to"]
    if request["before"] != before:  # the record said otherwise when it was asked
        message = f"the cluster runs {before}, not {request['before']}: nothing changed"
        return StepOutcome(request["id"], before, to, False, message)
    timings: dict[str, float] = {}
    mode = request.get("kubelets", DEFAULT_KUBELET_MODE)
    versions_before, kwok = node_versions(cluster)
    try:
        # The rehearsal's step (LocalCluster.upgrade): the control plane, then real nodes'
        # kubelets as `mode` says; the kubelet's parts are checked before anything stops.
        seconds = upgrade(cluster, to, kubelets=mode, timings=timings)
    except UpgradeRefused as err:
        message = f"{err}; nothing changed: the cluster runs {before}"
        return StepOutcome(request["id"], before, to, False, message, kubelets=mode)
    except (HarnessError, WaitTimeout) as err:  # a component or a node did not come up
        missing = [c for c in CONTROL_PLANE_ORDER if c not in cluster.pids()]
        now = f"the cluster runs {cluster.minor.name}" + (f" without {', '.join(missing)}" if missing else "")
        first, *rest = str(err).splitlines() or [""]  # the command prints the first line
        message = "\n".join([f"{first}; {now}", *rest])
        return StepOutcome(request["id"], before, to, False, message, components=timings, kubelets=mode)
    versions_after, _ = node_versions(cluster)
    nodes = {n: [v, versions_after.get(n, "")] for n, v in versions_before.items()}
    message = f"{before} -> {to}"
    return StepOutcome(request["id"], before, to, True, message, seconds, timings, mode, nodes, kwok)


def node_versions(cluster: LocalCluster) -> tuple[dict[str, str], int]:
    """Each real node's kubeletVersion as its Node reports it, and how many nodes are not
    real (kwok's: no kubelet)."""
    real = set(cluster.real.minors) if cluster.real is not None else set()
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    try:
        found = kube.list(*kinds.NODE)
    except API_ERRORS:  # not serving (a failed step): the report has no versions, not a crash
        return {n: "" for n in real}, 0
    finally:
        kube.close()
    versions = {
        n["metadata"]["name"]: n.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", "")
        for n in found
        if n["metadata"]["name"] in real
    }
    return versions, len(found) - len(versions)


def phase_after(cluster: LocalCluster) -> str:
    """The record's phase once a step is over: "ready", or what is missing."""
    missing = [c for c in CONTROL_PLANE_ORDER if c not in cluster.pids()]
    return "ready" if not missing else f"degraded ({', '.join(missing)} not running)"
