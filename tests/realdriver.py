"""What a test of a real driver on real nodes needs built (the real nodes' parts and the
driver's plugin), as the one line its skip names, or None when all is there."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.clusters.host.state import missing_requirement
from harness.controlplane.driverparts import driver_built, not_built_line
from harness.controlplane.nodeparts import containerd_built, kubelet_built
from harness.core.drivers import driver_ref
from harness.core.versions import REPO_ROOT, load_matrix


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


def run_qualify(
    kubeconfig: Path, driver: str, image: str, out: Path, suites: tuple[str, ...], restart: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """`dra-harness qualify` of `driver` (NAME@VERSION) with its node side's container image,
    and `restart` as its --plugin-restart-command (harness.clusters.realnodes.control)."""
    argv = [sys.executable, "-m", "harness.cli.main", "qualify", f"--kubeconfig={kubeconfig}"]
    argv += [f"--driver-spec={driver}", f"--container-image={image}", f"--out={out}"]
    argv += [f"--plugin-restart-command={shlex.join(restart)}"] if restart else []
    argv += [f"--suite={s}" for s in suites]
    return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1500, check=False)
