"""A port taken between choosing it and binding it (by any other process on the host) costs the
component a start on a fresh port, never the cluster: each component whose port is held by a
listening socket when the cluster starts comes up on another one."""

from __future__ import annotations

import socket
from contextlib import ExitStack

import pytest

from harness.clusters.local.cluster import LocalCluster
from harness.kit.kube import Kube

# Every Ports field a component binds (etcd's peer port moves with its client port).
BOUND = ("etcd_client", "apiserver", "controller_manager", "scheduler", "kwok")


def _hold(stack: ExitStack, port: int) -> None:
    sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    sock.bind(("127.0.0.1", port))
    sock.listen()


@pytest.mark.parametrize("field", BOUND)
def test_a_component_whose_port_is_taken_starts_on_a_fresh_one(field: str) -> None:
    cluster = LocalCluster()
    held = getattr(cluster.ports, field)
    with ExitStack() as stack:
        _hold(stack, held)
        with cluster:
            moved = getattr(cluster.ports, field)
            assert moved != held
            kube = Kube.from_kubeconfig(cluster.kubeconfig)  # the kubeconfig names the port in use
            assert kube.server_version() == tuple(int(p) for p in cluster.minor.name.split("."))
            kube.close()
            assert sorted(cluster.pids()) == sorted(COMPONENTS)


COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
