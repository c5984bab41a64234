"""`python -m fake_driver.kubeletplugin` as the DaemonSet runs it, without a cluster (--claims-file)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fake_driver._generated import dra_v1_pb2, pluginregistration_v1_pb2
from fake_driver.core.errors import FakeDriverError
from fake_driver.fleetspec.fleet import parse_fleet
from fake_driver.kubeletplugin.client import channel, dra_stub, registration_stub
from fake_driver.kubeletplugin.main import POOL_LABEL, resolve_node
from harness.clusters.nodes import POOL_LABEL as HARNESS_POOL_LABEL
from harness.core.versions import REPO_ROOT
from harness.kit.waits import wait_for

FLEET = "pools: [{name: l4, nodes: [worker-a], profile: l4, gpus: 1, personality: nvidia-v25.8}]\n"


def test_plugin_process_serves_until_sigterm_and_removes_its_sockets(root: Path) -> None:
    (root / "fleet.yaml").write_text(FLEET)
    claim = {
        "metadata": {"namespace": "ns", "name": "c", "uid": "u1"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "worker-a", "device": "gpu-0"}
                    ]
                }
            }
        },
    }
    (root / "claims.json").write_text(json.dumps([claim]))
    proc = subprocess.Popen(
        _plugin_cmd(root), cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    reg_sock = root / "reg" / "gpu.nvidia.com-reg.sock"
    try:
        wait_for(lambda: reg_sock.is_socket() or proc.poll() is not None, timeout=30, describe="reg socket")
        assert proc.poll() is None, proc.communicate()
        with channel(reg_sock) as ch:
            info = registration_stub(ch).GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=10)
        with channel(info.endpoint) as ch:
            resp = dra_stub(ch).NodePrepareResources(
                dra_v1_pb2.NodePrepareResourcesRequest(
                    claims=[dra_v1_pb2.Claim(namespace="ns", uid="u1", name="c")]
                ),
                timeout=10,
            )
        assert [d.cdi_device_ids[0] for d in resp.claims["u1"].devices] == [
            "k8s.gpu.nvidia.com/claim=u1-gpu-0"
        ]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == f"serving {info.endpoint} (registration {reg_sock})"
    assert not reg_sock.exists()
    assert not Path(info.endpoint).exists()
    assert (root / "cdi" / "k8s.gpu.nvidia.com-claim_u1.json").exists()


def _plugin_cmd(root: Path) -> list[str]:
    cmd = [sys.executable, "-m", "fake_driver.kubeletplugin", "--node-name", "worker-a"]
    cmd += [
        "--fleet",
        str(root / "fleet.yaml"),
        "--claims-file",
        str(root / "claims.json"),
        "--minor",
        "1.36",
    ]
    cmd += ["--registry-dir", str(root / "reg"), "--plugins-dir", str(root / "plugins")]
    return [*cmd, "--cdi-root", str(root / "cdi")]


def test_a_second_plugin_on_the_same_directories_is_refused_and_the_first_keeps_serving(root: Path) -> None:
    """Issue 41: the second used to unlink the first one's live sockets and serve in its place."""
    (root / "fleet.yaml").write_text(FLEET)
    (root / "claims.json").write_text("[]")
    reg_sock = root / "reg" / "gpu.nvidia.com-reg.sock"
    dra_sock = root / "plugins" / "gpu.nvidia.com" / "dra.sock"
    first = subprocess.Popen(
        _plugin_cmd(root), cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: reg_sock.is_socket() or first.poll() is not None, timeout=30, describe="reg socket")
        assert first.poll() is None, first.communicate()
        before = (reg_sock.stat().st_ino, dra_sock.stat().st_ino)
        second = subprocess.run(_plugin_cmd(root), cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
        assert (second.returncode, second.stderr, second.stdout) == (
            1,
            f"fake_driver.kubeletplugin: error: {dra_sock} is served by another live kubelet plugin; "
            "stop it first, or give this one other --registry-dir/--plugins-dir "
            "(or a --rolling-update-uid of its own)\n",
            "",
        )
        assert (reg_sock.stat().st_ino, dra_sock.stat().st_ino) == before  # not unlinked, not rebound
        with channel(reg_sock) as ch:
            info = registration_stub(ch).GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=10)
        assert info.endpoint == str(dra_sock)
        with channel(dra_sock) as ch:
            resp = dra_stub(ch).NodePrepareResources(dra_v1_pb2.NodePrepareResourcesRequest(), timeout=10)
        assert dict(resp.claims) == {}
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=30)
    assert first.returncode == 0, err
    # Gone with the first, the directories take a new plugin: a stale lock or socket refuses none.
    third = subprocess.Popen(
        _plugin_cmd(root), cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: reg_sock.is_socket() or third.poll() is not None, timeout=30, describe="reg socket")
        assert third.poll() is None, third.communicate()
    finally:
        third.send_signal(signal.SIGTERM)
        third.communicate(timeout=30)
    assert third.returncode == 0


def test_missing_node_name_is_one_line(root: Path) -> None:
    (root / "fleet.yaml").write_text(FLEET)
    out = subprocess.run(
        [sys.executable, "-m", "fake_driver.kubeletplugin", "--fleet", str(root / "fleet.yaml")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert (out.returncode, out.stderr) == (
        2,
        "fake_driver.kubeletplugin: error: --node-name (or $NODE_NAME) is required\n",
    )


def test_node_pool_comes_from_the_fleet_then_the_node_label_then_the_flag() -> None:
    fleet = parse_fleet(
        "pools: [{name: a, nodes: [n1], profile: l4, gpus: 1}, {name: b, count: 1, profile: t4, gpus: 2}]"
    )
    assert POOL_LABEL == HARNESS_POOL_LABEL  # kind labels workers with the harness's pool label
    assert resolve_node(fleet, "n1", "b", None).pool.name == "a"
    by_label = resolve_node(fleet, "kind-worker2", "b", "a")
    assert (by_label.name, by_label.pool.name, by_label.pool.node_names) == (
        "kind-worker2",
        "b",
        ("kind-worker2",),
    )
    assert resolve_node(fleet, "kind-worker", None, "a").pool.name == "a"
    with pytest.raises(FakeDriverError) as err:
        resolve_node(fleet, "kind-worker", "zz", None)
    assert str(err.value) == (
        "node 'kind-worker' is not in the fleet and names no pool of it "
        "(label dra-harness.io/pool='zz', --pool=None); pools: a, b"
    )
