"""Real nodes give the host back: processes (containers and shims too), mounts, cgroups,
links, iptables chains and sysctls are as before, whether the owner stops normally, is
interrupted (SIGINT, SIGTERM), killed outright (SIGKILL: the next start reaps what it left),
or its node never comes up."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.real.hostcompare import assert_host_as, quiet_host_snapshot
from harness.clusters.host import state as hoststate
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane.nodeparts import ensure_busybox
from harness.core.errors import HarnessError
from harness.core.versions import load_matrix
from harness.kit.kube import Kube
from harness.kit.nodepods import env_pod
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.real_node]

# The owner: a process holding a cluster with one real node until it is signalled.
OWNER = """
import pathlib, signal, sys
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.pools import RealPoolSpec
run_dir = pathlib.Path(sys.argv[2])  # the test's own: a SIGKILLed owner cannot remove it
with LocalCluster(real_pools=[RealPoolSpec("t", count=1, gpus=1)], run_dir=run_dir) as cluster:
    pathlib.Path(sys.argv[1]).write_text(str(cluster.kubeconfig))
    signal.pause()
"""


@pytest.fixture
def quiet_host() -> dict[str, object]:
    """The host's state before the test, on a host no other real-node cluster uses."""
    return quiet_host_snapshot()


@pytest.fixture
def owner(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """The owner process and the file it writes its kubeconfig to once its node is up; stopped
    at the end if the test did not signal it."""
    ready = tmp_path / "kubeconfig"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    argv = [sys.executable, "-c", OWNER, str(ready), str(run_dir)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    yield proc, ready
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=120)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_host_is_as_before_after_the_owner_gets(
    sig: signal.Signals, quiet_host: dict[str, object], owner: tuple[subprocess.Popen[bytes], Path]
) -> None:
    before, (proc, ready) = quiet_host, owner
    kubeconfig = wait_for(
        lambda: ready.read_text() if ready.exists() else "",
        timeout=TIMEOUTS.component_ready * 2,
        describe="the owner's cluster with one real node",
    )
    kube = Kube.from_kubeconfig(kubeconfig)
    _, image = ensure_busybox(load_matrix())
    kube.create(env_pod("p", "default", image, "t-0"))
    wait_phase(kube, "default", "p", "Running")
    kube.close()
    during = hoststate.snapshot()
    for what in ("processes", "cgroups", "links", "slots"):
        assert during[what] != before[what], what
    # The node's mounts (overlays, tmpfs, netns) live in its own namespace, never the host's.
    assert during["mounts"] == before["mounts"]
    proc.send_signal(sig)
    proc.wait(timeout=120)
    if sig == signal.SIGKILL:
        assert hoststate.snapshot()["slots"] != before["slots"]  # left behind, until the next start
        hoststate.reap_stale()
    assert_host_as(before)


def test_a_node_that_fails_names_itself_and_leaves_nothing(quiet_host: dict[str, object]) -> None:
    before = quiet_host
    cluster = LocalCluster(real_pools=[RealPoolSpec("bad", labels={"not a label": "x"})])
    with pytest.raises(HarnessError) as failed:
        cluster.start()
    first, *tail = str(failed.value).splitlines()
    assert first.startswith("node bad-0: kubelet did not come up (")
    assert 1 <= len(tail) <= 21
    assert_host_as(before)


def test_two_clusters_with_real_nodes_use_their_own_addresses_bridges_and_cgroups(
    quiet_host: dict[str, object],
) -> None:
    before = quiet_host
    # The same node name in both, on purpose.
    with (
        LocalCluster(real_pools=[RealPoolSpec("a", gpus=1)]) as first,
        LocalCluster(real_pools=[RealPoolSpec("a", gpus=1)]) as second,
    ):
        reals = [c.real for c in (first, second) if c.real is not None and c.real.slot is not None]
        layouts = [r.node("a-0").layout for r in reals]
        assert len({(n.ip, n.cni_bridge, n.cgroup, n.state, n.pod_subnet) for n in layouts}) == 2
        assert [n.ip for n in layouts] == [f"10.250.{r.slot.index}.10" for r in reals if r.slot]
        first.stop()  # the other cluster's node keeps running: only the last restores the host
        assert second.real is not None
        second.real.wait_ready(second.kubeconfig)
        assert hoststate.snapshot()["sysctls"] != before["sysctls"]
    assert_host_as(before)
