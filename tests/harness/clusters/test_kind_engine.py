"""The kind path's own Docker engine (harness.clusters.kind.engine) and its runc wrapper.

The wrapper and the daemon configuration are pure; the engine tests start Debian's dockerd for
real (root and `make kind-engine`; one line says what is missing otherwise) and compare the
host before and after, as the real-node teardown tests do.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.real.hostcompare import assert_host_as, quiet_host_snapshot
from harness.clusters.host import state as hoststate
from harness.clusters.kind import engine as engine_mod
from harness.clusters.kind.engine import Engine, cannot_start, docker
from harness.kit.waits import wait_for

WRAPPER = Path(engine_mod.__file__).with_name("engine_runc.py")
ALL_CAPS = ["CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"]


def _bundle(tmp_path: Path) -> Path:
    caps = {k: list(ALL_CAPS) for k in ("bounding", "effective", "permitted")}
    (tmp_path / "config.json").write_text(
        json.dumps({"ociVersion": "1.2.0", "process": {"capabilities": caps}})
    )
    return tmp_path / "config.json"


def test_wrapper_takes_cap_sys_resource_out_of_a_create_and_execs_runc(tmp_path: Path) -> None:
    config = _bundle(tmp_path)
    argv = [
        sys.executable,
        str(WRAPPER),
        "/bin/echo",
        "--root",
        "/run/x",
        "create",
        "--bundle",
        str(tmp_path),
        "c1",
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert out.stdout == f"--root /run/x create --bundle {tmp_path} c1\n"
    caps = json.loads(config.read_text())["process"]["capabilities"]
    assert caps == {k: ["CAP_CHOWN", "CAP_SYS_ADMIN"] for k in ("bounding", "effective", "permitted")}


def test_wrapper_rewrites_an_exec_process_file_and_leaves_other_calls_alone(tmp_path: Path) -> None:
    process = tmp_path / "process.json"
    process.write_text(json.dumps({"args": ["sh"], "capabilities": {"effective": list(ALL_CAPS)}}))
    config = _bundle(tmp_path)
    before = config.read_text()
    subprocess.run(
        [sys.executable, str(WRAPPER), "/bin/true", "exec", f"--process={process}", "c1"], check=True
    )
    assert json.loads(process.read_text())["capabilities"] == {"effective": ["CAP_CHOWN", "CAP_SYS_ADMIN"]}
    subprocess.run([sys.executable, str(WRAPPER), "/bin/true", "state", "c1"], cwd=tmp_path, check=True)
    assert config.read_text() == before


def test_daemon_config_changes_no_host_networking_and_keeps_containers_in_the_slot() -> None:
    e = Engine()
    e._slot = hoststate.Slot(7)
    wrapper = str(hoststate.STATE_ROOT / "c7" / "docker" / "runc-wrapper")
    base = {
        "storage-driver": "overlay2",
        "oom-score-adjust": 0,
        "exec-opts": ["native.cgroupdriver=cgroupfs"],
        "cgroup-parent": "/dra-harness-c7/containers",
        "iptables": False,
        "ip-forward": False,
        "ip-masq": False,
        "bridge": "none",
        "runtimes": {"dra-harness-runc": {"path": wrapper}},
    }
    assert e.daemon_config(wrapped=False) == base
    assert e.daemon_config(wrapped=True) == {**base, "default-runtime": "dra-harness-runc"}


# -- the engine for real -------------------------------------------------------------------


@pytest.fixture
def can_start() -> None:
    why = cannot_start()
    if why is not None:
        pytest.skip(why)
    if not Path(engine_mod.BUSYBOX).is_file():
        pytest.skip(f"{engine_mod.BUSYBOX} is missing (make nodeparts)")


def _lacks_cap_sys_resource() -> bool:
    bounding = next(
        ln for ln in Path("/proc/self/status").read_text().splitlines() if ln.startswith("CapBnd:")
    )
    return not int(bounding.split()[1], 16) & (1 << 24)  # CAP_SYS_RESOURCE is 24 (linux/capability.h)


@pytest.fixture
def quiet_host() -> dict[str, object]:
    """The host before the test; the name puts the test in xdist's quiet-host group
    (fixtures/parallel/scheduling.py), after every real-node module of the run."""
    return quiet_host_snapshot()


@pytest.mark.usefixtures("can_start")
def test_engine_runs_privileged_containers_and_leaves_the_host_as_it_was(
    quiet_host: dict[str, object],
) -> None:
    before = quiet_host
    e = Engine()
    try:
        e.start()
        assert e.started
        assert e.host is not None
        assert e.wrapped is _lacks_cap_sys_resource()
        run = [
            "run",
            "--rm",
            "--privileged",
            "--network=kind",
            engine_mod.PROBE_IMAGE,
            "/bin/busybox",
            "echo",
            "in",
        ]
        out = docker(*run, host=e.host)
        assert (out.returncode, out.stdout) == (0, "in\n")
        # The machine's Docker now answers (ours, through $DOCKER_HOST): a second engine starts nothing.
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("DOCKER_HOST", e.host)
            assert Engine().start().started is False
    finally:
        e.stop()
    assert_host_as(before)


@pytest.mark.usefixtures("can_start")
def test_engine_of_a_killed_owner_is_given_back(tmp_path: Path, quiet_host: dict[str, object]) -> None:
    before = quiet_host
    script = (
        "import signal; from harness.clusters.kind.engine import Engine, docker, PROBE_IMAGE\n"
        "e = Engine().start()\n"
        "docker('run', '-d', '--privileged', '--network=kind', PROBE_IMAGE, '/bin/busybox', 'sleep', '600',"
        " host=e.host)\n"
        "print('up', flush=True); signal.pause()\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    assert owner.stdout.readline() == "up\n"
    processes = hoststate.snapshot()["processes"]
    assert isinstance(processes, list)
    assert [p for p in processes if p.split(" ", 2)[1] == "dockerd"], processes
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    wait_for(
        hoststate.snapshot, lambda now: now == before, timeout=60, describe="the host as before the engine"
    )
