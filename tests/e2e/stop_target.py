"""Target of the signal-forwarding tests (run only when named on the command line): a
fixture records its set-up and teardown in $DRA_HARNESS_STOP_PROBE, and the test waits
(bounded) for a file that never comes, so only a stop signal ends it early."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters.base import Cluster
from harness.kit.waits import wait_for

PROBE = Path(os.environ.get("DRA_HARNESS_STOP_PROBE", "/nonexistent"))


@pytest.fixture
def recorded() -> Iterator[None]:
    (PROBE / "setup").write_text(str(os.getpid()))
    yield
    if os.environ.get("DRA_HARNESS_STOP_HOLD"):  # a teardown that lasts until the test says
        (PROBE / "tearing-down").write_text("")
        wait_for(lambda: (PROBE / "release").exists(), timeout=60, describe="the test's release")
    (PROBE / "teardown").write_text(str(os.getpid()))


@pytest.mark.usefixtures("recorded")
def test_waits_for_a_stop() -> None:
    wait_for(lambda: (PROBE / "never").exists(), timeout=300, describe="a stop signal", interval=0.2)


@pytest.fixture
def on_the_cluster(cluster: Cluster) -> None:
    """Records the worker's run directory (where an owner keeps its cluster) once it has one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (PROBE / f"on-cluster-{worker}").write_text(
        json.dumps({"pid": os.getpid(), "provider": cluster.provider})
    )


@pytest.mark.parametrize("i", range(2))
@pytest.mark.usefixtures("on_the_cluster")
def test_waits_on_the_shared_cluster_for_a_stop(i: int) -> None:
    wait_for(lambda: (PROBE / "never").exists(), timeout=300, describe="a stop signal", interval=0.2)
