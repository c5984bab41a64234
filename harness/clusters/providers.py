"""Choose a cluster provider by name."""

from __future__ import annotations

from pathlib import Path

from harness.clusters.base import Cluster
from harness.clusters.existing import ExistingCluster
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.errors import HarnessError

PROVIDERS = ("local", "kind", "existing")


def make_cluster(
    provider: str,
    *,
    minor: str | None = None,
    profile: str | None = None,
    kubeconfig: Path | None = None,
    run_dir: Path | None = None,
    keep: bool = False,
    real_nodes: bool = False,
) -> Cluster:
    """`real_nodes`: the local cluster is ready for real nodes (RealNodes.add_pool), with none yet."""
    if provider == "local":
        pools = [RealPoolSpec("real", count=0)] if real_nodes else []
        return LocalCluster(minor, profile, run_dir=run_dir, keep_run_dir=keep, real_pools=pools)
    if provider == "existing":
        if kubeconfig is None:
            raise HarnessError("--cluster-provider existing needs --kubeconfig")
        return ExistingCluster(kubeconfig)
    if provider == "kind":
        from harness.clusters.kind.provider import KindProvider

        return KindProvider(minor, profile, run_dir=run_dir, keep=keep)
    raise HarnessError(f"unknown cluster provider {provider!r}; valid: {', '.join(PROVIDERS)}")
