"""Make the repo root importable: the venv's editable install predates fake_driver/ (its
finder maps only 'harness'); re-running `pip install -e .` makes this a no-op."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("fake_driver") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
