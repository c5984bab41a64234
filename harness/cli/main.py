"""dra-harness command line.

    dra-harness versions                       the matrix in versions.toml, what is built here
    dra-harness parts build test [--list]      what `make test` needs, built side by side, timed
    dra-harness parts build drivers [--driver example@v0.4.0]   real DRA drivers' kubelet plugins
    dra-harness controlplane build [-k 1.34]   build (or reuse) the control-plane binary
        [--nodes]                              ... and the real nodes' kubelet, containerd, images
    dra-harness cluster up|down|status         a local cluster to poke at with kubectl
    dra-harness cluster upgrade --to 1.37      ... its control plane, one minor up or down, in place
        [--real-nodes N]                       ... with N real nodes (kubelet, containerd, fake driver)
        [--kubelet 1.37]                       ... whose kubelet is of an older minor (skew policy)
    dra-harness run [-n 4] [PATH...] [-- ARGS] the main job: suites on the default cell, reports
    dra-harness matrix [--cells ...] [-j 2]    the suites on many cells in parallel, then the report
    dra-harness report [DIR | --merge DIR...]  the readiness report (HTML, Markdown, JSON), night.json
        [--baseline PREVIOUS]                  ... opening on what changed since (3: a new failure)
    dra-harness scan --kubeconfig K            read-only readiness scan (0 ready, 2 warnings, 3 blocking)
        [--krew-package DIR]                   ... or write its kubectl plugin's krew archive and manifest
    dra-harness upgrade --from 1.36 --to 1.37  rehearsed upgrade and back, its report
    dra-harness kind cleanup [--older-than 6h] delete kind clusters killed runs left

Errors the user can fix print as one line and exit 1; usage errors exit 2 (scan: 64, as 2 and 3
are its verdicts), also one line. Both
are found before any build, cluster or run starts. Output into a closed pipe (`| head`) ends
quietly with 141.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from fake_driver.command.cliargs import OneLineParser, nonempty, nonnegative_int, positive_int
from fake_driver.core.errors import end_quietly_on_broken_pipe
from harness.cli.bench import add_bench_curve_parser, add_bench_parser
from harness.cli.chart import add_chart_parsers
from harness.cli.cluster import Subparsers, add_cluster_parsers
from harness.cli.fleet import add_fleet_parser
from harness.cli.qualify import add_qualify_parser
from harness.cli.report import add_report_parser
from harness.cli.scan import add_scan_parser
from harness.cli.upgrade import add_upgrade_parser
from harness.clusters.host.processes import one_line_errors
from harness.controlplane.build import controlplane_built, ensure_controlplane, ensure_kwok
from harness.core.errors import HarnessError
from harness.core.outputs import check_output, check_report_args
from harness.core.versions import load_matrix

# xdist workers of `run` on one cluster: most of a suite test is waiting on the cluster, so
# more workers than the 2 cores a CI runner has (bench/parallel_cell.py measured the choice).
RUN_WORKERS = 4


def cmd_versions(_: argparse.Namespace) -> int:
    """Each minor with what is built of it here (a cluster of an unbuilt minor builds first)."""
    from harness.controlplane.buildlog import expected_seconds
    from harness.controlplane.nodeparts import kubelet_built

    matrix = load_matrix()
    for minor in matrix.minors.values():
        default = " (default)" if minor.name == matrix.default_minor else ""
        if minor.unavailable:
            status = f"unavailable: {minor.unavailable}"
        elif controlplane_built(minor):
            kubelet = "kubelet built" if kubelet_built(minor) else "kubelet not built"
            if minor.kubelet_unavailable:
                kubelet = "kubelet unavailable"
            status = f"built, {kubelet}"
        else:
            eta = expected_seconds(f"k8slocal {minor.name}", matrix)
            how_long = f", a build of ~{eta / 60:.0f} min" if eta else ""
            status = f"not built (`make controlplane K8S={minor.name}`{how_long})"
        go = f" (GOTOOLCHAIN={minor.go_toolchain})" if minor.go_toolchain else ""
        print(f"{minor.name}{default}  {minor.kubernetes}{go}  profiles={','.join(minor.profiles)}  {status}")
    return 0


def cmd_parts_build(args: argparse.Namespace) -> int:
    """`dra-harness parts build test`: every part of the set, two lanes side by side, a table."""
    from harness.cli.parts import build_parts, check_budget, driver_parts, parts_for, render_outcomes

    matrix = load_matrix()
    if args.driver and args.set != "drivers":
        raise HarnessError("--driver names drivers of the set `drivers` only")
    parts = driver_parts(args.driver) if args.driver else parts_for(args.set, matrix)
    check_budget(parts, matrix)
    if args.list:
        print("\n".join(f"{p.name}  ({p.lane})" for p in parts))
        return 0
    outcomes = build_parts(parts)
    print(render_outcomes(outcomes, matrix))
    failed = [o for o in outcomes if o.error]
    if failed:
        raise HarnessError(
            f"{len(failed)} part(s) failed: " + "; ".join(f"{o.part}: {o.error}" for o in failed)
        )
    return 0


def cmd_parts_budget(args: argparse.Namespace) -> int:
    from harness.cli.parts import budget_report

    table, problems = budget_report(args.total_seconds, load_matrix())
    print(table)
    for problem in problems:
        print(f"dra-harness: {problem}", file=sys.stderr)
    return 1 if problems else 0


def cmd_controlplane_build(args: argparse.Namespace) -> int:
    matrix = load_matrix()
    names = list(matrix.minors) if args.k8s_version == "all" else [args.k8s_version or matrix.default_minor]
    for name in names:
        if not args.nodes_only:
            print(ensure_controlplane(matrix.minor(name)))
        if args.nodes or args.nodes_only:
            from harness.controlplane.nodeparts import build_node_parts

            parts = build_node_parts(matrix.minor(name), matrix)
            print(f"{parts.kubelet}\n{parts.containerd_dir}\n{parts.pause_archive}\n{parts.busybox_archive}")
    if not args.nodes_only:
        print(ensure_kwok(matrix))
    return 0


def _reruns(args: argparse.Namespace) -> list[str]:
    """pytest-rerunfailures: a failed test runs again in a fresh namespace; a pass then is
    recorded as flaky (summary.json `rerun`), never as a plain pass."""
    return ["--reruns", str(args.reruns)] if args.reruns else []


def cmd_run(args: argparse.Namespace) -> int:
    from harness.cli.run import run_suites

    extra = [*(["-n", str(args.xdist)] if args.xdist else []), *_reruns(args), *args.pytest_args]
    return run_suites(args.k8s_version, args.gates, args.paths, extra)


def cmd_matrix(args: argparse.Namespace) -> int:
    from harness import matrix as m
    from harness.cli.run import resolve_test_paths
    from harness.core.versions import VERSIONS_FILE

    versions = Path(args.versions).resolve() if args.versions else VERSIONS_FILE
    matrix = load_matrix(versions)
    cells = m.cells_from(matrix, filters=args.cells)
    if args.list:
        if args.json:  # a CI job matrix: one runner per cell, merged by `report --merge`
            print(json.dumps({"include": [{"cell": c.id, "slug": c.slug} for c in cells]}))
        else:
            print("\n".join(c.id for c in cells))
        return 0
    if versions != VERSIONS_FILE:
        raise HarnessError(f"--versions {args.versions} is for --list only: the suites read {VERSIONS_FILE}")
    paths = resolve_test_paths(args.suite) if args.suite else ["suites"]
    check_output(m.REPORTS, "reports directory", directory=True)
    extra = [*(["-n", str(args.xdist)] if args.xdist else []), *_reruns(args), *args.pytest_args]
    result = m.run_matrix(matrix, cells, jobs=args.jobs, paths=paths, extra=extra)
    for run in result.runs:
        print(f"{run.cell.id:<34} {run.state:<11} {run.wall_seconds:6.0f}s  exit {run.exit_code}")
    print(f"total {result.wall_seconds:.0f}s (control-plane check/build {result.build_seconds:.0f}s)")
    if not args.no_report:
        from harness.readiness import write_report

        for path in write_report([result.out], result.out):
            print(f"report: {path}")
    print(f"reports: {result.out}")
    return result.exit_code


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="dra-harness", description="DRA end-to-end test harness")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("versions", help="list the version matrix").set_defaults(func=cmd_versions)

    cp = sub.add_parser("controlplane", help="control-plane binaries").add_subparsers(
        dest="action", required=True
    )
    build = cp.add_parser("build", help="build the control plane for a minor (or 'all')")
    build.add_argument("-k", "--k8s-version", type=nonempty)
    build.add_argument(
        "--nodes", action="store_true", help="also the real nodes' parts: kubelet, containerd, images"
    )
    build.add_argument(
        "--nodes-only", action="store_true", help="only the real nodes' parts (an older node's kubelet)"
    )
    build.set_defaults(func=cmd_controlplane_build)

    parts = sub.add_parser("parts", help="what a command needs built").add_subparsers(
        dest="action", required=True
    )
    pb = parts.add_parser("build", help="build a set of parts side by side and print what each took")
    pb.add_argument(
        "set",
        choices=("test", "kind", "drivers", "mutants"),
        help="test: what `make test` needs; kind: the kind engine; drivers: real DRA drivers; "
        "mutants: planted-bug drivers",
    )
    pb.add_argument("--list", action="store_true", help="list the set's parts, build nothing")
    pb.add_argument(
        "--driver",
        action="append",
        default=[],
        type=nonempty,
        metavar="NAME@VERSION",
        help="drivers: only these (e.g. example@v0.4.0; default: every version in versions.toml)",
    )
    pb.set_defaults(func=cmd_parts_build)
    budget = parts.add_parser("budget", help="what this cache built, against versions.toml [budget]")
    budget.add_argument(
        "--total-seconds", type=nonnegative_int, default=0, help="the whole run's time, checked too"
    )
    budget.set_defaults(func=cmd_parts_budget)

    add_cluster_parsers(sub)
    add_scan_parser(sub)
    _run_parsers(sub)
    add_bench_parser(sub)
    add_bench_curve_parser(sub)
    add_chart_parsers(sub)
    return parser


def _run_parsers(sub: Subparsers) -> None:
    run = sub.add_parser("run", help="run the suites on one cell and write reports; after --: pytest's args")
    run.add_argument("-k", "--k8s-version", type=nonempty)
    run.add_argument("-g", "--gates", type=nonempty)
    run.add_argument("paths", nargs="*", type=nonempty, help="test paths or node ids (default: suites)")
    run.add_argument(
        "-n",
        "--xdist",
        type=nonnegative_int,
        default=RUN_WORKERS,
        help=f"pytest-xdist workers on the one session cluster (default {RUN_WORKERS}; 0: one process)",
    )
    run.add_argument(
        "--reruns",
        type=nonnegative_int,
        default=0,
        help="run a failed test again this many times; a later pass is reported FLAKY (default 0)",
    )
    run.set_defaults(func=cmd_run)

    mx = sub.add_parser("matrix", help="run the suites on many cells in parallel, then the readiness report")
    mx.add_argument(
        "--cells",
        action="append",
        help="cells to run: <minor>/<personality>/<profile>, comma-separated or repeated, * wildcards, "
        "or 'all' (default: the 1.38, 1.37 and 1.36 dra-all cells for nvidia-v0.5 and nvidia-v0.4)",
    )
    mx.add_argument("-j", "--jobs", type=positive_int, default=2, help="cells at a time (default 2)")
    mx.add_argument("-n", "--xdist", type=nonnegative_int, default=0, help="pytest-xdist workers per cell")
    mx.add_argument(
        "--reruns",
        type=nonnegative_int,
        default=1,
        help="run a failed test again this many times; a later pass is reported FLAKY (default 1)",
    )
    mx.add_argument("--suite", action="append", type=nonempty, help="test paths per cell (default: suites)")
    mx.add_argument("--list", action="store_true", help="print the selected cells and exit")
    mx.add_argument("--json", action="store_true", help="with --list: as a CI job matrix ({include: [...]})")
    mx.add_argument("--versions", type=nonempty, help=argparse.SUPPRESS)
    mx.add_argument("--no-report", action="store_true", help="skip the readiness report")
    mx.set_defaults(func=cmd_matrix)  # after --: passed to every cell's pytest

    add_qualify_parser(sub)
    add_fleet_parser(sub)
    add_upgrade_parser(sub)

    add_report_parser(sub)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        try:
            return _main(list(sys.argv[1:] if argv is None else argv))
        finally:
            sys.stdout.flush()  # here, where a closed pipe can still be caught
    except BrokenPipeError:  # `dra-harness ... | head`: the reader has what it wanted
        return end_quietly_on_broken_pipe()


def kubectl_dra_scan() -> int:
    """`kubectl dra-scan ...` (kubectl runs `kubectl-dra_scan` from PATH with the rest of the
    line): `dra-harness scan ...`, on the current context of $KUBECONFIG or ~/.kube/config."""
    return main(["scan", *sys.argv[1:]])


def _main(argv: list[str]) -> int:
    parser = build_parser()
    split = argv.index("--") if "--" in argv else len(argv)  # the rest is pytest's
    args, unknown = parser.parse_known_args(argv[:split])
    if unknown:
        parser.exit(
            getattr(args, "usage_exit", 2),
            f"{parser.prog}: error: unrecognized arguments: {' '.join(unknown)} (see --help)\n",
        )
    args.pytest_args = argv[split + 1 :]
    if args.pytest_args and args.command not in ("run", "matrix"):
        parser.error(f"{args.command} takes no arguments after --; only run and matrix pass them to pytest")
    try:
        check_report_args(args.pytest_args)  # before a cluster starts, not pytest's INTERNALERROR
    except HarnessError as err:
        parser.error(str(err))
    return one_line_errors(lambda: int(args.func(args)))


if __name__ == "__main__":
    sys.exit(main())
