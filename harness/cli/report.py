"""`dra-harness report`: the readiness report of a matrix run or of merged cells, night.json,
and with --baseline/--history what changed since earlier nights (harness.nightly)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fake_driver.command.cliargs import nonempty, positive_float
from harness.core.errors import HarnessError
from harness.core.outputs import check_output


def cmd_report(args: argparse.Namespace) -> int:
    """The readiness report and night.json (tonight's merged result, the next baseline); with
    --baseline, the report opens on the diff and the exit code is 3 on a new failure."""
    from harness import nightly
    from harness.core.layout import REPORTS, latest_matrix_run, new_run_id
    from harness.readiness import Lead, write_report
    from harness.reports.summary import ReportFile, write_report_files

    if args.merge:
        dirs = [Path(d) for d in args.merge]
        out = Path(args.out) if args.out else REPORTS / f"merged-{new_run_id()}"
    else:
        dirs = [Path(args.dir) if args.dir else latest_matrix_run(REPORTS)]
        out = Path(args.out) if args.out else dirs[0]
    check_output(out, "--out", directory=True)
    if args.slower_by is not None and not args.baseline:
        raise HarnessError("--slower-by compares durations with a --baseline; give one")
    tonight = nightly.load_tonight(dirs)  # two artifacts claiming one cell: one line, exit 1
    diff, lead = None, None
    if args.baseline:
        baseline = nightly.load_baseline(Path(args.baseline))
        diff = nightly.compare(tonight, baseline, args.slower_by or nightly.DEFAULT_SLOWER_BY)
        shown = nightly.render_diff(diff, " ".join(str(d) for d in dirs), args.baseline)
        lead = Lead("baseline", shown.html, shown.md, shown.json)
    if args.history:
        earlier = [(h, nightly.load_baseline(Path(h))) for h in args.history]
        grid = nightly.render_history(nightly.history([*earlier, ("tonight", tonight)]))
        lead = (
            Lead("history", grid.html, grid.md, grid.json)
            if lead is None
            else Lead(
                lead.key, lead.html + grid.html, lead.md + "\n" + grid.md, {**lead.json, "history": grid.json}
            )
        )
    bench = Path(args.bench) if args.bench else None
    written = write_report(dirs, out, bench=bench, rehearsals=[Path(u) for u in args.upgrade], lead=lead)
    extra: dict[str, ReportFile] = {nightly.NIGHT_JSON: tonight.to_json()}
    if lead is not None:
        extra["baseline.md"] = lead.md  # for a CI job summary
    for path in [*written, *write_report_files(out, extra)]:
        print(f"report: {path}")
    if diff is None:
        return 0
    print(diff.headline())
    for e in diff.of("new failure"):
        print(f"new failure: {e.cell} {e.test}")
    return diff.exit_code


def add_report_parser(sub: Any) -> None:
    rp = sub.add_parser("report", help="the readiness report of a matrix run, or merged from several")
    rp.add_argument("dir", nargs="?", type=nonempty, help="a matrix run (default: the latest in reports/out)")
    rp.add_argument("--merge", nargs="+", type=nonempty, metavar="DIR", help="cell or run directories")
    rp.add_argument("--upgrade", action="append", type=nonempty, default=[], help="`upgrade` report dirs")
    rp.add_argument(
        "--out", type=nonempty, help="report directory (default: DIR, or reports/out/merged-<id>)"
    )
    rp.add_argument("--bench", type=nonempty, help="scale benchmark JSON (default: reports/out/bench/scale*)")
    rp.add_argument(
        "--baseline",
        type=nonempty,
        metavar="PREVIOUS",
        help="a previous report's directory or night.json (or its cells' directories): the report "
        "opens on what changed since; exit 3 on a new failure",
    )
    rp.add_argument(
        "--history",
        action="append",
        type=nonempty,
        default=[],
        metavar="NIGHT",
        help="an earlier night (report directory or night.json), oldest first, repeatable: a grid of "
        "test x night with tonight last",
    )
    rp.add_argument(
        "--slower-by",
        type=positive_float,
        metavar="PERCENT",
        help="a test that passed on both nights is slower when it took this much longer and at least "
        "2 s more (default: 50)",
    )
    rp.set_defaults(func=cmd_report)
