"""A local cluster of a test module's own with the stand-in vendor driver installed
(harness.qualify.standin): what the qualify end-to-end modules qualify."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness.clusters.local.cluster import LocalCluster
from harness.kit.kube import Kube
from harness.qualify.standin import StandinPoolSpec, install


@contextmanager
def standin_cluster(run_dir: Path, fleet: Sequence[StandinPoolSpec], driver: str) -> Iterator[Path]:
    """The cluster's admin kubeconfig, the stand-in serving `fleet` as `driver`; stopped after."""
    cluster = LocalCluster(profile="dra-all", run_dir=run_dir)
    cluster.start()
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    try:
        install(kube, fleet, driver)
        yield cluster.kubeconfig
    finally:
        kube.close()
        cluster.stop()
