"""`dra-harness qualify`: its options and the command (the work is in harness.qualify)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from fake_driver.cliargs import nonempty


def cmd_qualify(args: argparse.Namespace) -> int:
    from harness.qualify.run import DEFAULT_SUITES, QualifyRequest, qualify

    kubeconfig = Path(args.kubeconfig or os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config")
    req = QualifyRequest(
        kubeconfig,
        args.driver_name,
        args.device_class,
        args.extended_resource,
        args.node_selector,
        tuple(args.suite) if args.suite else DEFAULT_SUITES,
        Path(args.out) if args.out else None,
    )
    return qualify(req)


def add_qualify_parser(sub: Any) -> None:
    q = sub.add_parser(
        "qualify",
        help="qualify an installed DRA driver (exit 0 pass, 3 failure, 1 could not start)",
    )
    q.add_argument("--kubeconfig", type=nonempty, help="default: $KUBECONFIG, then ~/.kube/config")
    q.add_argument(
        "--driver-name", type=nonempty, required=True, help="the driver's name, e.g. gpu.nvidia.com"
    )
    q.add_argument("--device-class", type=nonempty, required=True, help="the DeviceClass of its GPUs")
    q.add_argument(
        "--extended-resource", type=nonempty, default="nvidia.com/gpu", help="legacy resource name"
    )
    q.add_argument("--node-selector", default="", help="key=value[,key=value]: the nodes tests may use")
    q.add_argument(
        "--suite", action="append", type=nonempty, help="test paths (default: the driver's suites)"
    )
    q.add_argument("--out", type=nonempty, help="results directory (default: reports/out/qualify-<time>)")
    q.set_defaults(func=cmd_qualify)
