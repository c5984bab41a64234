"""Keeps one LocalCluster running in the background for `dra-harness cluster up`.

Run as `python -m harness.clusters.named.supervisor --state-dir D --k8s-version V --gates G
--owner-pid P` (by harness.clusters.named.lifecycle, never by hand). It owns every component from the
first one it starts:
- while starting, SIGTERM/SIGINT stop what was started so far, and so does the death of the
  `up` that spawned it (PR_SET_PDEATHSIG), so an interrupted `up` leaves nothing;
- once ready it records itself and its components in supervisor.json; it detaches from its
  owner only when `up` acknowledges (SIGUSR1) after telling the user, so an `up` killed
  before it reported success still leaves nothing; then it blocks until SIGTERM or SIGINT
  (`cluster down`);
- if it is killed outright, its components die with it (their own PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import select
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import tenacity

from fake_driver.core.errors import FakeDriverError
from harness.clusters.host.identity import ProcessIdentity
from harness.clusters.host.processes import ManagedProcess, exit_code, install_signal_teardown
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.local.components import BY_NAME
from harness.clusters.named.lifecycle import ACKNOWLEDGE
from harness.clusters.named.records import ClusterRecord, write_record
from harness.clusters.named.upgrade import UPGRADE, carry_out, phase_after, take_request
from harness.clusters.realnodes.pools import cluster_up_pool
from harness.core.errors import HarnessError

_PR_SET_PDEATHSIG = 1
_STOP = {signal.SIGTERM, signal.SIGINT}
_WAITED = {*_STOP, ACKNOWLEDGE, UPGRADE}  # what the ready supervisor sigwaits for


def _die_with_owner(signum: int) -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signum)


class _OwnerWatch:
    """A second line behind PR_SET_PDEATHSIG: a pidfd on the owner, so its death stops the
    start even if that signal was lost (a CI run once saw a supervisor go on starting after
    its `up` was SIGKILLed). Re-sent each second until the main thread starts stopping."""

    def __init__(self, owner_pid: int) -> None:
        self._pidfd = os.pidfd_open(owner_pid)
        self._done = threading.Event()
        self._main = threading.main_thread().ident
        # Started with every stop signal blocked, which it keeps: a `cluster down` must reach the
        # main thread's sigwait, not this one.
        before = signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)
        try:
            threading.Thread(target=self._watch, name="owner-watch", daemon=True).start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self._pidfd, select.POLLIN)
        while not self._done.is_set() and not poller.poll(500):
            pass
        while not self._done.is_set():
            assert self._main is not None
            signal.pthread_kill(self._main, signal.SIGTERM)  # to the main thread: it unwinds
            self._done.wait(1.0)

    def release(self) -> None:
        """Acknowledged, or stopping: the owner's death no longer matters."""
        self._done.set()


# A publisher that keeps dying (a bad kubeconfig, an API server refusing it) is restarted
# after 1, 2, 4, ... s, at most RESTART_MAX_DELAY apart; one that stayed up for STABLE_SECONDS
# starts the sequence afresh.
RESTART_MAX_DELAY = 30.0
STABLE_SECONDS = 60.0
_RESTART_WAIT = tenacity.wait_exponential(multiplier=1.0, min=1.0, max=RESTART_MAX_DELAY)


def restart_delay(failures: int) -> float:
    """Seconds to wait before the restart after `failures` consecutive exits (1, 2, 4, ...)."""
    state = tenacity.RetryCallState(retry_object=tenacity.Retrying(), fn=None, args=(), kwargs={})
    state.attempt_number = failures
    return float(_RESTART_WAIT(state))


class _Fleet:
    """The GPU fleet (harness.clusters.named.gpufleet) and its publisher, restarted with a backoff if
    it dies."""

    def __init__(self, fleet_file: Path, cluster: LocalCluster, state_dir: Path) -> None:
        from harness.clusters.named import gpufleet
        from harness.kit.kube import Kube

        copy = state_dir / gpufleet.FLEET_COPY
        if fleet_file.resolve() != copy.resolve():
            shutil.copyfile(fleet_file, copy)
        kube, fleet = Kube.from_kubeconfig(cluster.kubeconfig), gpufleet.read_fleet(copy)
        try:
            gpufleet.create_fleet(kube, fleet)
        except FakeDriverError as err:  # e.g. the installer's device-plugin guard
            raise HarnessError(f"fleet {fleet_file}: {err}") from None
        argv = gpufleet.publisher_argv(copy, cluster.kubeconfig)
        self.publisher = ManagedProcess(
            "fake-driver-publisher", argv, cluster.log_path("fake-driver-publisher")
        )
        self.publisher.start()
        try:
            gpufleet.wait_published(kube, fleet, self.publisher.check_running)
        except BaseException:  # the supervisor's teardown knows no fleet yet
            self.publisher.stop()
            raise
        self.started = time.monotonic()
        self.restarts = 0
        self.failures = 0  # exits since the publisher last stayed up STABLE_SECONDS
        self.due: float | None = None  # when the pending restart may happen

    def restart_now(self) -> None:
        """After a control-plane step: a publisher the step's API server restart ended is
        started at once, not after its backoff."""
        if not self.publisher.running():
            self.due, self.failures, self.started = None, 0, time.monotonic()
            self.restarts += 1
            self.publisher.start()

    def keep_running(self, now: float | None = None) -> bool:
        """Restart the publisher if it has exited and its backoff has passed; True if it did."""
        now = time.monotonic() if now is None else now
        if self.due is None and self.publisher.running():
            if now - self.started >= STABLE_SECONDS:
                self.failures = 0
            return False
        if self.due is None:
            self.failures += 1
            self.due = now + restart_delay(self.failures)
            print(
                f"fake-driver-publisher exited: restart {self.restarts + 1} in {self.due - now:.0f}s",
                flush=True,
            )
        if now < self.due:
            return False
        self.due, self.started = None, now
        self.restarts += 1
        self.publisher.start()
        return True


def _record(
    args: argparse.Namespace, cluster: LocalCluster, fleet: _Fleet | None = None, phase: str = "ready"
) -> ClusterRecord:
    return ClusterRecord(
        name=args.state_dir.name,
        minor=cluster.minor.name,
        kubernetes=cluster.minor.kubernetes,
        profile=cluster.profile.name,
        phase=phase,
        supervisor=ProcessIdentity.of(os.getpid()),
        kubeconfig=str(cluster.kubeconfig),
        components={
            **{name: ProcessIdentity.of(pid) for name, pid in cluster.pids().items()},
            **({"fake-driver-publisher": ProcessIdentity.of(fleet.publisher.pid)} if fleet else {}),
        },
        kubelets=dict(cluster.real.minors) if cluster.real is not None else {},
    )


# How often the ready supervisor asks kube-apiserver's /readyz (each ask bounded by
# health.get's 2 s timeout): a stopped (SIGSTOP) or hung API server is not "ready". It takes
# MISSES unanswered asks in a row, so one slow answer on a loaded machine does not count.
HEALTH_EVERY = 10.0
MISSES = 2


class _Health:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.phase, self.due, self.misses = "ready", time.monotonic() + HEALTH_EVERY, 0

    def changed(self) -> bool:
        """Whether the phase changed with this ask (asked when due)."""
        if time.monotonic() < self.due:
            return False
        status, body = BY_NAME["kube-apiserver"].probe(self.cluster)()  # its port as of now (upgrades)
        self.due = time.monotonic() + HEALTH_EVERY
        self.misses = 0 if status == 200 else self.misses + 1
        if 0 < self.misses < MISSES:
            return False
        phase = "ready" if status == 200 else f"unresponsive: kube-apiserver /readyz: {status or body}"
        if phase == self.phase:
            return False
        print(phase, flush=True)
        self.phase = phase
        return True


def _serve(args: argparse.Namespace, cluster: LocalCluster, fleet: _Fleet | None, watch: _OwnerWatch) -> int:
    """Until a stop signal (returned): acknowledgements, upgrades, the publisher kept
    running, and the API server's health in the record. A stop signal that comes during an
    upgrade waits for its end."""
    health = _Health(cluster)
    while True:
        got = signal.sigtimedwait(_WAITED, 0.5)  # below the shortest restart delay
        if got is None:
            restarted = fleet is not None and fleet.keep_running()
            if health.changed() or restarted:
                write_record(args.state_dir, _record(args, cluster, fleet, health.phase))
        elif got.si_signo == ACKNOWLEDGE:
            _die_with_owner(0)  # `up` told the user: the cluster now outlives it
            watch.release()
            print("acknowledged: detached from `cluster up`", flush=True)
        elif got.si_signo == UPGRADE:
            _upgrade(args, cluster, fleet)
        else:
            return got.si_signo


def _upgrade(args: argparse.Namespace, cluster: LocalCluster, fleet: _Fleet | None) -> None:
    """One `cluster upgrade` request: the record says "upgrading" while it runs and names the
    new version before the outcome is written, so the command's answer and `cluster status`
    agree."""
    request = take_request(args.state_dir)
    if request is None:
        print(f"{UPGRADE.name} without a request: ignored", flush=True)
        return
    before = cluster.minor.name
    write_record(args.state_dir, _record(args, cluster, fleet, f"upgrading {before} -> {request['to']}"))
    print(f"upgrade {before} -> {request['to']}: begins", flush=True)
    outcome = carry_out(cluster, request)
    if fleet is not None:
        fleet.restart_now()
    write_record(args.state_dir, _record(args, cluster, fleet, phase_after(cluster)))
    outcome.write(args.state_dir)
    steps = ", ".join(f"{c} {s:.1f}s" for c, s in outcome.components.items())
    verdict = "done" if outcome.ok else "not done"
    print(f"upgrade {before} -> {request['to']}: {verdict}: {outcome.message}; {steps}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dra-harness-supervisor")
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--k8s-version", required=True)
    parser.add_argument("--gates", required=True)
    parser.add_argument("--owner-pid", type=int, required=True)
    parser.add_argument("--real-nodes", type=int, default=0)
    parser.add_argument("--driver", default="", help="a real driver on the real nodes: example@v0.4.0")
    parser.add_argument("--kubelet", help="the real nodes' minor (default: the cluster's)")
    parser.add_argument("--fleet", type=Path, help="fake_driver fleet file: nodes, classes, publisher")
    args = parser.parse_args(argv)
    _die_with_owner(signal.SIGTERM)
    # Ignored until it is waited for (a blocked mask now would be inherited by every component;
    # a handler is reset at their exec).
    signal.signal(ACKNOWLEDGE, lambda *_: None)
    signal.signal(UPGRADE, lambda *_: None)
    install_signal_teardown()  # SIGTERM raises Terminated, like Ctrl-C, wherever the start is
    if os.getppid() != args.owner_pid:  # the owner died before PDEATHSIG was armed
        print("error: the `cluster up` that started this supervisor is gone", file=sys.stderr)
        return 1
    watch = _OwnerWatch(args.owner_pid)
    pools = [cluster_up_pool(args.real_nodes, args.driver, args.kubelet)] if args.real_nodes else []
    cluster = LocalCluster(
        args.k8s_version, args.gates, run_dir=args.state_dir, keep_run_dir=True, real_pools=pools
    )
    fleet: _Fleet | None = None
    try:
        cluster.start()
        fleet = _Fleet(args.fleet, cluster, args.state_dir) if args.fleet else None
        signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)  # from here: sigwait
        write_record(args.state_dir, _record(args, cluster, fleet))
        print(f"ready: {cluster.minor.kubernetes}, {cluster.profile.name}", flush=True)
        signum = _serve(args, cluster, fleet, watch)
        print(f"stopping on {signal.Signals(signum).name}", flush=True)
    except KeyboardInterrupt as stop:
        code = exit_code(stop)
        print(f"stopped by {signal.Signals(code - 128).name} while starting", file=sys.stderr)
        return code
    except HarnessError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        watch.release()
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP)  # a second signal must not cut the stop short
        if fleet is not None:
            fleet.publisher.stop(grace=5.0)
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
