"""Fault injection needs control over the control plane's processes: the local provider."""

from __future__ import annotations

import pytest

from harness.clusters.base import Cluster
from harness.clusters.local import LocalCluster


@pytest.fixture
def local_cluster(cluster: Cluster) -> LocalCluster:
    if not isinstance(cluster, LocalCluster):
        pytest.skip(
            f"fault injection restarts control-plane processes: needs --cluster-provider local, "
            f"not {cluster.provider}"
        )
    return cluster
