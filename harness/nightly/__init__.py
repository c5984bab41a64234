"""The nightly's memory: one night's merged result (night.json), read back as the next night's
baseline, and what changed between the two per cell and test (new failures, fixes, flakes,
newly skipped tests, slower tests). night.py is the model, load.py reads nights, diff.py
compares two, history.py lays several side by side, render.py writes the sections a report
opens on. Unaware of the readiness report: the command line puts the two together."""

from __future__ import annotations

from harness.nightly.diff import DEFAULT_SLOWER_BY, MIN_SLOWER_SECONDS, NEW_FAILURE_EXIT, Diff, Entry, compare
from harness.nightly.history import History, history
from harness.nightly.load import NIGHT_JSON, load_baseline, load_tonight
from harness.nightly.night import Night, NightError
from harness.nightly.render import Rendered, render_diff, render_history

__all__ = [
    "DEFAULT_SLOWER_BY",
    "MIN_SLOWER_SECONDS",
    "NEW_FAILURE_EXIT",
    "NIGHT_JSON",
    "Diff",
    "Entry",
    "History",
    "Night",
    "NightError",
    "Rendered",
    "compare",
    "history",
    "load_baseline",
    "load_tonight",
    "render_diff",
    "render_history",
]
