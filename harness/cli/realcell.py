"""A matrix cell whose driver is a real one: `NAME@VERSION` of versions.toml [drivers] where a
cell names its personality (`1.37/example@v0.4.0/dra-all`). The cell is its own local cluster
with REAL_NODES real nodes running the driver's kubelet plugin, then `qualify` of that driver
with the cell's suites (by default qualify's: the others test the harness and the fake driver,
and only skip on a real one): the cell's directory gets what any cell's does (summary.json, its
junit file) and the qualification (qualify.html). The matrix runs it as the cell's process:

    python -m harness.cli.realcell --cell 1.37/example@v0.4.0/dra-all --out DIR \\
        --junit junit_<slug>.xml [--suite PATH ...] [-- pytest args]

Exit codes as a pytest cell's: 0 passed, 1 a capability failed, 3 the cell could not run.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fake_driver.command.cliargs import OneLineParser, nonempty
from harness.clusters.host.processes import one_line_errors
from harness.clusters.host.rundirs import session_run_dir
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.realnodes.control import (
    fault_injector,
    inject_template,
    injectable,
    plugin_restarter,
    serving,
)
from harness.clusters.realnodes.pools import RealPoolSpec
from harness.core.cells import Cell
from harness.core.drivers import driver_ref, is_driver_ref
from harness.core.errors import HarnessError
from harness.core.redaction import redact_tree
from harness.reports.summary import read_summary, write_summary

if TYPE_CHECKING:
    from harness.qualify.run import QualifyRequest

# The matrix starts this module by name (harness.matrix.runner): products import no command.
REAL_NODES = 2
GPUS_PER_NODE = 8  # the suites' largest single-node request (8 GPUs) fits
POOL = "real"
PROG = "dra-harness matrix (real-driver cell)"
# qualify's exit codes (harness.qualify.report.EXIT_CODES) as a pytest cell's
# (harness.matrix.runner): a FLAKY run is pytest's pass (the matrix reads FLAKY from
# summary.json), NOTHING RAN pytest's "no tests collected".
_CELL_EXIT = {0: 0, 3: 1, 4: 5, 5: 0}
COULD_NOT_RUN = 3


def run_cell(cell: Cell, out: Path, junit: str, suites: tuple[str, ...], extra: tuple[str, ...]) -> int:
    from harness.qualify.run import qualify

    spec, version = driver_ref(cell.personality)
    pool = RealPoolSpec(POOL, count=REAL_NODES, gpus=GPUS_PER_NODE, driver=cell.personality)
    run_dir = session_run_dir(cell.minor, cell.profile, "realcell")
    cluster = LocalCluster(cell.minor, cell.profile, run_dir=run_dir, real_pools=[pool])
    try:
        print(f"{cell.id}: Kubernetes {cluster.minor.release}, {REAL_NODES} real nodes", flush=True)
        cluster.start()
        assert cluster.real is not None  # real_pools given
        image = cluster.real.busybox_ref
        known = spec.qualify_defaults(version)
        with serving(plugin_restarter(cluster.real), fault_injector(cluster.real)) as restart:
            code = qualify(_request(cluster, known, image, suites, out, extra, restart))
    finally:
        cluster.stop()
        redact_tree(run_dir)  # kept for diagnostics, as a pytest cell's: no key outlives the cluster

    _name_the_cell(out / "summary.json", cell)
    if (out / "junit.xml").exists() and junit != "junit.xml":
        shutil.copyfile(out / "junit.xml", out / junit)  # the name every cell's junit has
    return _CELL_EXIT.get(code, COULD_NOT_RUN)


def _request(
    cluster: LocalCluster,
    known: dict[str, str],
    image: str,
    suites: tuple[str, ...],
    out: Path,
    extra: tuple[str, ...],
    restart: list[str],
) -> QualifyRequest:
    """qualify of the cell's driver on its real nodes: the spec's defaults, the nodes' own
    busybox, and a plugin restart through this process (harness.clusters.realnodes.control)."""
    from harness.qualify.run import ContainerViewArgs, QualifyRequest

    assert cluster.real is not None  # real_pools given
    return QualifyRequest(
        cluster.kubeconfig,
        known["driver_name"],
        known["device_class"],
        known["extended_resource"] or "nvidia.com/gpu",  # as `qualify` without the option
        suites=suites,
        out=out,
        view=ContainerViewArgs(known["container_command"], known["container_device_pattern"], image),
        release=known["driver_release"],
        pytest_extra=extra,
        plugin_restart=shlex.join(restart),
        # the built-in injector needs the NVML stand-in's control file (NVIDIA's nodes only)
        inject_fault=shlex.join(inject_template(restart)) if injectable(cluster.real) else "",
    )


def _name_the_cell(path: Path, cell: Cell) -> None:
    """qualify's pytest knows an external driver on an existing cluster; the matrix cell is
    this driver version on real nodes, and the readiness report tells cells apart by it."""
    if not path.exists():
        return
    summary = read_summary(path)
    summary.cell |= {"personality": cell.personality, "nodes": "real"}
    write_summary(path, summary)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    split = args.index("--") if "--" in args else len(args)
    parser = OneLineParser(prog=PROG)
    parser.add_argument("--cell", required=True, type=nonempty)
    parser.add_argument("--out", required=True, type=nonempty)
    parser.add_argument("--junit", default="junit.xml", type=nonempty)
    parser.add_argument("--suite", action="append", type=nonempty)
    ns = parser.parse_args(args[:split])

    ran: list[int] = []

    def command() -> int:
        cell = Cell.parse(ns.cell)
        if not is_driver_ref(cell.personality):
            raise HarnessError(f"cell {cell.id!r} names no real driver (NAME@VERSION)")
        from harness.qualify.run import DEFAULT_SUITES  # the suites that say something of a driver

        suites = tuple(ns.suite or DEFAULT_SUITES)
        ran.append(run_cell(cell, Path(ns.out), ns.junit, suites, tuple(args[split + 1 :])))
        return ran[0]

    code = one_line_errors(command, PROG)
    if ran:
        return ran[0]
    return COULD_NOT_RUN if code == 1 else code  # one line said why the cell did not run


if __name__ == "__main__":
    sys.exit(main())
