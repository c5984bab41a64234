"""Reading nights. Tonight: the cells' summary.json files under the directories given, read
strictly (harness.reports.summary.read_summary: a malformed file is one line naming it). A baseline:
whatever an earlier night left — a night.json (`report` writes one), summary.json files, or
only a readiness.json (reports from before night.json) — read leniently: what cannot be read is
a note and is not compared, never an error. Two artifacts claiming one cell are an error on
either side."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.nightly.night import FORMAT, CellNight, Night, NightError, TestRun, from_summary
from harness.reports.summary import OUTCOMES, read_summary

NIGHT_JSON = "night.json"


def _summaries(d: Path) -> list[Path]:
    if d.is_file():
        return [d] if d.name == "summary.json" else []
    if (d / "summary.json").is_file():
        return [d / "summary.json"]
    return sorted(p for p in d.rglob("summary.json") if "allure-results" not in p.parts)


def load_tonight(dirs: Sequence[Path]) -> Night:
    night = Night()
    seen: set[Path] = set()
    for d in dirs:
        if not d.exists():
            raise NightError(f"{d} does not exist")
        paths = _summaries(d)
        if not paths:
            raise NightError(f"no summary.json under {d}: not a cell or matrix run directory")
        for path in paths:
            if path.resolve() not in seen:  # the same file through two arguments is one artifact
                seen.add(path.resolve())
                night.add(from_summary(read_summary(path), str(path)))
    return night


def load_baseline(path: Path) -> Night:
    """A night.json (file, or a directory holding one), else the summary.json files under a
    directory, else its readiness.json (cells known, tests not)."""
    if not path.exists():
        raise NightError(f"baseline {path} does not exist")
    if path.is_dir() and (path / NIGHT_JSON).is_file():
        path = path / NIGHT_JSON
    night = Night()
    if path.is_file():
        _read_file(path, night)
        return night
    paths = _summaries(path) or ([path / "readiness.json"] if (path / "readiness.json").is_file() else [])
    if not paths:
        raise NightError(f"baseline {path} holds no night.json, summary.json or readiness.json")
    for p in paths:
        _read_file(p, night)
    return night


def _read_file(path: Path, night: Night) -> None:
    try:
        data: Any = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as err:
        night.notes.append(f"{path}: not JSON, not compared ({type(err).__name__})")
        return
    if not isinstance(data, dict):
        night.notes.append(f"{path}: not a night.json, summary.json or readiness.json, not compared")
    elif data.get("format") == FORMAT:
        for i, raw in enumerate(_list(data.get("cells"))):
            cid = raw.get("id") if isinstance(raw, dict) else None
            _add(night, raw, f"{path} cells[{i}]", str(path), cid)
    elif "tests" in data:
        cell = data.get("cell")
        cid, provider = (_id_of(cell), cell.get("provider")) if isinstance(cell, dict) else (None, "")
        _add(night, {**data, "provider": provider}, str(path), str(path), cid)
    elif "heatmap" in data:
        _add_readiness(path, data, night)
    else:
        night.notes.append(f"{path}: not a night.json, summary.json or readiness.json, not compared")


def _add(night: Night, raw: object, where: str, source: str, cid: object) -> None:
    """A cell of a night.json or a summary.json, leniently: a note when it names no cell; its
    unreadable test records are left out and counted in a note."""
    if not isinstance(raw, dict) or not isinstance(cid, str) or cid.count("/") != 2:
        night.notes.append(f"{where}: names no cell (<minor>/<personality>/<profile>), not compared")
        return
    tests: dict[str, TestRun] = {}
    bad = 0
    for t in _list(raw.get("tests")):
        run = _test(t)
        if run is None:
            bad += 1
        else:
            tests[t["nodeid"]] = run
    if bad:
        night.notes.append(f"{where}: {bad} test record(s) unreadable, not compared")
    versions = raw.get("versions")
    versions = {str(k): str(v) for k, v in versions.items()} if isinstance(versions, dict) else {}
    night.add(CellNight(cid, source, tests, _str(raw.get("provider")), _str(raw.get("commit")), versions))


def _add_readiness(path: Path, data: dict[str, Any], night: Night) -> None:
    note = "a readiness report of an older format, without per-test results: no test compared"
    night.notes.append(f"{path}: {note}")
    for raw in _list(data.get("cells")):
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            night.add(CellNight(raw["id"], str(path), None, str(raw.get("provider", ""))))


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _id_of(cell: dict[str, Any]) -> str | None:
    parts = [cell.get(k) for k in ("minor", "personality", "profile")]
    if not all(isinstance(p, str) and p and "/" not in p for p in parts):
        return None
    return "/".join(str(p) for p in parts)


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _test(raw: object) -> TestRun | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("nodeid"), str):
        return None
    outcome, duration = raw.get("outcome"), raw.get("duration")
    if outcome not in OUTCOMES:
        return None
    if isinstance(duration, bool) or not isinstance(duration, (int, float)):
        return TestRun(str(outcome), None, _str(raw.get("message")), _str(raw.get("rerun")))
    return TestRun(str(outcome), float(duration), _str(raw.get("message")), _str(raw.get("rerun")))
