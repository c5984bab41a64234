"""`dra-harness fleet export`: a live cluster's GPU pools as a fleet file that `cluster up
--fleet` replays locally (the work is in harness.scan.fleetexport). Exit 0 written, 1 on
bad input or a cluster that cannot be read (one line)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from fake_driver.command.cliargs import nonempty


def cmd_fleet_export(args: argparse.Namespace) -> int:
    from fake_driver.core.errors import FakeDriverError
    from fake_driver.facts.profiles import get_profile
    from harness.core.errors import HarnessError
    from harness.core.outputs import check_output
    from harness.kit.kube import Kube, kubeconfig_files
    from harness.scan.fleetexport import export_fleet

    kubeconfig = Path(args.kubeconfig or os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config")
    kubeconfig_files(kubeconfig)  # `a:b` merged; a FIFO or /dev/zero refused unread
    try:
        get_profile(args.default_profile)
    except FakeDriverError as err:
        raise HarnessError(f"--default-profile: {err}") from None
    out = Path(args.out) if args.out else None
    if out is not None:
        check_output(out, "--out")
    kube = Kube.from_kubeconfig(kubeconfig)
    try:
        exported = export_fleet(
            kube,
            resource=args.extended_resource,
            gpu_drivers=tuple(args.gpu_driver or ["gpu.nvidia.com"]),
            pool_label=args.pool_label,
            default_profile=args.default_profile,
            rename_pools=args.rename_pools,
            redact=tuple(args.redact or ()),
        )
        source = f"a cluster running {kube.git_version()}"
    finally:
        kube.close()
    text = exported.text(source)
    if out is None:
        sys.stdout.write(text)
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)  # checked above: it can be made
    out.write_text(text)
    raw = len(exported.fleet.get("raw_pools", ()))
    pools = len(exported.fleet["pools"]) + raw
    replayed = f" ({raw} replayed from their slices)" if raw else ""
    left = len(exported.notes)
    print(f"fleet: {exported.nodes} node(s) in {pools} pool(s){replayed} written to {out}; left out: {left}")
    for note in exported.notes:
        print(f"  {note}")
    return 0


def add_fleet_parser(sub: Any) -> None:
    fleet = sub.add_parser("fleet", help="GPU fleets of live clusters").add_subparsers(
        dest="action", required=True
    )
    p = fleet.add_parser(
        "export", help="a live cluster's GPU pools as a fleet file (`cluster up --fleet` replays it)"
    )
    p.add_argument("--kubeconfig", type=nonempty, help="default: $KUBECONFIG, then ~/.kube/config")
    p.add_argument("--out", type=nonempty, help="the fleet file (default: standard output)")
    p.add_argument("--extended-resource", type=nonempty, default="nvidia.com/gpu", help="legacy resource")
    p.add_argument(
        "--gpu-driver",
        action="append",
        type=nonempty,
        default=None,
        help="DRA drivers that publish GPUs (repeatable; default gpu.nvidia.com)",
    )
    p.add_argument("--pool-label", type=nonempty, help="the node label naming a pool (default: detected)")
    p.add_argument(
        "--default-profile",
        type=nonempty,
        default="h100-80gb-hbm3",
        help="GPU profile of device-plugin nodes without GPU Feature Discovery's label (gpu.product)",
    )
    p.add_argument(
        "--rename-pools", action="store_true", help="pool-0, pool-1, ... instead of the cluster's names"
    )
    p.add_argument(
        "--redact",
        action="append",
        type=nonempty,
        metavar="NAME",
        help="NAME replaced by redacted-K wherever a value has it (pools, devices, classes); repeatable",
    )
    p.set_defaults(func=cmd_fleet_export)
