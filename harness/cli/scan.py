"""`dra-harness scan`: its options, and what it writes (text, JSON, JUnit, Markdown, the krew
package); the scan itself is harness.scan."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from fake_driver.command.cliargs import nonempty
from harness.cli.cluster import Subparsers
from harness.core.outputs import check_output
from harness.core.versions import load_matrix
from harness.scan.exits import EXIT_USAGE


def cmd_scan(args: argparse.Namespace) -> int:
    from harness.kit.kube import kubeconfig_files
    from harness.scan.checks import render_junit
    from harness.scan.cluster import exit_code as scan_exit_code
    from harness.scan.cluster import render_json, render_text, scan
    from harness.scan.render import render_markdown

    if args.print_clusterrole:
        from harness.scan.read import clusterrole_yaml

        print(clusterrole_yaml(), end="")
        return 0
    if args.krew_package:
        return _write_krew_package(Path(args.krew_package))
    kubeconfig = Path(args.kubeconfig or os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config")
    kubeconfig_files(kubeconfig)  # `a:b` merged; a FIFO or /dev/zero refused unread
    given = (("--json", args.json), ("--junit", args.junit), ("--markdown", args.markdown))
    outputs = {flag: Path(value) for flag, value in given if value}
    for flag, out in outputs.items():
        check_output(out, flag)
    if args.target:
        load_matrix().minor(args.target)  # an unknown minor: one line before connecting
    result = scan(
        kubeconfig,
        args.extended_resource,
        args.pool_label,
        args.gpu_driver,
        args.target,
        args.context,
        args.include_resource,
    )
    print(render_text(result))
    written = {
        "--json": lambda: render_json(result),
        "--junit": lambda: render_junit(result.checks, result.state.git_version),
        "--markdown": lambda: render_markdown(result),
    }
    for flag, out in outputs.items():
        out.parent.mkdir(parents=True, exist_ok=True)  # checked above: it can be made
        out.write_text(written[flag]())
    return scan_exit_code(result.findings)


def _write_krew_package(out: Path) -> int:
    """`scan --krew-package DIR`: the kubectl plugin's krew archive (the release asset) and its
    manifest naming the archive's sha256, DIR laid out as a krew index (docs/scan.md)."""
    from harness.scan.krew import ARCHIVE, MANIFEST, krew_package

    check_output(out, "--krew-package", directory=True)
    for name in (ARCHIVE, MANIFEST):  # e.g. DIR/plugins a file
        check_output(out / name, "--krew-package")
    package = krew_package()
    (out / MANIFEST).parent.mkdir(parents=True, exist_ok=True)  # checked above: it can be made
    (out / ARCHIVE).write_bytes(package.archive)
    (out / MANIFEST).write_text(package.manifest)
    print(f"{out / ARCHIVE}\n{out / MANIFEST}")
    return 0


def add_scan_parser(sub: Subparsers) -> None:
    scan = sub.add_parser(
        "scan",
        help="read-only readiness scan of a live cluster (exit 0/2/3, 1 on error, 64 on a usage error)",
    )
    # 2 and 3 are the scan's verdicts (warnings, blocking): its usage errors exit 64 (EX_USAGE).
    scan.usage_exit = EXIT_USAGE
    scan.set_defaults(usage_exit=EXIT_USAGE)
    scan.add_argument("--kubeconfig", type=nonempty, help="default: $KUBECONFIG, then ~/.kube/config")
    scan.add_argument(
        "--context", type=nonempty, help="the kubeconfig context to scan (default: its current one)"
    )
    scan.add_argument(
        "--include-resource",
        action="append",
        type=nonempty,
        default=[],
        metavar="NAME",
        help="check this extended resource name as an accelerator's too (repeatable; by default the "
        "known GPU and accelerator vendors' names and the names DeviceClasses map)",
    )
    scan.add_argument("--extended-resource", type=nonempty, default="nvidia.com/gpu", help="legacy resource")
    scan.add_argument(
        "--pool-label",
        type=nonempty,
        help="the node label naming a pool (default: detected per node from GKE, EKS, AKS, Karpenter "
        "and dra-harness.io/pool labels)",
    )
    scan.add_argument(
        "--gpu-driver",
        action="append",
        type=nonempty,
        default=["gpu.nvidia.com"],
        help="DRA drivers that publish GPUs (repeatable)",
    )
    scan.add_argument("--json", type=nonempty, help="also write the checks and findings as JSON here")
    scan.add_argument("--junit", type=nonempty, help="also write JUnit XML here: one test case per check")
    scan.add_argument("--markdown", type=nonempty, help="also write Markdown here (a PR comment's body)")
    scan.add_argument(
        "--print-clusterrole",
        action="store_true",
        help="print the read-only ClusterRole the scan needs (deploy/scan/clusterrole.yaml) and exit",
    )
    scan.add_argument(
        "--target", type=nonempty, help="also the pre-upgrade findings for this minor, e.g. 1.37"
    )
    scan.add_argument(
        "--krew-package",
        type=nonempty,
        metavar="DIR",
        help="write the kubectl plugin's krew archive and manifest (plugins/dra-scan.yaml) into DIR and exit",
    )
    scan.set_defaults(func=cmd_scan)
