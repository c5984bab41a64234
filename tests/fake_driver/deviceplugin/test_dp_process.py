"""`python -m fake_driver.deviceplugin` re-registers when the kubelet restarts."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from fake_driver._generated import deviceplugin_v1beta1_pb2 as pb
from fake_driver._generated import deviceplugin_v1beta1_pb2_grpc as pb_grpc
from harness.core.versions import REPO_ROOT
from harness.kit.waits import wait_for


class Kubelet:
    def __init__(self, socket: Path) -> None:
        self.requests: list[Any] = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_RegistrationServicer_to_server(self, self.server)  # type: ignore[no-untyped-call]
        self.server.add_insecure_port(f"unix://{socket}")
        self.server.start()

    def Register(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.requests.append(request)
        return pb.Empty()


@pytest.fixture
def root() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="dpp-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_device_plugin_registers_again_after_a_kubelet_restart(root: Path) -> None:
    (root / "fleet.yaml").write_text("pools: [{name: t4, count: 1, profile: t4, gpus: 2}]\n")
    sock = root / "kubelet.sock"
    first = Kubelet(sock)
    cmd = [sys.executable, "-m", "fake_driver.deviceplugin", "--node-name", "t4-0", "--no-api"]
    cmd += ["--fleet", str(root / "fleet.yaml"), "--plugin-dir", str(root), "--recheck", "0.1"]
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second: Kubelet | None = None
    try:
        wait_for(lambda: len(first.requests), lambda n: n == 1, timeout=30, describe="first Register")
        # A kubelet restart: the socket is recreated (new inode) and plugin sockets are wiped.
        first.server.stop(0).wait()
        sock.unlink(missing_ok=True)
        (root / "nvidia-gpu.sock").unlink()
        second = Kubelet(sock)
        restarted = second
        wait_for(lambda: len(restarted.requests), lambda n: n == 1, timeout=30, describe="second Register")
        assert (root / "nvidia-gpu.sock").is_socket()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        if second is not None:
            second.server.stop(0).wait()
    assert proc.returncode == 0, err
    assert out.splitlines() == [
        f"serving {root / 'nvidia-gpu.sock'} with 2 devices",
        f"registered nvidia.com/gpu with {sock}",
        f"registered nvidia.com/gpu with {sock}",
    ]
    assert [r.resource_name for r in first.requests] == ["nvidia.com/gpu"]
    assert not (root / "nvidia-gpu.sock").exists()
