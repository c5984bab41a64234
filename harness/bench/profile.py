"""Where the scheduler's CPU goes: a CPU profile from its /debug/pprof/profile (profiling
is on by default in kube-scheduler) while a batch runs, summarised by `go tool pprof -top`
to the functions with the most samples, by own time (flat) and with callees (cum)."""

from __future__ import annotations

import re
import ssl
import subprocess
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import HarnessError

PROFILE_SECONDS = 20  # the endpoint samples this long, starting when the paused scheduler resumes
TOP = 15
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "min": 60.0, "hrs": 3600.0}
# flat, flat%, sum%, cum, cum%, function; a zero has no unit ("0     0%")
_ROW = re.compile(r"^\s*([\d.]+)(\w*|µs)\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)(\w*|µs)\s+([\d.]+)%\s+(.+?)\s*$")
_TOTAL = re.compile(r"Total samples = ([\d.]+)(\w+|µs)")


def _seconds(value: str, unit: str) -> float:
    if not unit and float(value) == 0:
        return 0.0
    if unit not in _UNITS:
        raise ValueError(f"unknown pprof unit {unit!r}")
    return float(value) * _UNITS[unit]


def parse_pprof_top(text: str) -> dict[str, Any]:
    """`go tool pprof -top` output -> total sampled seconds and rows of function, flat and
    cum seconds and percent."""
    total = _TOTAL.search(text)
    rows = []
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            rows.append(
                {
                    "function": m[8],
                    "flat_s": round(_seconds(m[1], m[2]), 3),
                    "flat_percent": float(m[3]),
                    "cum_s": round(_seconds(m[5], m[6]), 3),
                    "cum_percent": float(m[7]),
                }
            )
    return {"total_samples_s": round(_seconds(total[1], total[2]), 3) if total else None, "rows": rows}


def pprof_top(profile: Path, cum: bool = False, n: int = TOP) -> dict[str, Any]:
    cmd = ["go", "tool", "pprof", "-top", f"-nodecount={n}", *(["-cum"] if cum else []), str(profile)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    if out.returncode != 0:
        raise HarnessError(f"go tool pprof {profile}: {out.stderr.strip()[-300:]}")
    return parse_pprof_top(out.stdout)


@dataclass
class ProfileFetch:
    """Fetches one CPU profile in the background; `join` returns its file (None if it failed)."""

    url: str
    ctx: ssl.SSLContext
    dest: Path
    seconds: int = PROFILE_SECONDS
    error: str = ""
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._fetch, name="cpu-profile", daemon=True)
        self._thread.start()

    def _fetch(self) -> None:
        try:
            url = f"{self.url}?seconds={self.seconds}"
            with urllib.request.urlopen(url, context=self.ctx, timeout=self.seconds + 60) as resp:
                self.dest.parent.mkdir(parents=True, exist_ok=True)
                self.dest.write_bytes(resp.read())
        except OSError as e:  # the figures stand without a profile: say why it is missing
            self.error = f"{type(e).__name__}: {e}"

    def join(self) -> Path | None:
        if self._thread is not None:
            self._thread.join(timeout=self.seconds + 90)
        return self.dest if self.dest.exists() and not self.error else None


def summarize_profile(mode: str, fetch: ProfileFetch) -> dict[str, Any]:
    path = fetch.join()
    if path is None:
        return {"mode": mode, "error": fetch.error or "no profile"}
    return {
        "mode": mode,
        "seconds": fetch.seconds,
        "file": str(path),
        "top_flat": pprof_top(path),
        "top_cum": pprof_top(path, cum=True),
    }
