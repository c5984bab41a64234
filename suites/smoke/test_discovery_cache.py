"""The harness's dynamic client asks the cluster it talks to for its APIs. The library's
default reads them from /tmp/osrcp-<md5 of host:port>.json when that file exists: a cluster
started on a port an earlier cluster used was given the earlier one's APIs and version."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters.base import Cluster
from harness.kit.kube import CLIENT_LIBRARY_VERSION, Kube


@pytest.fixture
def client(cluster: Cluster) -> Iterator[Kube]:
    """A client of its own: the session's `kube` discovered long before the file is planted."""
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    yield kube
    kube.close()


@pytest.fixture
def earlier_cache(client: Kube) -> Iterator[Path]:
    """The file an earlier cluster on this host:port would have left: another version."""
    host = client.api_client.configuration.host.encode()
    path = Path(tempfile.gettempdir()) / f"osrcp-{hashlib.md5(host, usedforsecurity=False).hexdigest()}.json"
    stale = {"major": "1", "minor": "0", "gitVersion": "v1.0.0-earlier-cluster"}
    path.write_text(json.dumps({"library_version": CLIENT_LIBRARY_VERSION, "version": {"kubernetes": stale}}))
    yield path
    path.unlink(missing_ok=True)


def test_discovery_comes_from_this_cluster_and_stays_in_memory(client: Kube, earlier_cache: Path) -> None:
    before = earlier_cache.read_text()

    pods = client.resource("v1", "Pod")

    assert client.dynamic.version["kubernetes"]["gitVersion"] == client.git_version()
    assert (pods.group_version, pods.kind) == ("v1", "Pod")
    assert earlier_cache.read_text() == before  # neither read as this cluster's nor rewritten
