"""helm for the chart's tests: versions.toml [tools.helm] when built. Its cold build (~13 min on
2 busy cores, 545 MB of modules) is not a part of `make test`; `make test-chart` builds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.controlplane.tools import named_tool_path
from harness.core.versions import load_matrix


def built_helm() -> Path:
    path = named_tool_path("helm")
    if not path.exists():
        version = load_matrix().tool("helm").version
        pytest.skip(f"helm {version} is not built here: `make test-chart` builds it and runs these tests")
    return path
