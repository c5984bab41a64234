"""Fixtures of the kubelet plugin's tests: the fleet they serve and a short root for sockets."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_driver.fleet import Fleet, parse_fleet

FLEET = """
pools:
  - {name: h100, count: 1, profile: h100-80gb-hbm3, gpus: 2, personality: nvidia-v25.12}
  - name: mig
    count: 1
    profile: h100-80gb-hbm3
    gpus: 1
    personality: nvidia-v25.12
    mig: {mode: static, layout: [3g.40gb, 3g.40gb]}
"""


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return parse_fleet(FLEET)


@pytest.fixture
def root() -> Iterator[Path]:
    # Short path: unix socket paths are limited to 107 bytes.
    d = Path(tempfile.mkdtemp(prefix="kp-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)
