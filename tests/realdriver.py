"""What a test of a real driver on real nodes needs built (the real nodes' parts and the
driver's plugin), as the one line its skip names, or None when all is there."""

from __future__ import annotations

from harness.clusters.host.state import missing_requirement
from harness.controlplane.driverparts import driver_built, not_built_line
from harness.controlplane.nodeparts import containerd_built, kubelet_built
from harness.core.drivers import driver_ref
from harness.core.versions import load_matrix


def real_driver_missing(ref: str) -> str | None:
    """`ref`: NAME@VERSION as versions.toml [drivers] knows it."""
    matrix = load_matrix()
    minor = matrix.minor(matrix.default_minor)
    spec, version = driver_ref(ref)
    if why := missing_requirement():
        return why
    if kubelet_built(minor) is None or containerd_built(matrix) is None:
        return f"real nodes are not built: run `make nodeparts K8S={minor.name}`"
    if driver_built(spec, version) is None:
        return not_built_line(spec, version)
    return None
