"""`dra-harness bench`: its options and the command (the work is in harness.bench)."""

from __future__ import annotations

import argparse
from typing import Any

from fake_driver.cliargs import nonempty, nonempty_csv, positive_int
from harness.errors import HarnessError


def cmd_bench(args: argparse.Namespace) -> int:
    from harness.bench.present import format_summary
    from harness.bench.scale import prepare, run

    modes = tuple(args.modes) if args.modes else None
    if args.profile and modes and args.profile not in modes:
        raise HarnessError(f"--profile {args.profile}: that mode is not among --modes {','.join(modes)}")
    plan = prepare(
        args.k8s_version, args.nodes, args.pods, args.reps, modes, args.out, args.max_batches, args.reference
    )
    for minor, out in plan.outs.items():
        summary = run(
            minor,
            args.nodes,
            args.pods,
            args.reps,
            plan.modes,
            out,
            max_batches=plan.max_batches,
            reference=args.reference,
            concurrent=args.concurrent,
            profile=args.profile,
            gpus=args.gpus,
        )
        print(format_summary(summary))
        print(f"written to {out}")
    return 0


def add_bench_parser(sub: Any) -> None:
    bn = sub.add_parser("bench", help="scale benchmark: what DRA costs the scheduler and the API server")
    bn.add_argument(
        "-k", "--k8s-version", action="append", type=nonempty_csv, help="minor(s), a,b or repeated"
    )
    bn.add_argument("--nodes", type=positive_int, default=500, help="simulated nodes (500)")
    bn.add_argument("--gpus", type=positive_int, default=8, help="GPUs per node (8)")
    bn.add_argument("--pods", type=positive_int, default=2000, help="pods per mode and repetition (2000)")
    bn.add_argument("--reps", type=positive_int, default=3, help="rounds of all modes (default 3)")
    bn.add_argument(
        "--max-batches",
        type=positive_int,
        help="batches of --pods a repetition may run to last 10 s (default 1; 2: ~+80 s at 500 nodes)",
    )
    bn.add_argument("--modes", type=nonempty_csv, help="some of plain,legacy,bridged,claims (default: all)")
    bn.add_argument("--out", type=nonempty, help="JSON file (default: reports/out/bench/scale-<minor>.json)")
    bn.add_argument(
        "--reference",
        action="store_true",
        help="also run upstream's scheduler_perf on the same workload after each mode, and compare ratios",
    )
    bn.add_argument(
        "--concurrent",
        action="store_true",
        help="create the pods while the scheduler runs, as scheduler_perf does (default: scheduler paused)",
    )
    bn.add_argument(
        "--profile",
        choices=("plain", "legacy", "bridged", "claims"),
        help="the scheduler's CPU profile during MODE's first repetition, summarised to its top functions",
    )
    bn.set_defaults(func=cmd_bench)
