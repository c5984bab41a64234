"""Two nights of a 3-cell matrix, written as `dra-harness matrix` writes them (summary.json
through harness.reports.summary, junit_<cell>.xml with the cell's properties, matrix.json), with
planted changes between them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.core.cells import Cell
from harness.core.layout import junit_name
from harness.reports.summary import CellSummary, TestRecord, area_of, write_summary
from tests.support.readiness_data import DYN, EXT, GANG, LIFE, NO_MAP, SMOKE

NEW = "1.37/nvidia-v25.12/dra-all"  # GANG breaks here tonight
OLD = "1.37/nvidia-v0.4/dra-all"  # LIFE is skipped here tonight; DYN fails on both nights
PREV = "1.36/nvidia-v25.12/dra-all"  # EXT is fixed here tonight; SMOKE got slow
CELLS = (NEW, OLD, PREV)
TIMEOUT = "WaitTimeout: pods of gang g1 not bound: timed out after 60s"


def record(nodeid: str, outcome: str = "passed", message: str = "", duration: float = 1.0) -> TestRecord:
    reasons = [NO_MAP] if message == NO_MAP.message() else []
    return TestRecord(nodeid, area_of(nodeid), outcome, duration, message, reasons)


def night_one() -> dict[str, list[TestRecord]]:
    return {
        NEW: [record(SMOKE), record(EXT), record(LIFE), record(GANG, duration=12.0)],
        OLD: [record(SMOKE), record(LIFE), record(DYN, "failed", "assert 6 == 7")],
        PREV: [record(SMOKE, duration=10.0), record(EXT, "failed", "expected 1 claim for pod"), record(GANG)],
    }


def night_two() -> dict[str, list[TestRecord]]:
    """One regression (GANG in NEW), one fix (EXT in PREV), one newly skipped test (LIFE in
    OLD), one slower test (SMOKE in PREV, 10 s -> 40 s), one still failing (DYN in OLD)."""
    return {
        NEW: [record(SMOKE), record(EXT), record(LIFE), record(GANG, "failed", TIMEOUT, duration=61.0)],
        OLD: [
            record(SMOKE),
            record(LIFE, "skipped", NO_MAP.message()),
            record(DYN, "failed", "assert 5 == 7"),
        ],
        PREV: [record(SMOKE, duration=40.0), record(EXT), record(GANG)],
    }


def junit(path: Path, cell: Cell, summary: CellSummary) -> None:
    """The shape pytest's junitxml writes, with the properties fixtures/artifacts/reporting adds."""
    suite = ET.Element("testsuite", name="pytest", tests=str(len(summary.tests)))
    for t in summary.tests:
        file, _, name = t.nodeid.partition("::")
        case = ET.SubElement(
            suite, "testcase", classname=file.removesuffix(".py").replace("/", "."), name=name
        )
        case.set("time", f"{t.duration:.3f}")
        props = ET.SubElement(case, "properties")
        for key in ("minor", "personality", "driver", "profile", "provider"):
            ET.SubElement(props, "property", name=key, value=summary.cell[key])
        ET.SubElement(props, "property", name="cell", value=cell.id)
        if t.outcome in ("failed", "errors"):
            ET.SubElement(case, "failure" if t.outcome == "failed" else "error", message=t.message)
        elif t.outcome == "skipped":
            ET.SubElement(case, "skipped", type="pytest.skip", message=t.message)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def write_night(run: Path, tests: dict[str, list[TestRecord]], commit: str = "a" * 40) -> Path:
    """A matrix run directory: cells/<slug>/{summary.json, junit_<slug>.xml}, matrix.json."""
    for cid, records in tests.items():
        cell = Cell.parse(cid)
        info = {"provider": "local", "minor": cell.minor, "profile": cell.profile}
        info |= {"driver": "gpu.nvidia.com", "personality": cell.personality}
        summary = CellSummary(info, records, 60.0, commit, {"kubernetes": "v" + cell.minor + ".2"}, 0.5)
        d = run / "cells" / cell.slug
        write_summary(d / "summary.json", summary)
        junit(d / junit_name(cell), cell, summary)
    cells = [{"id": cid, "exit_code": 1, "state": "failed"} for cid in tests]
    (run / "matrix.json").write_text(json.dumps({"run_id": run.name, "wall_seconds": 100.0, "cells": cells}))
    return run
