"""`dra-harness bench`: its options and the command (the work is in harness.bench)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from fake_driver.command.cliargs import nonempty, nonempty_csv, positive_float, positive_int
from fake_driver.fleetspec.fleet import MAX_GPUS_PER_NODE
from harness.bench.present import format_summary
from harness.core.errors import HarnessError
from harness.core.outputs import check_output
from harness.reports.costs import DEFAULT_BENCH_DIR


def cmd_bench(args: argparse.Namespace) -> int:
    from harness.bench.scale import prepare, run

    load_before = os.getloadavg()[0]  # the builds in prepare() would count in it
    modes = tuple(args.modes) if args.modes else None
    if args.gpus > MAX_GPUS_PER_NODE:  # the fleet would refuse it, after the cluster started
        raise HarnessError(f"--gpus must be at most {MAX_GPUS_PER_NODE}, got {args.gpus}")
    if args.profile and modes and args.profile not in modes:
        raise HarnessError(f"--profile {args.profile}: that mode is not among --modes {','.join(modes)}")
    plan = prepare(
        args.k8s_version,
        args.nodes,
        args.pods,
        args.reps,
        modes,
        args.out,
        args.max_batches,
        args.reference,
        args.min_window,
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
            min_window=plan.min_window,
            load_before=load_before,
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
        help="batches of --pods a repetition may run to last --min-window (default 1; 2: ~+80 s)",
    )
    bn.add_argument(
        "--min-window",
        type=positive_float,
        help="seconds a repetition's batches should last, with --max-batches (default 10)",
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


def cmd_bench_curve(args: argparse.Namespace) -> int:
    from harness.bench.curve import run_curve, write_curve
    from harness.bench.scale import prepare, run

    if len([m for k in args.k8s_version or [] for m in k]) > 1:
        raise HarnessError("bench-curve runs one minor; give one -k")
    load_before = os.getloadavg()[0]  # each point's cluster would count in the next one's
    modes = tuple(args.modes) if args.modes else None
    plan = prepare(
        args.k8s_version,
        max(args.nodes),
        args.pods,
        args.reps,
        modes,
        None,
        args.max_batches,
        min_window=args.min_window,
    )
    minor = next(iter(plan.outs))
    out = Path(args.out) if args.out else DEFAULT_BENCH_DIR / f"curve-{minor}.json"
    check_output(out, "--out")

    def bench(nodes: int, gpus: int) -> Any:
        summary = run(
            minor,
            nodes,
            args.pods,
            args.reps,
            plan.modes,
            None,
            max_batches=plan.max_batches,
            min_window=plan.min_window,
            load_before=load_before,
            gpus=gpus,
        )
        print(format_summary(summary))
        return summary

    def save(points: list[dict[str, Any]], seconds: float) -> None:
        write_curve(out, minor, points, seconds)

    earlier = _earlier_points(out, minor)
    if earlier:
        print(f"{out}: keeping its {len(earlier)} points of other fleet sizes and GPU counts")
    run_curve(args.nodes, args.gpus, bench, save, earlier=earlier)
    print(f"written to {out} and {out.with_suffix('.svg')}")
    return 0


def add_bench_curve_parser(sub: Any) -> None:
    bc = sub.add_parser(
        "bench-curve",
        help="cost curves: the scale benchmark over fleet sizes and GPUs per node, one cluster a point",
    )
    bc.add_argument("-k", "--k8s-version", action="append", type=nonempty_csv, help="one minor")
    bc.add_argument(
        "--nodes",
        type=positive_int_csv,
        default=[100, 500, 1000, 2000],
        help="fleet sizes (100,500,1000,2000)",
    )
    bc.add_argument("--gpus", type=positive_int_csv, default=[4, 8], help="GPUs per node (4,8)")
    bc.add_argument("--pods", type=positive_int, default=1000, help="pods per mode and repetition (1000)")
    bc.add_argument("--reps", type=positive_int, default=1, help="rounds of all modes per point (default 1)")
    bc.add_argument("--max-batches", type=positive_int, help="as for bench (default 1)")
    bc.add_argument("--min-window", type=positive_float, help="as for bench (default 10)")
    bc.add_argument("--modes", type=nonempty_csv, help="some of plain,legacy,bridged,claims (default: all)")
    bc.add_argument("--out", type=nonempty, help="JSON file (default: reports/out/bench/curve-<minor>.json)")
    bc.set_defaults(func=cmd_bench_curve)


def positive_int_csv(text: str) -> list[int]:
    return [positive_int(part) for part in nonempty_csv(text)]


def _earlier_points(out: Path, minor: str) -> list[dict[str, Any]]:
    """The points an earlier curve of the same minor left in `out`: a long curve runs in parts."""
    if not out.is_file():
        return []
    try:
        doc = json.loads(out.read_text())
    except (OSError, ValueError) as e:
        raise HarnessError(f"{out} is not a curve JSON ({e}); give another --out or remove it") from None
    if not isinstance(doc, dict) or doc.get("kubernetes") != minor:
        return []
    return list(doc.get("points") or [])
