"""Real nodes give the host back: processes (containers and shims too), mounts, cgroups,
links, iptables chains and sysctls are as before, whether the owner stops normally, is
interrupted (SIGINT, SIGTERM), killed outright (SIGKILL: the next start reaps what it left),
or its node never comes up."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.clusters import hoststate
from harness.clusters.local import LocalCluster
from harness.clusters.realnodes import RealPool
from harness.controlplane.nodeparts import ensure_busybox
from harness.errors import HarnessError
from harness.kube import Kube
from harness.nodepods import env_pod
from harness.pods import wait_phase
from harness.versions import load_matrix
from harness.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.real_node]

# The owner: a process holding a cluster with one real node until it is signalled.
OWNER = """
import pathlib, signal, sys
from harness.clusters.local import LocalCluster
from harness.clusters.realnodes import RealPool
with LocalCluster(real_pools=[RealPool("t", count=1, gpus=1)]) as cluster:
    pathlib.Path(sys.argv[1]).write_text(str(cluster.kubeconfig))
    signal.pause()
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_host_is_as_before_after_the_owner_gets(sig: signal.Signals, tmp_path: Path) -> None:
    before = hoststate.snapshot()
    ready = tmp_path / "kubeconfig"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(ready)], stdout=subprocess.DEVNULL)
    try:
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
    finally:
        owner.send_signal(sig)
        owner.wait(timeout=120)
    if sig == signal.SIGKILL:
        assert hoststate.snapshot()["slots"] != before["slots"]  # left behind, until the next start
        hoststate.reap_stale()
    assert hoststate.snapshot() == before


def test_a_node_that_fails_names_itself_and_leaves_nothing() -> None:
    before = hoststate.snapshot()
    cluster = LocalCluster(real_pools=[RealPool("bad", labels={"not a label": "x"})])
    with pytest.raises(HarnessError) as failed:
        cluster.start()
    first, *tail = str(failed.value).splitlines()
    assert first.startswith("node bad-0: kubelet did not come up (")
    assert 1 <= len(tail) <= 21
    assert hoststate.snapshot() == before


def test_two_clusters_with_real_nodes_use_their_own_addresses_bridges_and_cgroups() -> None:
    before = hoststate.snapshot()
    first = LocalCluster(real_pools=[RealPool("a", gpus=1)])
    second = LocalCluster(real_pools=[RealPool("a", gpus=1)])  # the same node name, on purpose
    try:
        first.start()
        second.start()
        reals = [c.real for c in (first, second) if c.real is not None and c.real.slot is not None]
        layouts = [r.node("a-0").layout for r in reals]
        assert len({(n.ip, n.cni_bridge, n.cgroup, n.state, n.pod_subnet) for n in layouts}) == 2
        assert [n.ip for n in layouts] == [f"10.250.{r.slot.index}.10" for r in reals if r.slot]
        first.stop()  # the other cluster's node keeps running: only the last restores the host
        assert second.real is not None
        second.real.wait_ready(second.kubeconfig)
        assert hoststate.snapshot()["sysctls"] != before["sysctls"]
    finally:
        first.stop()
        second.stop()
    assert hoststate.snapshot() == before
