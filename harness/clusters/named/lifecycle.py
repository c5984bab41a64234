"""Named long-lived local clusters: what `dra-harness cluster up|down|delete` do.

The name's lock (records.locked) is held only while a command reads the record and changes
what runs (spawn a supervisor, stop one), so `down` during a start stops that start, and two
`up`s of one name make one cluster. Where state lives: harness.clusters.named.records.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from harness.clusters.host.identity import ProcessIdentity
from harness.clusters.host.processes import log_tail
from harness.clusters.local.upgrade import kubelet_refusal
from harness.clusters.named import gpufleet
from harness.clusters.named.records import (
    LOG,
    RECORD,
    ClusterRecord,
    clusters_root,
    disk_usage,
    locked,
    read_record,
    running,
    state_dir,
    validate_name,
    write_record,
)
from harness.clusters.realnodes.external import check_driver_names, external_plugin
from harness.clusters.realnodes.pools import cluster_up_pool, real_node_parts
from harness.controlplane.build import ensure_controlplane, ensure_kwok
from harness.core.errors import HarnessError, WaitTimeout
from harness.core.versions import REPO_ROOT, GateProfile, Minor, load_matrix
from harness.kit.waits import TIMEOUTS, wait_for

READY_TIMEOUT = TIMEOUTS.component_ready * 3
# `up` tells the supervisor it reported the cluster ready: only then does it outlive `up`.
ACKNOWLEDGE = signal.SIGUSR1


def up(
    name: str,
    minor: Minor,
    profile: GateProfile,
    *,
    explicit: bool,
    real_nodes: int = 0,
    fleet: Path | None = None,
    driver: str = "",
    kubelet: str | None = None,
) -> tuple[ClusterRecord, bool]:
    """Start the named cluster, or attach to the one starting or running under that name.
    Returns (record once ready, whether it was already there). `explicit`: the caller named a
    version or profile, so a running cluster of another one is an error, not a match.
    An interrupt (or any failure) before ready stops everything this call started."""
    directory = state_dir(name)
    spawned: subprocess.Popen[bytes] | None = None
    try:
        with locked(name):
            record = read_record(directory)
            if record is not None and record.supervisor.alive():
                _refuse_other_cell(record, minor, profile, explicit)
            else:
                _clear_stale(directory, record)
                spawned, record = _spawn(directory, name, minor, profile, real_nodes, fleet, driver, kubelet)
        return _await_ready(directory, record, spawned), spawned is None
    except BaseException:
        if spawned is not None:
            _stop_supervisor(ProcessIdentity(spawned.pid, 0.0), spawned)
        raise


def start(
    name: str,
    k8s_version: str | None,
    gates: str | None,
    real_nodes: int = 0,
    fleet: Path | None = None,
    driver: str = "",
    kubelet: str | None = None,
) -> tuple[ClusterRecord, bool]:
    """`dra-harness cluster up`: check the name, the cell and the fleet file, build what is
    missing in the foreground (where its progress is visible), then `up`. A version or
    profile left out matches whatever the named cluster runs. `kubelet`: the real nodes'
    minor when it is not the cluster's (older, within the version-skew policy)."""
    validate_name(name)
    matrix = load_matrix()
    minor = matrix.minor(k8s_version or matrix.default_minor)
    profile = minor.profile(gates or matrix.default_profile)
    if kubelet is not None:  # the real nodes' minor: known, and one the skew policy allows
        kubelet = matrix.minor(kubelet).name
        refusal = "give --real-nodes N too" if not real_nodes else kubelet_refusal(minor.name, kubelet)
        if refusal:
            raise HarnessError(f"--kubelet {kubelet}: {refusal}")
    if driver and not real_nodes:
        raise HarnessError("--driver runs on real nodes: give --real-nodes N too")
    fake = gpufleet.read_fleet(fleet).drivers if fleet is not None else ()  # one line now
    if real_nodes:  # before any build: an unbuilt kubelet or driver is one line, nothing started
        plugin = external_plugin(driver) if driver else None
        if plugin is not None:
            check_driver_names([*(("the fake driver's fleet", d) for d in fake), (driver, plugin.driver)])
        try:
            real_node_parts(matrix, minor, [cluster_up_pool(real_nodes, driver, kubelet)])
        except HarnessError as err:
            if kubelet or not minor.kubelet_unavailable:
                raise
            raise HarnessError(f"{err}; --kubelet MINOR runs an older minor's kubelet under it") from None
    if running(name) is None:
        ensure_controlplane(minor)
        ensure_kwok(matrix)
    explicit = k8s_version is not None or gates is not None
    return up(
        name,
        minor,
        profile,
        explicit=explicit,
        real_nodes=real_nodes,
        fleet=fleet,
        driver=driver,
        kubelet=kubelet,
    )


def acknowledge(record: ClusterRecord) -> None:
    """Call after telling the user the cluster is ready: until then, an `up` killed outright
    takes its start down with it."""
    record.supervisor.signal(ACKNOWLEDGE)


def down(name: str) -> bool:
    """Stop the named cluster (also while it starts); False when nothing was running."""
    directory = state_dir(name)
    with locked(name):
        record = read_record(directory)
        was_running = record is not None and record.supervisor.alive()
        if record is not None:
            _stop_supervisor(record.supervisor, None)
            _kill_components(record)
            (directory / RECORD).unlink(missing_ok=True)
    return was_running


def delete(name: str) -> int:
    """Remove a stopped cluster's directory and lock file; the bytes freed. A running one is
    refused (`cluster down` first): its components write there."""
    directory = state_dir(name)
    with locked(name):
        if running(name) is not None:
            raise HarnessError(f"cluster {name!r} is running: `dra-harness cluster down --name {name}` first")
        if not directory.is_dir():
            raise HarnessError(
                f"no cluster {name!r} in {clusters_root()}; `dra-harness cluster list` shows them"
            )
        size, _ = disk_usage(directory)
        shutil.rmtree(directory)  # state_dir() proved it is ours and under the cache
    (clusters_root() / f"{name}.lock").unlink(missing_ok=True)
    return size


def _refuse_other_cell(record: ClusterRecord, minor: Minor, profile: GateProfile, explicit: bool) -> None:
    if explicit and (record.minor, record.profile) != (minor.name, profile.name):
        raise HarnessError(
            f"cluster {record.name!r} is {record.phase} with Kubernetes {record.minor} ({record.profile}), "
            f"not {minor.name} ({profile.name}): `dra-harness cluster down --name {record.name}` first, "
            "or choose another --name"
        )


def _clear_stale(directory: Path, record: ClusterRecord | None) -> None:
    """A new start: nothing of a dead supervisor's is kept, so logs and errors are this start's."""
    if record is not None:
        _kill_components(record)
    if directory.exists():
        shutil.rmtree(directory)  # state_dir() proved it is ours and under the cache
    directory.mkdir(parents=True, mode=0o700)


def _spawn(
    directory: Path,
    name: str,
    minor: Minor,
    profile: GateProfile,
    real_nodes: int,
    fleet: Path | None,
    driver: str = "",
    kubelet: str | None = None,
) -> tuple[subprocess.Popen[bytes], ClusterRecord]:
    argv = [sys.executable, "-m", "harness.clusters.named.supervisor", "--state-dir", str(directory)]
    argv += ["--k8s-version", minor.name, "--gates", profile.name, "--owner-pid", str(os.getpid())]
    argv += [f"--real-nodes={real_nodes}"] if real_nodes else []
    argv += [f"--driver={driver}"] if driver else []
    argv += [f"--kubelet={kubelet}"] if kubelet else []
    argv += ["--fleet", str(fleet.resolve())] if fleet else []
    with (directory / LOG).open("wb") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches `up`, which stops the start in order
            cwd=REPO_ROOT,
        )
    try:
        record = ClusterRecord(
            name,
            minor.name,
            minor.kubernetes,
            profile.name,
            "starting",
            ProcessIdentity.of(proc.pid),
            str(directory / "admin.kubeconfig"),
        )
        write_record(directory, record)
    except BaseException:
        _stop_supervisor(ProcessIdentity(proc.pid, 0.0), proc)
        raise
    return proc, record


def _await_ready(
    directory: Path, record: ClusterRecord, proc: subprocess.Popen[bytes] | None
) -> ClusterRecord:
    def observe() -> ClusterRecord | None:
        if (proc.poll() is not None) if proc is not None else not record.supervisor.alive():
            tail = log_tail(directory / LOG).strip() or "<the supervisor wrote nothing>"
            raise HarnessError(f"cluster {record.name!r} did not start:\n{tail}")
        return read_record(directory)

    try:
        ready = wait_for(
            observe,
            lambda r: r is not None and r.phase == "ready" and r.supervisor == record.supervisor,
            timeout=READY_TIMEOUT,
            describe=f"cluster {record.name!r} ready",
        )
    except WaitTimeout:  # its message holds the whole record: one line says what matters
        last = (log_tail(directory / LOG, 1).strip() or "nothing").splitlines()[-1]
        raise HarnessError(
            f"cluster {record.name!r} was not ready within {READY_TIMEOUT:g} s and is stopped; "
            f"its supervisor's last line: {last[:200]}; logs in {directory / 'logs'}"
        ) from None
    assert ready is not None
    return ready


def _stop_supervisor(identity: ProcessIdentity, proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM (it stops its components in order), bounded; SIGKILL after (its components
    die with it through PR_SET_PDEATHSIG)."""
    if proc is not None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    else:
        identity.signal(signal.SIGTERM)

    def gone() -> bool:
        return proc.poll() is not None if proc is not None else not identity.alive()

    try:
        wait_for(gone, timeout=TIMEOUTS.deletion, describe=f"supervisor pid {identity.pid} to exit")
    except WaitTimeout:
        if proc is None:
            identity.kill()
            return
        proc.kill()
        try:  # a process in uninterruptible I/O (a loaded machine) dies when that returns
            proc.wait(timeout=TIMEOUTS.deletion)
        except subprocess.TimeoutExpired:
            raise HarnessError(
                f"the supervisor (pid {identity.pid}) did not exit within {TIMEOUTS.deletion:g} s of SIGTERM "
                f"nor {TIMEOUTS.deletion:g} s of SIGKILL; its components die with it (PR_SET_PDEATHSIG)"
            ) from None


def _kill_components(record: ClusterRecord) -> None:
    # Only processes that are still the very ones recorded: a reused PID is left alone.
    for component in record.components.values():
        component.kill()
