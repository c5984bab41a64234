"""A real driver on real nodes, for the e2e tests of drivers nobody here wrote: what they need
built (the real nodes' parts and the driver's plugin), as the one line their skip names; the
cluster (a local control plane with the driver's pools) and `dra-harness qualify` against it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fixtures.real.realnodes import RealNodes, running
from harness.clusters.host.state import missing_requirement
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.control import (
    fault_injector,
    inject_template,
    injectable,
    plugin_restarter,
    serving,
)
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.controlplane.build import controlplane_built
from harness.controlplane.driverparts import driver_built, not_built_line
from harness.controlplane.nodeparts import containerd_built, kubelet_built
from harness.core.drivers import driver_ref
from harness.core.versions import REPO_ROOT, load_matrix


def real_driver_missing(ref: str, minor_name: str | None = None) -> str | None:
    """`ref`: NAME@VERSION as versions.toml [drivers] knows it; on nodes of `minor_name` (the
    run's --k8s-version, else the default minor)."""
    matrix = load_matrix()
    minor = matrix.minor(minor_name or matrix.default_minor)
    if minor_name and not controlplane_built(minor):  # make test builds the default one first
        return f"the control plane of {minor.name} is not built: run `make controlplane K8S={minor.name}`"
    spec, version = driver_ref(ref)
    if why := missing_requirement():
        return why
    if kubelet_built(minor) is None or containerd_built(matrix) is None:
        return f"real nodes are not built: run `make nodeparts K8S={minor.name}`"
    if driver_built(spec, version) is None:
        return not_built_line(spec, version)
    return None


def run_qualify(
    kubeconfig: Path,
    driver: str,
    image: str,
    out: Path,
    suites: tuple[str, ...],
    restart: Sequence[str] = (),
    inject: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`dra-harness qualify` of `driver` (NAME@VERSION) with its node side's container image,
    `restart` as its --plugin-restart-command and `inject` as its --inject-fault-command
    (harness.clusters.realnodes.control)."""
    argv = [sys.executable, "-m", "harness.cli.main", "qualify", f"--kubeconfig={kubeconfig}"]
    argv += [f"--driver-spec={driver}", f"--container-image={image}", f"--out={out}"]
    argv += [f"--plugin-restart-command={shlex.join(restart)}"] if restart else []
    argv += [f"--inject-fault-command={shlex.join(inject)}"] if inject else []
    argv += [f"--suite={s}" for s in suites]
    return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1500, check=False)


class RealDriverCluster(RealNodes):
    """The suites' real nodes (cluster, client, image, node directories) with a driver's roots
    and qualify."""

    @property
    def roots(self) -> dict[str, Path]:
        """Each node's fake driver root, for drivers that have one (NVIDIA's)."""
        assert self.cluster.real is not None
        return {name: r for name, n in self.cluster.real.nodes.items() if (r := n.driver_root) is not None}

    def qualify(
        self, driver: str, out: Path, suites: tuple[str, ...] = (), inject: Sequence[str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`dra-harness qualify` with this process restarting the plugins (the nodes' owner) and,
        on nodes with a fake NVIDIA root, making their devices sick (its built-in injector), or
        `inject` as the --inject-fault-command."""
        real = self.cluster.real
        assert real is not None
        with serving(plugin_restarter(real), fault_injector(real)) as restart:
            if inject is None:  # `inject` given: a planted bug's own command
                inject = inject_template(restart) if injectable(real) else []
            return run_qualify(self.cluster.kubeconfig, driver, self.image, out, suites, restart, inject)


@contextmanager
def real_driver_cluster(
    run_dir: Path, pools: Sequence[RealPoolSpec], minor: str | None = None
) -> Iterator[RealDriverCluster]:
    """A dra-all cluster of `minor` (the default when None; the personalities are compared with
    every gate on) with `pools`; a start that fails fails the test in one line, having undone
    what it started."""
    cluster = LocalCluster(minor, profile="dra-all", run_dir=run_dir, real_pools=list(pools))
    with running(cluster) as kube:
        yield RealDriverCluster(cluster, kube)


def assert_node_side_evidence(report: dict[str, Any], node: str, command: str) -> None:
    """qualify.json's node-side evidence: what `command` showed in the claiming container (its
    allocated device, nothing in its neighbour) and the plugin restart's line, on a node named as
    the regex `node` says."""
    [node_cap] = [c for c in report["capabilities"] if c["id"] == "node-side"]
    [seen] = [e for e in node_cap["evidence"] if "in the claiming container shows" in e]
    shows = rf"on {node}, `{command}` in the claiming container shows \['gpu-\d'\] "
    assert re.search(shows + rf"\(allocated: {node}/gpu-\d\); in the other container: \[\]$", seen), seen
    [restart] = [e for e in node_cap["evidence"] if "after a plugin restart" in e]
    kept = rf"on {node}, after a plugin restart the running pod kept \['gpu-\d'\] \(0 restarts\) and "
    assert re.search(kept + r"a new pod got \['gpu-\d'\]; both unprepared after$", restart), restart
