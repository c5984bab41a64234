"""dra-harness command line.

    dra-harness versions                       the matrix in versions.toml
    dra-harness controlplane build [-k 1.34]   build (or reuse) the control-plane binary
    dra-harness cluster up|down|status         a local cluster to poke at with kubectl
    dra-harness run                            the main job: suites on the default cell, reports
    dra-harness matrix [--cells ...] [-j 2]    the suites on many cells in parallel, then the report
    dra-harness report [DIR | --merge DIR...]  the readiness report (HTML, Markdown, JSON)
    dra-harness scan --kubeconfig K            read-only readiness scan (0 ready, 2 warnings, 3 blocking)

Errors the user can fix print as one line and exit 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.controlplane.build import cache_root, ensure_controlplane, ensure_kwok
from harness.errors import HarnessError, WaitTimeout
from harness.redaction import redact
from harness.versions import REPO_ROOT, load_matrix
from harness.waits import TIMEOUTS, wait_for


def _state_dir(name: str) -> Path:
    return cache_root() / "clusters" / name


def _read_state(state_dir: Path) -> dict[str, object] | None:
    try:
        state: dict[str, object] = json.loads((state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return state


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def cmd_versions(_: argparse.Namespace) -> int:
    matrix = load_matrix()
    for minor in matrix.minors.values():
        status = f"unavailable: {minor.unavailable}" if minor.unavailable else "available"
        default = " (default)" if minor.name == matrix.default_minor else ""
        print(f"{minor.name}{default}  {minor.kubernetes}  profiles={','.join(minor.profiles)}  {status}")
    return 0


def cmd_controlplane_build(args: argparse.Namespace) -> int:
    matrix = load_matrix()
    names = list(matrix.minors) if args.k8s_version == "all" else [args.k8s_version or matrix.default_minor]
    for name in names:
        print(ensure_controlplane(matrix.minor(name)))
    print(ensure_kwok(matrix))
    return 0


def cmd_cluster_up(args: argparse.Namespace) -> int:
    matrix = load_matrix()
    minor = matrix.minor(args.k8s_version or matrix.default_minor)
    minor.profile(args.gates or matrix.default_profile)
    state_dir = _state_dir(args.name)
    state = _read_state(state_dir)
    if state and _alive(state.get("supervisor_pid")):
        print(f"# cluster {args.name!r} is already running ({state['kubernetes']}, {state['profile']})")
        print(f"export KUBECONFIG={state['kubeconfig']}")
        return 0
    ensure_controlplane(minor)  # build in the foreground, where progress is visible
    ensure_kwok(matrix)
    state_dir.mkdir(parents=True, exist_ok=True)
    log = (state_dir / "supervisor.log").open("ab")
    cmd = [
        sys.executable,
        "-m",
        "harness.clusters.supervisor",
        "--state-dir",
        str(state_dir),
        "--k8s-version",
        minor.name,
        "--gates",
        args.gates or matrix.default_profile,
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=REPO_ROOT,
    )

    def observe() -> dict[str, object]:
        if proc.poll() is not None:
            tail = (state_dir / "supervisor.log").read_text(errors="replace").strip().splitlines()[-20:]
            raise HarnessError("cluster failed to start:\n" + "\n".join(tail))
        return _read_state(state_dir) or {}

    state = wait_for(
        observe,
        lambda s: bool(s.get("ready")),
        timeout=TIMEOUTS.component_ready * 2,
        describe=f"cluster {args.name!r} ready",
    )
    print(
        f"# cluster {args.name!r}: Kubernetes {state['kubernetes']}, gates {state['profile']}; "
        f"logs in {state_dir / 'logs'}"
    )
    print(f"export KUBECONFIG={state['kubeconfig']}")
    return 0


def cmd_cluster_down(args: argparse.Namespace) -> int:
    state_dir = _state_dir(args.name)
    state = _read_state(state_dir)
    pid = state.get("supervisor_pid") if state else None
    if not isinstance(pid, int) or not _alive(pid):
        print(f"cluster {args.name!r} is not running")
        return 0
    os.kill(pid, signal.SIGTERM)
    wait_for(
        lambda: _alive(pid),
        lambda alive: not alive,
        timeout=TIMEOUTS.deletion,
        describe=f"cluster {args.name!r} supervisor (pid {pid}) to exit",
    )
    print(f"cluster {args.name!r} stopped")
    return 0


def cmd_cluster_status(args: argparse.Namespace) -> int:
    state = _read_state(_state_dir(args.name))
    if not state or not _alive(state.get("supervisor_pid")):
        print(f"cluster {args.name!r} is not running")
        return 1
    print(json.dumps(state, indent=2))
    return 0


def cmd_scan(args: argparse.Namespace) -> int:
    from harness.scan import scan

    kubeconfig = Path(args.kubeconfig or os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config")
    if not kubeconfig.exists():
        raise HarnessError(f"kubeconfig {kubeconfig} does not exist")
    return scan(
        kubeconfig,
        args.extended_resource,
        args.pool_label,
        args.gpu_driver,
        Path(args.json) if args.json else None,
    )


def cmd_run(args: argparse.Namespace) -> int:
    from harness.run import run_suites

    return run_suites(args.k8s_version, args.gates, list(args.pytest_args))


def cmd_matrix(args: argparse.Namespace) -> int:
    from harness import matrix as m
    from harness.versions import VERSIONS_FILE

    versions = Path(args.versions).resolve() if args.versions else VERSIONS_FILE
    matrix = load_matrix(versions)
    cells = m.cells_from(matrix, filters=args.cells)
    if args.jobs < 1:
        raise HarnessError(f"--jobs must be at least 1, got {args.jobs}")
    if args.list:
        if args.json:  # a CI job matrix: one runner per cell, merged by `report --merge`
            print(json.dumps({"include": [{"cell": c.id, "slug": c.slug} for c in cells]}))
        else:
            print("\n".join(c.id for c in cells))
        return 0
    if versions != VERSIONS_FILE:
        raise HarnessError(f"--versions {args.versions} is for --list only: the suites read {VERSIONS_FILE}")
    passthrough = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    extra = [*(["-n", str(args.xdist)] if args.xdist else []), *passthrough]
    result = m.run_matrix(matrix, cells, jobs=args.jobs, paths=args.suite or ["suites"], extra=extra)
    for run in result.runs:
        print(f"{run.cell.id:<34} {run.state:<11} {run.wall_seconds:6.0f}s  exit {run.exit_code}")
    print(f"total {result.wall_seconds:.0f}s (control-plane check/build {result.build_seconds:.0f}s)")
    if not args.no_report:
        from harness.readiness import write_report

        for path in write_report([result.out], result.out):
            print(f"report: {path}")
    print(f"reports: {result.out}")
    return result.exit_code


def cmd_bench(args: argparse.Namespace) -> int:
    from harness.bench.modes import MODES
    from harness.bench.scale import MAX_BATCHES, format_summary, run, validate
    from harness.readiness.report import DEFAULT_BENCH_DIR

    matrix = load_matrix()
    names = [n for k in args.k8s_version or [matrix.default_minor] for n in k.split(",") if n]
    minors = [matrix.minor(n) for n in names]  # unknown minors fail here, before any build
    modes = tuple(m for m in args.modes.split(",") if m) if args.modes else MODES
    if args.out and len(minors) > 1:
        raise HarnessError("--out names one file; give one -k with it")
    max_batches = MAX_BATCHES if args.max_batches is None else args.max_batches
    validate(args.nodes, args.pods, args.reps, modes, max_batches)
    for minor in minors:
        ensure_controlplane(minor)
    ensure_kwok(matrix)
    for minor in minors:
        out = Path(args.out) if args.out else DEFAULT_BENCH_DIR / f"scale-{minor.name}.json"
        summary = run(minor.name, args.nodes, args.pods, args.reps, modes, out, max_batches=max_batches)
        print(format_summary(summary))
        print(f"written to {out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harness.readiness import write_report
    from harness.run import REPORTS

    if args.merge:
        dirs = [Path(d) for d in args.merge]
        out = Path(args.out) if args.out else REPORTS / f"merged-{_now()}"
    else:
        if args.dir:
            dirs = [Path(args.dir)]
        else:
            runs = sorted(p for p in REPORTS.glob("*T*Z") if (p / "cells").is_dir())
            if not runs:
                raise HarnessError(
                    f"no matrix runs in {REPORTS}; run `dra-harness matrix` first or name a DIR"
                )
            dirs = [runs[-1]]
        out = Path(args.out) if args.out else dirs[0]
    bench = Path(args.bench) if args.bench else None
    for path in write_report(dirs, out, bench=bench):
        print(f"report: {path}")
    return 0


def _now() -> str:
    from harness.matrix import new_run_id

    return new_run_id()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dra-harness", description="DRA end-to-end test harness")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("versions", help="list the version matrix").set_defaults(func=cmd_versions)

    cp = sub.add_parser("controlplane", help="control-plane binaries").add_subparsers(
        dest="action", required=True
    )
    build = cp.add_parser("build", help="build the control plane for a minor (or 'all')")
    build.add_argument("-k", "--k8s-version")
    build.set_defaults(func=cmd_controlplane_build)

    cl = sub.add_parser("cluster", help="a long-lived local cluster").add_subparsers(
        dest="action", required=True
    )
    for action, func in (("up", cmd_cluster_up), ("down", cmd_cluster_down), ("status", cmd_cluster_status)):
        p = cl.add_parser(action)
        p.add_argument("--name", default="default")
        if action == "up":
            p.add_argument("-k", "--k8s-version")
            p.add_argument("-g", "--gates")
        p.set_defaults(func=func)

    scan = sub.add_parser("scan", help="read-only readiness scan of a live cluster (exit 0/2/3, 1 on error)")
    scan.add_argument("--kubeconfig", help="default: $KUBECONFIG, then ~/.kube/config")
    scan.add_argument("--extended-resource", default="nvidia.com/gpu", help="the legacy resource name")
    scan.add_argument("--pool-label", default="dra-harness.io/pool", help="node label that names a pool")
    scan.add_argument(
        "--gpu-driver",
        action="append",
        default=["gpu.nvidia.com"],
        help="DRA drivers that publish GPUs (repeatable)",
    )
    scan.add_argument("--json", help="also write the findings as JSON here")
    scan.set_defaults(func=cmd_scan)

    run = sub.add_parser("run", help="run the suites on one cell and write reports")
    run.add_argument("-k", "--k8s-version")
    run.add_argument("-g", "--gates")
    run.add_argument("pytest_args", nargs=argparse.REMAINDER)
    run.set_defaults(func=cmd_run)

    mx = sub.add_parser("matrix", help="run the suites on many cells in parallel, then the readiness report")
    mx.add_argument(
        "--cells",
        action="append",
        help="cells to run: <minor>/<personality>/<profile>, comma-separated or repeated, * wildcards, "
        "or 'all' (default: the 1.37 and 1.36 dra-all cells for nvidia-v25.12 and nvidia-v0.4)",
    )
    mx.add_argument("-j", "--jobs", type=int, default=2, help="cells at a time (default 2)")
    mx.add_argument("-n", "--xdist", type=int, default=0, help="pytest-xdist workers inside each cell")
    mx.add_argument("--suite", action="append", help="test paths per cell (default: suites)")
    mx.add_argument("--list", action="store_true", help="print the selected cells and exit")
    mx.add_argument("--json", action="store_true", help="with --list: as a CI job matrix ({include: [...]})")
    mx.add_argument("--versions", help=argparse.SUPPRESS)
    mx.add_argument("--no-report", action="store_true", help="skip the readiness report")
    mx.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: passed to every cell's pytest")
    mx.set_defaults(func=cmd_matrix)

    rp = sub.add_parser("report", help="the readiness report of a matrix run, or merged from several")
    rp.add_argument("dir", nargs="?", help="a matrix run directory (default: the latest in reports/out)")
    rp.add_argument("--merge", nargs="+", metavar="DIR", help="cell or run directories to merge")
    rp.add_argument("--out", help="where to write the report (default: DIR, or reports/out/merged-<id>)")
    rp.add_argument("--bench", help="scale benchmark JSON (default: every reports/out/bench/scale*.json)")
    rp.set_defaults(func=cmd_report)

    bn = sub.add_parser("bench", help="scale benchmark: what DRA costs the scheduler and the API server")
    bn.add_argument(
        "-k", "--k8s-version", action="append", help="minor(s), repeated or comma-separated (default: 1.37)"
    )
    bn.add_argument("--nodes", type=int, default=500, help="simulated nodes, 8 GPUs each (default 500)")
    bn.add_argument("--pods", type=int, default=2000, help="pods per mode and repetition (default 2000)")
    bn.add_argument("--reps", type=int, default=3, help="rounds of all modes (default 3)")
    bn.add_argument(
        "--max-batches",
        type=int,
        help="batches of --pods a repetition may run to last 10 s (default 1; 2: ~+80 s at 500 nodes)",
    )
    bn.add_argument("--modes", help="comma-separated subset of plain,legacy,bridged,claims (default: all)")
    bn.add_argument("--out", help="JSON output (default: reports/out/bench/scale-<minor>.json)")
    bn.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except (HarnessError, WaitTimeout) as err:  # a bounded wait's name and last state, no traceback
        # e.g. a server's error body: it may echo the request's credentials back
        print(f"dra-harness: {redact(str(err))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("dra-harness: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
