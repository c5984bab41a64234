"""Leftovers of killed runs: the harness's own engines (host slots) given back at once, and its
kind clusters on the machine's Docker deleted by the age of their control plane::

    dra-harness kind cleanup --older-than 6h [--dry-run]
    python -m harness.clusters.kind.leftovers cleanup [--older-than 6h] [--dry-run]
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness.clusters.host import state as hoststate
from harness.clusters.kind.config import CLUSTER_PREFIX
from harness.clusters.kind.provider import (
    Runner,
    docker_problem,
    find_binary,
    kind_hint,
    last_line,
    run_command,
)
from harness.core.errors import HarnessError
from harness.core.versions import load_matrix


def parse_age(text: str) -> timedelta:
    m = re.fullmatch(r"(\d+)([smhd])", text.strip())
    if m is None:
        raise HarnessError(f"age {text!r} is not like 30m, 6h or 2d")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
    try:
        return timedelta(**{unit: int(m.group(1))})
    except OverflowError:  # past timedelta's 999,999,999 days
        raise HarnessError(f"age {text!r} is too large: at most {timedelta.max.days}d") from None


def _docker_time(text: str) -> datetime:
    """Docker's RFC 3339 with nanoseconds ('2026-01-02T03:04:05.123456789Z') -> aware datetime."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", text.strip())
    if m is None:
        raise HarnessError(f"unexpected docker time {text!r}")
    frac = (m.group(2) or ".0")[:7]
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(f"{m.group(1)}{frac}{tz}")


def leftover_clusters(
    older_than: timedelta, *, kind: Path, now: datetime, runner: Runner = run_command
) -> list[tuple[str, datetime]]:
    """The harness's kind clusters (name prefix) whose control plane is older than the age."""
    out = runner([str(kind), "get", "clusters"])
    if out.returncode != 0:
        raise HarnessError(f"kind get clusters failed: {last_line(out.stderr)}")
    old: list[tuple[str, datetime]] = []
    for name in out.stdout.split():
        if not name.startswith(CLUSTER_PREFIX):
            continue
        inspect = runner(["docker", "inspect", "--format", "{{.Created}}", f"{name}-control-plane"])
        if inspect.returncode != 0:
            continue  # no control-plane container: not a cluster kind created completely
        created = _docker_time(inspect.stdout)
        if now - created > older_than:
            old.append((name, created))
    return old


def cleanup(
    older_than: timedelta,
    *,
    kind: Path,
    now: datetime | None = None,
    dry_run: bool = False,
    runner: Runner = run_command,
) -> list[str]:
    """Delete leftover clusters; returns their names."""
    old = leftover_clusters(older_than, kind=kind, now=now or datetime.now(UTC), runner=runner)
    for name, _ in old:
        if not dry_run:
            out = runner([str(kind), "delete", "cluster", "--name", name])
            if out.returncode != 0:
                raise HarnessError(f"kind delete cluster --name {name} failed: {last_line(out.stderr)}")
    return [name for name, _ in old]


def cleanup_leftovers(older_than: str, kind_bin: str | None = None, dry_run: bool = False) -> list[str]:
    """What `kind cleanup` did, a line each: engines (host slots) of killed runs given back, then
    the harness's clusters older than the age on the machine's Docker."""
    age = parse_age(older_than)
    lines = []
    if not dry_run:
        reaped = hoststate.reap_stale()
        lines += [f"gave back host slot {s.tag} of a killed run (engine or real nodes)" for s in reaped]
    problem = docker_problem()
    if problem is not None:
        return [*lines, f"no kind clusters to delete: {problem}"]
    kind = find_binary("kind", kind_bin, "DRA_HARNESS_KIND", kind_hint(load_matrix()))
    names = cleanup(age, kind=kind, dry_run=dry_run)
    verb = "would delete" if dry_run else "deleted"
    lines += [f"{verb} {name}" for name in names]
    return lines or [f"no {CLUSTER_PREFIX}* kind cluster is older than {older_than}"]


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m harness.clusters.kind.leftovers")
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("cleanup", help="give back engines of killed runs; delete old dra-harness-* clusters")
    p.add_argument("--older-than", default="6h", help="e.g. 30m, 6h, 2d (default 6h)")
    p.add_argument("--kind-bin", help="kind binary (default: $DRA_HARNESS_KIND or PATH)")
    p.add_argument("--dry-run", action="store_true", help="only list them")
    args = parser.parse_args(argv)
    try:
        for line in cleanup_leftovers(args.older_than, args.kind_bin, args.dry_run):
            print(line)
    except HarnessError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
