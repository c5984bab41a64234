"""The Docker engine kind runs on, started by the harness where no Docker daemon answers.

On a machine whose Docker works, nothing here runs (`Engine.start` returns at once). Otherwise
Debian's dockerd (`make kind-engine` installs it, versions.toml [kind] engine_apt) runs as a
harness component that changes as little of the host as kind allows:
- its own data root (cache: loaded images stay between runs; one engine at a time, a lock),
  exec root, socket and pidfile, in a host slot of harness.clusters.host.state: the slot's
  cgroup holds dockerd, its containerd and every container (`cgroup-parent`), its link prefix
  names the one bridge (the `kind` network, made here before kind makes its own), and the
  slot's baseline gives the host its sysctls and chains back when the last slot leaves;
- no iptables, no ip_forward, no default bridge (`--iptables=false --ip-forward=false
  --bridge=none`): kind's nodes talk on their bridge, its API server is published on 127.0.0.1
  by docker-proxy, and the embedded DNS answers node names without host rules;
- a mount namespace of its own, so its overlay and netns mounts vanish with it;
- the runc wrapper (harness/clusters/kind/engine_runc.py) as default runtime only when a privileged
  probe container fails with the capability error.

Teardown: stop() (also reached on SIGINT/SIGTERM through the caller's finally); if the owner is
killed outright, dockerd dies with it (PR_SET_PDEATHSIG) and a watcher process gives the slot
back (hoststate.reap_stale); `dra-harness kind cleanup` does the same for any leftover.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path
from typing import IO

from harness.clusters.host import state as hoststate
from harness.clusters.host.processes import ManagedProcess
from harness.controlplane.build import cache_root
from harness.core.errors import HarnessError
from harness.kit.waits import wait_for

CAP_ERROR = "unable to apply caps: operation not permitted"
PROBE_IMAGE = "dra-harness.local/engine-probe:1"
WRAPPER_RUNTIME = "dra-harness-runc"
KIND_NETWORK = "kind"
REAL_RUNC = "/usr/sbin/runc"
BUSYBOX = "/bin/busybox"
START_TIMEOUT = 60.0
INSTALL_HINT = "install Debian's dockerd with `make kind-engine`"


def engine_root() -> Path:
    """Data root and lock: the node images loaded into the engine stay between runs."""
    return cache_root() / "kind" / "engine"


def docker(*args: str, host: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"DOCKER_HOST": host} if host else {})}
    return subprocess.run(["docker", *args], capture_output=True, text=True, env=env, timeout=timeout)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def answering(host: str | None = None) -> str | None:
    """None when a Docker daemon answers (at `host`, or where the docker CLI looks); else why not."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    try:
        out = docker("info", "--format", "{{.ServerVersion}}", host=host, timeout=20)
    except subprocess.TimeoutExpired:
        return "docker info did not answer in 20s"
    return None if out.returncode == 0 else (_last_line(out.stderr) or f"docker info exited {out.returncode}")


def cannot_start() -> str | None:
    """One line naming what this host lacks to start an engine, or None."""
    if os.geteuid() != 0:
        return "starting a Docker engine needs root"
    if shutil.which("dockerd") is None:
        return f"no dockerd on PATH: {INSTALL_HINT}"
    return hoststate.missing_requirement()


class Engine:
    """The engine kind uses: the machine's own, or one started here (`started`)."""

    def __init__(self) -> None:
        self.host: str | None = None  # DOCKER_HOST of a started engine
        self.wrapped = False  # the runc wrapper is the default runtime
        self._slot: hoststate.Slot | None = None
        self._dockerd: ManagedProcess | None = None
        self._watcher: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None

    @property
    def started(self) -> bool:
        return self._dockerd is not None

    def env(self) -> dict[str, str]:
        """What a docker or kind child needs to reach this engine."""
        return {"DOCKER_HOST": self.host} if self.host else {}

    def start(self) -> Engine:
        if answering() is None:
            return self  # the machine's Docker: nothing of ours runs
        why = cannot_start()
        if why is not None:
            raise HarnessError(f"no Docker engine answers and none can be started: {why}")
        self._take_lock()
        try:
            self._slot = hoststate.claim()
            self._watch_owner()
            self._start_dockerd(wrapped=False)
            self._prepare()
            if self._probe_fails_on_caps():
                self._restart_dockerd(wrapped=True)
                if self._probe_fails_on_caps():
                    raise HarnessError("privileged containers fail even with the runc wrapper")
        except BaseException:
            self.stop()
            raise
        return self

    # -- start ------------------------------------------------------------------------

    def _take_lock(self) -> None:
        engine_root().mkdir(parents=True, exist_ok=True)
        self._lock = (engine_root() / "lock").open("w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise HarnessError(
                f"the harness's Docker engine ({engine_root()}) is in use by another run"
            ) from None

    def _watch_owner(self) -> None:
        """A process outside our group that gives the slot back if we are SIGKILLed."""
        argv = [sys.executable, "-m", "harness.clusters.kind.engine", "reap-after", str(os.getpid())]
        self._watcher = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
        )

    def _paths(self) -> dict[str, Path]:
        assert self._slot is not None
        state = self._slot.state_dir / "docker"
        return {
            "state": state,
            "config": state / "daemon.json",
            "socket": state / "docker.sock",
            "exec": state / "exec",
            "pidfile": state / "docker.pid",
            "wrapper": state / "runc-wrapper",
            "log": engine_root() / "dockerd.log",
        }

    def daemon_config(self, wrapped: bool) -> dict[str, object]:
        assert self._slot is not None
        config: dict[str, object] = {
            "storage-driver": "overlay2",
            "oom-score-adjust": 0,
            "exec-opts": ["native.cgroupdriver=cgroupfs"],
            "cgroup-parent": f"{self._slot.cgroup}/containers",
            "iptables": False,
            "ip-forward": False,
            "ip-masq": False,
            "bridge": "none",
            "runtimes": {WRAPPER_RUNTIME: {"path": str(self._paths()["wrapper"])}},
        }
        if wrapped:
            config["default-runtime"] = WRAPPER_RUNTIME
        return config

    def _start_dockerd(self, wrapped: bool) -> None:
        assert self._slot is not None
        p = self._paths()
        p["exec"].mkdir(parents=True, exist_ok=True)
        p["config"].write_text(json.dumps(self.daemon_config(wrapped), indent=1))
        script = Path(__file__).with_name("engine_runc.py")
        p["wrapper"].write_text(f'#!/bin/sh\nexec {sys.executable} -I {script} {REAL_RUNC} "$@"\n')
        p["wrapper"].chmod(0o755)
        for cgroup in (self._slot.cgroup, f"{self._slot.cgroup}/engine", f"{self._slot.cgroup}/containers"):
            hoststate.make_cgroup(cgroup)
        procs = hoststate.CGROUP_ROOT / "pids" / self._slot.cgroup.strip("/") / "engine" / "cgroup.procs"
        argv = [
            *["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs)],  # in the slot's cgroup before exec
            *["unshare", "--mount", "--propagation", "private", "--", "dockerd"],
            *[f"--config-file={p['config']}", f"--data-root={engine_root() / 'data'}"],
            *[f"--exec-root={p['exec']}", f"--host=unix://{p['socket']}", f"--pidfile={p['pidfile']}"],
        ]
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "HOME": "/root"}
        self._dockerd = ManagedProcess("dockerd", argv, p["log"], env=env)
        self._dockerd.start()
        self.host = f"unix://{p['socket']}"
        self.wrapped = wrapped

        def ready() -> str | None:
            assert self._dockerd is not None
            self._dockerd.check_running()
            return answering(self.host)

        wait_for(ready, lambda why: why is None, timeout=START_TIMEOUT, describe="dockerd answering")

    def _restart_dockerd(self, wrapped: bool) -> None:
        assert self._dockerd is not None
        self._dockerd.stop(grace=15.0)
        self._start_dockerd(wrapped)

    def _prepare(self) -> None:
        """Leftovers of a killed run out of the data root; the kind network on our bridge; the
        probe image (busybox-static, from `make nodeparts`)."""
        assert self._slot is not None
        ids = self._docker("ps", "-aq").split()
        if ids:
            self._docker("rm", "-f", *ids)
        if KIND_NETWORK in self._docker("network", "ls", "--format", "{{.Name}}").split():
            self._docker("network", "rm", KIND_NETWORK)
        bridge = f"com.docker.network.bridge.name={self._slot.link_prefix}k"
        self._docker("network", "create", "--driver=bridge", f"--opt={bridge}", KIND_NETWORK)
        if not self._docker("images", "-q", PROBE_IMAGE).strip():
            self._docker_stdin(_busybox_tar(), "import", "-", PROBE_IMAGE)

    def _probe_fails_on_caps(self) -> bool:
        probe = ["run", "--rm", "--privileged", "--network=none", PROBE_IMAGE, "/bin/busybox", "true"]
        out = docker(*probe, host=self.host)
        if out.returncode == 0:
            return False
        if CAP_ERROR in out.stderr:
            return True
        raise HarnessError(f"a privileged probe container failed: {_last_line(out.stderr)}")

    def _docker(self, *args: str) -> str:
        out = docker(*args, host=self.host)
        if out.returncode != 0:
            raise HarnessError(f"docker {' '.join(args[:2])} failed: {_last_line(out.stderr)}")
        return out.stdout

    def _docker_stdin(self, data: bytes, *args: str) -> None:
        env = {**os.environ, "DOCKER_HOST": self.host or ""}
        out = subprocess.run(["docker", *args], input=data, capture_output=True, env=env, timeout=120)
        if out.returncode != 0:
            raise HarnessError(f"docker {args[0]} failed: {_last_line(out.stderr.decode(errors='replace'))}")

    # -- stop -------------------------------------------------------------------------

    def stop(self) -> None:
        """dockerd, then everything in the slot (containerd, shims, containers), the bridge, and
        the host's state as the slot's baseline recorded it. Safe to call twice."""
        if self._dockerd is not None:
            self._dockerd.stop(grace=15.0)
            self._dockerd = None
        if self._slot is not None:
            hoststate.release(self._slot)
            self._slot = None
        if self._watcher is not None:
            with contextlib.suppress(ProcessLookupError):
                self._watcher.send_signal(signal.SIGKILL)
            self._watcher.wait()
            self._watcher = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        self.host = None


def _busybox_tar() -> bytes:
    if not Path(BUSYBOX).is_file():
        raise HarnessError(f"{BUSYBOX} is missing: make nodeparts installs busybox-static")
    buf = BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(BUSYBOX, arcname="bin/busybox")
    return buf.getvalue()


def reap_after(pid: int) -> None:
    """Wait for `pid` to exit, then give back the slots of dead owners (ours among them)."""
    with contextlib.suppress(ProcessLookupError):
        fd = os.pidfd_open(pid)
        import select

        select.select([fd], [], [])
    hoststate.reap_stale()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "reap-after":
        reap_after(int(sys.argv[2]))
    else:
        sys.exit("usage: python -m harness.clusters.kind.engine reap-after PID")
