"""The docs' pictures, from the real renderers in a real browser: the readiness report, the qualify
report, a nightly diff and the cost curve, each rendered from crafted results and screenshot by
headless Chromium. Each run checks the pictures render (not blank, under the size a repository
carries); `make docs-images` (DRA_HARNESS_WRITE_IMAGES=1) also writes them to docs/images/ with
the hashes of the templates they came from, which tests/test_docs_images.py compares."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.bench.curve import curve_doc, points_of
from harness.cli.main import main as harness_main
from harness.core.requirements import Kind, Reason
from harness.qualify.capabilities import CAPABILITIES, Capability, CapabilityResult, decide
from harness.qualify.preflight import ClusterFacts
from harness.qualify.report import Qualification
from harness.qualify.report import write_report as write_qualify
from harness.readiness import write_report as write_readiness
from harness.reports.costplot import curve_svg
from harness.reports.summary import TestRecord
from tests.e2e.test_report_renders import _png_size, _screenshot
from tests.harness.bench.test_bench_curve import _summary
from tests.support.docs_images import IMAGES, MAX_BYTES, inputs_hash
from tests.support.nightly_data import night_one, night_two, write_night
from tests.support.readiness_data import BENCH, _cells

WINDOWS = {"cost-curve": (700, 500)}  # the others: 1200 x 860


def _readiness(tmp: Path) -> Path:
    bench = tmp / "scale.json"
    bench.write_text(json.dumps(BENCH))
    write_readiness([_cells(tmp)], tmp / "readiness", bench=bench)
    return tmp / "readiness" / "readiness.html"


def _qualify(tmp: Path) -> Path:
    """A driver's qualification: four capabilities pass, one passes with a skip, one the fleet lacks."""
    mig = Reason(Kind.FLEET, device_class="gpu.acme.example", need="MIG devices", text="8 plain GPUs")

    def run(cap: Capability, *outcomes: str) -> CapabilityResult:
        pattern = cap.tests[0]
        tests = [
            TestRecord(
                pattern.replace("*", f"test_{i}"),
                cap.id,
                outcome,
                2.0,
                "",
                [mig] if outcome == "skipped" else [],
            )
            for i, outcome in enumerate(outcomes)
        ]
        return decide(cap, tests)

    caps = CAPABILITIES[:6]
    results = [run(cap, "passed", "passed") for cap in caps[:4]]
    results += [run(caps[4], "passed", "skipped"), run(caps[5], "skipped")]
    q = Qualification(
        "gpu.acme.example",
        "gpu.acme.example",
        "nvidia.com/gpu",
        "dra-harness qualify",
        ClusterFacts(git_version="v1.37.2", minor="1.37", slices=16, nodes_with_slices=2),
    )
    q.capabilities, q.totals = results, {"passed": 9, "failed": 0, "skipped": 2, "errors": 0}
    (tmp / "qualify").mkdir()
    write_qualify(q, tmp / "qualify")
    return tmp / "qualify" / "qualify.html"


def _nightly(tmp: Path) -> Path:
    """Tonight against last night, named as a nightly names its runs (relative to the work dir)."""
    write_night(tmp / "nights" / "2026-12-06", night_one())
    write_night(tmp / "nights" / "2026-12-07", night_two())
    here = Path.cwd()
    os.chdir(tmp)
    try:
        code = harness_main(
            ["report", "nights/2026-12-07", "--baseline", "nights/2026-12-06", "--out", "nightly"]
        )
    finally:
        os.chdir(here)
    assert code in (0, 3)  # 3: a new failure since the baseline, as planted
    return tmp / "nightly" / "readiness.html"


def _curve(tmp: Path) -> Path:
    points = [
        p for g in (4, 8) for n in (100, 500, 1000, 2000) for p in points_of(_summary(n, g, 0.01 * n), 1.0)
    ]
    page = tmp / "curve.html"
    svg = curve_svg(curve_doc("1.37", points, 10.0))
    page.write_text(f"<html><body style='margin:0;background:#fff'>{svg}</body></html>")
    return page


PAGES: dict[str, Callable[[Path], Path]] = {
    "readiness": _readiness,
    "qualify": _qualify,
    "nightly-diff": _nightly,
    "cost-curve": _curve,
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_docs_picture_renders_from_the_real_report(name: str, tmp_path: Path) -> None:
    page = PAGES[name](tmp_path)
    png = tmp_path / f"{name}.png"
    size_of = WINDOWS.get(name, (1200, 860))
    window = f"--window-size={size_of[0]},{size_of[1]}"

    messages = _screenshot(page, png, tmp_path / "profile", window)

    assert messages == []
    assert _png_size(png) == size_of
    size = png.stat().st_size
    assert 20_000 < size <= MAX_BYTES, f"{name}.png is {size} bytes (blank below 20 KB, over {MAX_BYTES})"
    if os.environ.get("DRA_HARNESS_WRITE_IMAGES") == "1":
        IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(png, IMAGES / f"{name}.png")
        record = IMAGES / "inputs.json"
        inputs = json.loads(record.read_text()) if record.exists() else {}
        inputs[name] = inputs_hash(name)
        record.write_text(json.dumps(inputs, indent=2, sort_keys=True) + "\n")
