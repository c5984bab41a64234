"""`dra-harness cluster ...` and `dra-harness kind ...`: long-lived local clusters and the kind
clusters and engines the harness leaves (harness.cli.main owns the rest of the command line)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TypeAlias

from fake_driver.command.cliargs import OneLineParser, nonempty
from harness.cli.upgrade import cmd_cluster_upgrade
from harness.core.errors import HarnessError
from harness.core.versions import load_matrix, release_label

# harness.clusters.local.kubelets.KUBELET_MODES, default first, spelled here: that module pulls
# the Kubernetes client in, which every command would then load (tests/harness/cli checks both agree).
KUBELET_CHOICES = ("drain", "in-place", "keep")

Subparsers: TypeAlias = "argparse._SubParsersAction[OneLineParser]"


def cmd_cluster_up(args: argparse.Namespace) -> int:
    from harness.clusters.named import gpufleet, records
    from harness.clusters.named import lifecycle as named

    fleet = None if args.no_fleet else Path(args.fleet) if args.fleet else gpufleet.DEMO_FLEET
    record, already = named.start(
        args.name,
        args.k8s_version,
        args.gates,
        args.real_nodes,
        fleet,
        args.driver or "",
        kubelet=args.kubelet,
    )
    how = "is already running" if already else "is ready"
    print(
        f"# cluster {args.name!r} {how}: Kubernetes {release_label(record.kubernetes)}, "
        f"gates {record.profile}; "
        f"logs in {records.state_dir(args.name) / 'logs'}"
    )
    if fleet is not None and not already:
        print(f"# GPU fleet from {fleet}; `dra-harness cluster status --name {args.name}` shows it")
    print(f"export KUBECONFIG={record.kubeconfig}", flush=True)
    named.acknowledge(record)
    return 0


def cmd_cluster_down(args: argparse.Namespace) -> int:
    from harness.clusters.named import lifecycle as named

    stopped = named.down(args.name)
    print(f"cluster {args.name!r} {'stopped' if stopped else 'is not running'}")
    return 0


def cmd_cluster_status(args: argparse.Namespace) -> int:
    from harness.clusters.named import gpufleet, records
    from harness.kit.kube import API_ERRORS, Kube

    record = records.running(args.name)
    if record is None:
        print(f"cluster {args.name!r} is not running")
        return 1
    if args.json:
        print(json.dumps(record.to_json(), indent=2))
        return 0
    phase = "" if record.phase == "ready" else f" ({record.phase})"
    k8s = release_label(record.kubernetes)
    print(f"# cluster {args.name!r}: Kubernetes {k8s}, gates {record.profile}{phase}")
    if record.phase.startswith("upgrading"):  # its API server may be down: no pool table
        print(f"# pools after the step; `dra-harness cluster status --name {args.name}` again")
        return 0
    if record.phase.startswith("unresponsive"):  # the supervisor's last /readyz went unanswered
        raise HarnessError(f"cluster {args.name!r} is {record.phase}")
    kube = Kube.from_kubeconfig(record.kubeconfig)
    try:  # each request bounded: a stopped (SIGSTOP) API server is one line, not a traceback
        pools = gpufleet.fleet_status(kube)
    except API_ERRORS as err:
        raise HarnessError(f"cluster {args.name!r}: {kube.failure(err, 'the pool listing')}") from None
    print(
        f"{'POOL':<16}{'NODES':>7}{'READY':>7}{'DRA DEVICES':>13}{'ALLOCATED':>11}"
        f"{'nvidia.com/gpu':>16}{'REQUESTED':>11}"
    )
    for p in pools:
        print(
            f"{p.pool:<16}{p.nodes:>7}{p.ready:>7}{p.published:>13}{p.allocated:>11}{p.legacy:>16}{p.legacy_requested:>11}"
        )
    print(f"export KUBECONFIG={record.kubeconfig}")
    return 0


def cmd_cluster_list(_: argparse.Namespace) -> int:
    import time

    from harness.clusters.named import records

    clusters = records.stored()
    if not clusters:
        print(f"no clusters in {records.clusters_root()}")
        return 0
    width = max(len(c.name) for c in clusters) + 2  # names run to 40 characters
    print(f"{'NAME':<{width}}{'STATE':<10}{'KUBERNETES':<12}{'SIZE':>9}  LAST WRITTEN")
    now = time.time()
    for c in clusters:
        age = (now - c.modified) / 3600
        when = f"{age:.0f}h ago" if age < 48 else f"{age / 24:.0f}d ago"
        state = "running" if c.running else "stopped"
        print(f"{c.name:<{width}}{state:<10}{c.kubernetes or '-':<12}{c.size / 2**20:>7.0f}MB  {when}")
    print("# `dra-harness cluster delete --name NAME` removes a stopped cluster's directory")
    return 0


def cmd_cluster_delete(args: argparse.Namespace) -> int:
    from harness.clusters.named import lifecycle as named

    freed = named.delete(args.name)
    print(f"cluster {args.name!r} deleted: {freed / 2**20:.0f} MB freed")
    return 0


def cmd_kind_cleanup(args: argparse.Namespace) -> int:
    from harness.clusters.kind.leftovers import cleanup_leftovers

    for line in cleanup_leftovers(args.older_than, args.kind_bin, args.dry_run):
        print(line)
    return 0


def cmd_kind_images(args: argparse.Namespace) -> int:
    from harness.clusters.kind.images.node import build_images

    matrix = load_matrix()
    print(build_images(matrix, matrix.minor(args.k8s_version or matrix.default_minor), harness=args.harness))
    return 0


def real_node_count(text: str) -> int:
    from harness.clusters.realnodes.pools import MAX_NODES

    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_NODES:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_NODES}, got {text!r}")
    return count


def add_cluster_parsers(sub: Subparsers) -> None:
    cl = sub.add_parser("cluster", help="a long-lived local cluster").add_subparsers(
        dest="action", required=True
    )
    actions = (
        ("up", cmd_cluster_up),
        ("down", cmd_cluster_down),
        ("status", cmd_cluster_status),
        ("upgrade", cmd_cluster_upgrade),
        ("delete", cmd_cluster_delete),
    )
    for action, func in actions:
        p = cl.add_parser(action)
        p.add_argument(
            "--name",
            default=os.environ.get("DRA_HARNESS_CLUSTER") or "default",
            help="the cluster's name (default: $DRA_HARNESS_CLUSTER, else 'default')",
        )
        if action == "up":
            p.add_argument("-k", "--k8s-version", type=nonempty)
            p.add_argument("-g", "--gates", type=nonempty)
            p.add_argument(
                "--real-nodes",
                type=real_node_count,
                default=0,
                metavar="N",
                help="N real nodes (kubelet + containerd, make nodeparts), besides kwok pools",
            )
            p.add_argument(
                "--driver",
                type=nonempty,
                metavar="NAME@VERSION",
                help="a real DRA driver's plugin on the real nodes instead of the fake one, 4 devices "
                "each (versions.toml [drivers]; make drivers), e.g. example@v0.4.0",
            )
            p.add_argument(
                "--kubelet",
                type=nonempty,
                metavar="MINOR",
                help="the real nodes' kubelet minor: the cluster's (default) or up to 3 older",
            )
            fleet = p.add_mutually_exclusive_group()
            fleet.add_argument(
                "--fleet",
                type=nonempty,
                metavar="FILE",
                help="fake_driver fleet YAML: its nodes, DeviceClasses and a publisher kept running "
                "(default: harness/clusters/named/demo-fleet.yaml)",
            )
            fleet.add_argument("--no-fleet", action="store_true", help="no nodes, driver or classes")
        if action == "upgrade":
            p.add_argument(
                "--to",
                type=nonempty,
                required=True,
                help="the minor to step to, one up or down (versions.toml)",
            )
            p.add_argument(
                "--kubelets",
                choices=KUBELET_CHOICES,
                default=KUBELET_CHOICES[0],
                help="real nodes' kubelets on an upgrade: drain each node and swap in the target's "
                "kubelet (default, upstream's way), swap in place, or keep them at their minor",
            )
        if action == "status":
            p.add_argument("--json", action="store_true", help="the supervisor's record (PIDs, kubeconfig)")
        p.set_defaults(func=func)
    cl.add_parser("list", help="every named cluster's directory: running or stopped, its size").set_defaults(
        func=cmd_cluster_list
    )
    kind = sub.add_parser("kind", help="kind clusters and engines the harness left").add_subparsers(
        dest="action", required=True
    )
    p = kind.add_parser("cleanup", help="give back engines of killed runs; delete old dra-harness-* clusters")
    p.add_argument("--older-than", type=nonempty, default="6h", help="e.g. 30m, 6h, 2d (default 6h)")
    p.add_argument("--kind-bin", type=nonempty, help="kind binary (default: $DRA_HARNESS_KIND or PATH)")
    p.add_argument("--dry-run", action="store_true", help="only list them")
    p.set_defaults(func=cmd_kind_cleanup)
    p = kind.add_parser("images", help="build the local kind node image of a minor (no registry)")
    p.add_argument("-k", "--k8s-version", type=nonempty, help="minor (default: versions.toml default_minor)")
    p.add_argument(
        "--harness",
        action="store_true",
        help="also the harness image the in-cluster qualify Job and Sonobuoy plugin run",
    )
    p.set_defaults(func=cmd_kind_images)
