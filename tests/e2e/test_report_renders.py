"""The readiness report renders in a real browser: headless Chromium opens the HTML built from
crafted summaries, logs no console message, and leaves a screenshot in reports/out/artifacts/.

Chromium (Debian package `chromium`, installed by `make chromium`) logs every page console
message to stderr as `...:INFO:CONSOLE:<line>] "<text>", source: <url> (<line>)` when run with
--enable-logging=stderr; the report has no scripts, so any such line is a defect. A control page
with a console.error proves the check sees them.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from harness.core.versions import REPO_ROOT
from harness.readiness import write_report
from tests.support.readiness_data import BENCH, _cells

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO_ROOT / "reports" / "out" / "artifacts"
CONSOLE = re.compile(r":CONSOLE(?::\d+)?\] \"(?P<text>.*)\", source: (?P<source>\S*)")


def _chromium() -> Path:
    found = CHROMIUM if CHROMIUM.exists() else None
    if found is None:
        which = shutil.which("chromium")
        found = Path(which) if which else None
    if found is None:
        pytest.skip(f"{CHROMIUM} is missing (Debian package chromium; `make chromium` installs it)")
    return found


def _screenshot(page: Path, png: Path, profile: Path, window: str = "--window-size=1400,1000") -> list[str]:
    """Open `page`, save a screenshot, return the page's console messages."""
    done = subprocess.run(
        [
            str(_chromium()),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            f"--screenshot={png}",
            window,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [f"{m['text']} ({m['source']})" for m in CONSOLE.finditer(done.stderr)]


def render_to_artifacts(page: Path, name: str, tmp: Path) -> tuple[list[str], Path]:
    """Screenshot `page` in Chromium; keep the page and the PNG as reports/out/artifacts/<name>.*.
    Returns the console messages and the screenshot."""
    png = tmp / f"{name}.png"
    messages = _screenshot(page, png, tmp / "profile")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(png, ARTIFACTS / f"{name}.png")
    shutil.copy(page, ARTIFACTS / f"{name}.html")
    return messages, png


def _png_size(png: Path) -> tuple[int, int]:
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_console_messages_are_seen(tmp_path: Path) -> None:
    page = tmp_path / "control.html"
    page.write_text('<html><body><script>console.error("control-error")</script>x</body></html>')
    messages = _screenshot(page, tmp_path / "control.png", tmp_path / "profile")
    assert messages == [f"control-error ({page.resolve().as_uri()})"]


def test_readiness_html_renders_without_console_errors(tmp_path: Path) -> None:
    bench = tmp_path / "scale.json"
    bench.write_text(json.dumps(BENCH))
    out = tmp_path / "report"
    write_report([_cells(tmp_path)], out, bench=bench)
    messages, png = render_to_artifacts(out / "readiness.html", "readiness", tmp_path)
    assert messages == []
    assert _png_size(png) == (1400, 1000)
    # A blank page compresses to a few KB; the rendered tables and badges do not.
    assert png.stat().st_size > 50_000, f"{png} is {png.stat().st_size} bytes: is the page blank?"
