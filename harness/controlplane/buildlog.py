"""The cache the parts are built into; how long each part took to build on this machine
(builds.jsonl in the cache), and what to expect of a part not built yet: measured here, else
its budget in versions.toml. The parts runner writes it; a build's progress line, `versions`
and `cluster up` read it, so an ETA comes from a measurement, never from a count of packages."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness.core.versions import Matrix, load_matrix

BUILDS_LOG = "builds.jsonl"


def cache_root() -> Path:
    """Where every built part lives, outside the repository (XDG_CACHE_HOME)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dra-harness"


def _log_path() -> Path:
    return cache_root() / BUILDS_LOG


def log_build(part: str, seconds: float) -> None:
    path = _log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as log:  # one short line per write: lines of two builders never mix
        log.write(json.dumps({"part": part, "seconds": round(seconds, 1), "at": int(time.time())}) + "\n")


def measured_builds() -> dict[str, float]:
    """The last real build time of each part on this machine."""
    times: dict[str, float] = {}
    try:
        lines = _log_path().read_text().splitlines()
    except OSError:
        return times
    for line in lines:
        try:
            entry = json.loads(line)
            times[str(entry["part"])] = float(entry["seconds"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by a killed build
    return times


def expected_seconds(part: str, matrix: Matrix | None = None) -> float | None:
    """How long building `part` takes here: measured on this machine, else its budget."""
    measured = measured_builds().get(part)
    if measured is not None:
        return measured
    budget = (matrix or load_matrix()).budget.get(part)
    return float(budget) if budget is not None else None


def expectation(part: str) -> str:
    """ "about 6 min (measured here)", "about 10 min (a cold build on 2 cores)", or "minutes"."""
    measured = measured_builds().get(part)
    if measured is not None:
        return f"about {max(1, round(measured / 60))} min, measured here"
    seconds = expected_seconds(part)
    if seconds is None:
        return "several minutes"
    return f"about {max(1, round(seconds / 60))} min cold on 2 cores (versions.toml [budget])"
