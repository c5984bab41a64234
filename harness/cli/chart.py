"""`dra-harness chart generate [--check]` and `dra-harness tool path NAME`: the chart's generated
files and deploy/manifests (harness.chart.generate); the pinned Go tools (versions.toml [tools])."""

from __future__ import annotations

import argparse
import sys

from harness.cli.cluster import Subparsers
from harness.core.errors import HarnessError


def cmd_chart_generate(args: argparse.Namespace) -> int:
    from harness.chart import generate

    if args.check:
        stale = generate.stale()
        if stale:
            raise HarnessError(f"out of date (run `dra-harness chart generate`): {', '.join(stale)}")
        print("chart files and deploy/manifests are up to date")
        return 0
    for path in generate.write():
        print(path)
    return 0


def cmd_tool_path(args: argparse.Namespace) -> int:
    """Print the tool's path, building it first if missing (progress on stderr)."""
    from harness.controlplane.tools import ensure_tool

    print(ensure_tool(args.name, lambda line: print(line, file=sys.stderr)))
    return 0


def add_chart_parsers(sub: Subparsers) -> None:
    chart = sub.add_parser("chart", help="the fake GPU fleet's Helm chart").add_subparsers(
        dest="action", required=True
    )
    gen = chart.add_parser("generate", help="write the chart's generated files and deploy/manifests")
    gen.add_argument("--check", action="store_true", help="write nothing; exit 1 naming stale files")
    gen.set_defaults(func=cmd_chart_generate)
    tool = sub.add_parser("tool", help="Go tools versions.toml pins ([tools])").add_subparsers(
        dest="action", required=True
    )
    path = tool.add_parser("path", help="print a tool's path, building it if missing")
    path.add_argument("name", choices=("helm", "actionlint", "krew", "validate-krew-manifest"))
    path.set_defaults(func=cmd_tool_path)
