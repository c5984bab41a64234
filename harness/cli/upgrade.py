"""`dra-harness upgrade --from 1.36 --to 1.37`: the upgrade rehearsal and its report
(harness.upgrade.report), and `dra-harness cluster upgrade`. Exit 0 when every check held, 3
when one did not, 1 when it could not start (bad minors, a step the skew policy forbids, a build failure)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fake_driver.command.cliargs import nonempty


def cmd_upgrade(args: argparse.Namespace) -> int:
    from harness.core.layout import REPORTS, new_run_id
    from harness.core.outputs import check_output
    from harness.upgrade.report import rehearse, write_report

    out = Path(args.out) if args.out else REPORTS / f"upgrade-{args.before}-{args.after}-{new_run_id()}"
    check_output(out, "--out", directory=True)
    report = rehearse(args.before, args.after, args.gates)
    for s in report.steps:
        print(f"step {s['before']} -> {s['after']}: {s['seconds']:.1f}s")
    print(f"rehearsal {report.before} -> {report.after} -> {report.before}: {report.wall_seconds:.0f}s")
    for path in write_report(report, out):
        print(f"report: {path}")
    if report.failed:
        print(f"FAILED: {report.failed}")
        return 3
    return 0


def cmd_cluster_upgrade(args: argparse.Namespace) -> int:
    """`dra-harness cluster upgrade --to 1.37`: the named cluster's control plane, in place,
    then its real nodes' kubelets (`--kubelets`, harness.clusters.named.upgrade), one line per
    real node with its kubeletVersion before and after. Exit 0 once it runs the target, 1 when refused or
    failed (one line), 130 on Ctrl-C with what the cluster runs."""
    from harness.clusters.named.upgrade import Interrupted, request_upgrade

    try:
        outcome = request_upgrade(args.name, args.to, args.kubelets)
    except Interrupted as stop:
        print(f"dra-harness: {stop.state}", file=sys.stderr)
        return stop.code
    if not outcome.ok:
        print(f"dra-harness: cluster {args.name!r}: {outcome.message.splitlines()[0]}", file=sys.stderr)
        return 1
    steps = ", ".join(f"{c} {s:.1f}s" for c, s in outcome.components.items())
    step = f"{outcome.before} -> {outcome.to} in {outcome.seconds:.1f}s"
    print(f"# cluster {args.name!r} upgraded {step} ({steps})")
    for node, (was, now) in sorted(outcome.nodes.items()):
        did = f"{was} -> {now} (drained)" if outcome.kubelets == "drain" else f"{was} -> {now}"
        if was == now:
            did = f"{was} kept (--kubelets {outcome.kubelets})"
        elif outcome.kubelets == "in-place":
            did = f"{was} -> {now} (in place, not drained)"
        print(f"node {node}: kubelet {did}")
    if outcome.kwok_nodes:
        print(f"kwok nodes: {outcome.kwok_nodes}, no kubelet: left as they are")
    return 0


def add_upgrade_parser(sub: Any) -> None:
    p = sub.add_parser(
        "upgrade",
        help="rehearse an in-place control-plane upgrade and back with DRA workloads; write the report",
    )
    p.add_argument(
        "--from", dest="before", type=nonempty, required=True, help="the minor to start on, e.g. 1.36"
    )
    p.add_argument("--to", dest="after", type=nonempty, required=True, help="the minor to step to, e.g. 1.37")
    p.add_argument(
        "--gates", type=nonempty, default="dra-all", help="gate profile of both minors (versions.toml)"
    )
    p.add_argument(
        "--out", type=nonempty, help="report directory (default: reports/out/upgrade-<from>-<to>-<id>)"
    )
    p.set_defaults(func=cmd_upgrade)
