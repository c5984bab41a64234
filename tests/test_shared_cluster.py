"""fixtures/shared.py's scheduling, from real pytest-xdist runs (pytester, two workers): tests
that need the whole cluster run after every other test, alone, on the worker that owns the
cluster; the run's lock directory is gone afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.controlplane.build import cache_root

CACHE = cache_root().parent  # read at import, before pytester moves HOME

CONFTEST = """
import json, os, time
from pathlib import Path

import pytest


@pytest.fixture
def rec(request):
    start = time.monotonic()
    yield
    line = {"test": request.node.name, "module": request.module.__name__,
            "worker": os.environ["PYTEST_XDIST_WORKER"], "start": start, "end": time.monotonic()}
    with Path(os.environ["SHARED_LOG"]).open("a") as f:
        f.write(json.dumps(line) + "\\n")


@pytest.fixture
def local_cluster():  # stands in for the plugin's: the name alone puts a test in the group
    return None
"""

TESTS = """
import os
from pathlib import Path

import pytest

from fixtures.shared import shared_run
from harness.core.cells import Cell
from harness.clusters.attached import AttachedCluster


@pytest.mark.parametrize("i", range(8))
def test_ordinary(rec, request, i):
    shared = shared_run(request.config)
    with shared.locked():
        if shared.attached() is None:  # the first test "starts the cluster": its worker owns it
            shared.publish(AttachedCluster("local", Path("/nowhere"), Cell("1.37")))
            Path(os.environ["SHARED_LOG"] + ".owner").write_text(shared.worker)


@pytest.mark.serial
@pytest.mark.parametrize("i", range(3))
def test_serial(rec, i):
    pass


def test_restarts_a_component(rec, local_cluster):
    pass
"""

# Real-node modules (their clusters are their own) on two lanes beside the others: each lane's
# first test waits until the other lane has started (both run at once) and a whole-cluster
# test has (the whole-cluster group does not wait for them); the quiet-host test waits, as
# the real fixture does for slots, until both modules have ended.
REAL_MODULE = """
import os
from pathlib import Path

import pytest

from harness.kit.waits import wait_for

pytestmark = pytest.mark.real_node
LOG = os.environ["SHARED_LOG"]


@pytest.fixture(scope="module", autouse=True)
def module_done():
    yield
    Path(f"{{LOG}}.done-{me}").touch()


def seen(name):
    wait_for(lambda: Path(f"{{LOG}}.{{name}}").exists(), timeout=60, describe=name)


@pytest.mark.parametrize("i", range({count}))
def test_real(rec, i):
    if i == 0:
        Path(f"{{LOG}}.started-{me}").touch()
        seen("started-{other}")
        seen("whole")
"""

QUIET_MODULE = """
import os
from pathlib import Path

import pytest

from harness.kit.waits import wait_for

LOG = os.environ["SHARED_LOG"]


@pytest.fixture
def quiet_host():  # the name alone puts a test in the quiet-host group
    for name in ("one", "two"):
        wait_for(lambda: Path(f"{LOG}.done-{name}").exists(), timeout=60, describe=name)


@pytest.mark.real_node
def test_quiet(rec, quiet_host):
    pass
"""

WHOLE_MARKER = """

@pytest.mark.serial
def test_whole_beside_real(rec):
    Path(os.environ["SHARED_LOG"] + ".whole").touch()
"""


@pytest.fixture
def log(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the toy tests record themselves; their conftest; the run's directory under tmp."""
    path = tmp_path / "log.jsonl"
    monkeypatch.setenv("SHARED_LOG", str(path))
    monkeypatch.setenv("DRA_HARNESS_RUN_DIR", str(tmp_path / "runs"))
    pytester.makeconftest(CONFTEST)
    return path


def test_whole_cluster_tests_run_last_alone_on_the_owner(
    pytester: pytest.Pytester, tmp_path: Path, log: Path
) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly", "-p", "no:pytest-kind")
    result.assert_outcomes(passed=12)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    ordinary = [r for r in rows if r["test"].startswith("test_ordinary")]
    whole = [r for r in rows if not r["test"].startswith("test_ordinary")]
    assert sorted(r["test"] for r in whole) == [
        "test_restarts_a_component",
        "test_serial[0]",
        "test_serial[1]",
        "test_serial[2]",
    ]
    owner = Path(f"{log}.owner").read_text()
    assert {r["worker"] for r in whole} == {owner}
    assert min(r["start"] for r in whole) > max(r["end"] for r in ordinary)
    assert {r["worker"] for r in ordinary} == {"gw0", "gw1"}  # the others did run in parallel
    assert list((tmp_path / "runs").iterdir()) == []  # the controller removed the run's lock dir


def test_another_distribution_mode_is_refused_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadfile", "-p", "no:pytest-kind")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ERROR: --dist loadfile: the suites run in parallel with --dist loadgroup "
        "(whole-cluster tests run alone)"
    ) in result.errlines


def test_real_node_modules_run_on_two_lanes_beside_the_whole_cluster_group_and_quiet_host_last(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(CACHE))  # pytester's HOME has no built kubelet
    pytester.makepyfile(
        test_ordinary=TESTS + WHOLE_MARKER,
        test_real_one=REAL_MODULE.format(me="one", other="two", count=3),
        test_real_two=REAL_MODULE.format(me="two", other="one", count=2),
        test_real_quiet=QUIET_MODULE,
    )
    result = pytester.runpytest_subprocess("-n", "3", "-p", "no:randomly", "-p", "no:pytest-kind", "-rs")
    if result.parseoutcomes().get("skipped"):  # the real-node collection check's one line
        pytest.skip(next(line for line in result.outlines if line.startswith("SKIPPED")))
    result.assert_outcomes(passed=19)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    by_module: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_module.setdefault(r["module"], []).append(r)
    lanes = {m: {r["worker"] for r in by_module[m]} for m in ("test_real_one", "test_real_two")}
    assert [len(w) for w in lanes.values()] == [1, 1]
    assert lanes["test_real_one"] != lanes["test_real_two"]
    whole = [r for r in by_module["test_ordinary"] if not r["test"].startswith("test_ordinary")]
    ordinary = [r for r in by_module["test_ordinary"] if r["test"].startswith("test_ordinary")]
    owner = Path(f"{log}.owner").read_text()
    assert {r["worker"] for r in whole} == {owner}
    assert owner not in lanes["test_real_one"] | lanes["test_real_two"]
    assert min(r["start"] for r in whole) > max(r["end"] for r in ordinary)
    real = by_module["test_real_one"] + by_module["test_real_two"]
    assert min(r["start"] for r in whole) < max(r["end"] for r in real)  # beside, not after
    (quiet,) = by_module["test_real_quiet"]
    assert quiet["worker"] in lanes["test_real_one"] | lanes["test_real_two"]
    assert list((tmp_path / "runs").iterdir()) == []


# With one or two workers there is one lane: the real-node modules run on it one after the other.
SOLO_REAL_MODULE = """
import pytest

pytestmark = pytest.mark.real_node


@pytest.mark.parametrize("i", range({count}))
def test_real(rec, i):
    pass
"""

SOLO_QUIET_MODULE = """
import pytest


@pytest.fixture
def quiet_host():  # the name alone puts a test in the quiet-host group
    return None


@pytest.mark.real_node
def test_quiet(rec, quiet_host):
    pass
"""


@pytest.mark.parametrize("workers", [1, 2])
def test_with_one_or_two_workers_one_lane_runs_the_real_node_modules_in_turn(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: Path, workers: int
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(CACHE))  # pytester's HOME has no built kubelet
    pytester.makepyfile(
        test_ordinary=TESTS + WHOLE_MARKER,
        test_real_one=SOLO_REAL_MODULE.format(count=3),
        test_real_two=SOLO_REAL_MODULE.format(count=2),
        test_real_quiet=SOLO_QUIET_MODULE,
    )
    args = ("-n", str(workers), "-p", "no:randomly", "-p", "no:pytest-kind", "-rs")
    result = pytester.runpytest_subprocess(*args)
    if result.parseoutcomes().get("skipped"):  # the real-node collection check's one line
        pytest.skip(next(line for line in result.outlines if line.startswith("SKIPPED")))
    result.assert_outcomes(passed=19)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    real = sorted((r for r in rows if r["module"].startswith("test_real_")), key=lambda r: r["start"])
    (lane,) = {r["worker"] for r in real}
    assert [r["module"] for r in real] == ["test_real_one"] * 3 + ["test_real_two"] * 2 + ["test_real_quiet"]
    whole = [r for r in rows if r["module"] == "test_ordinary" and not r["test"].startswith("test_ordinary")]
    ordinary = [r for r in rows if r["test"].startswith("test_ordinary")]
    owner = Path(f"{log}.owner").read_text()
    assert {r["worker"] for r in whole} == {owner}
    assert min(r["start"] for r in whole) > max(r["end"] for r in ordinary)
    first_on_lane = min((r for r in rows if r["worker"] == lane), key=lambda r: r["start"])
    assert first_on_lane["module"] == "test_real_one"  # the lane takes real-node units first
    if workers == 2:  # the other worker starts on the rest meanwhile
        assert {r["worker"] for r in ordinary} - {lane}
    assert list((tmp_path / "runs").iterdir()) == []


def test_tests_of_the_docker_engine_share_the_quiet_host_unit() -> None:
    from fixtures.scheduling import QUIET, group_of

    class Item:  # what group_of reads of a collected test
        nodeid = "tests/test_kind_cluster.py::test_x"
        fixturenames = ("tmp_path",)

        def __init__(self, marker: str) -> None:
            self.marker = marker

        def get_closest_marker(self, name: str) -> object | None:
            return object() if name == self.marker else None

    assert group_of(Item("docker_engine")) == QUIET  # type: ignore[arg-type]
    assert group_of(Item("other")) is None  # type: ignore[arg-type]


# Two ordinary tests and one whole-cluster test on two workers: each worker holds one ordinary
# test as its last (xdist runs it only with more work or the shutdown), and whichever runs
# first starts the cluster. Its owner's session waits at the end for the others to detach, as
# fixtures.cluster's does, so sending the non-owner home and waiting for it to leave was a
# deadlock (found with `pytest -n 2` on three such suite tests): now the owner retires its
# cluster when its session ends, and the worker with the group starts one of its own.
OWNER_WAITS = """

@pytest.fixture(scope="session", autouse=True)
def owner_waits_for_the_others(request):
    yield
    shared = shared_run(request.config)
    if shared.owner:
        shared.others_detached()
"""

TWO_AND_ONE = """
import os
from pathlib import Path

import pytest

from fixtures.shared import shared_run
from harness.core.cells import Cell
from harness.clusters.attached import AttachedCluster


def start_or_attach(shared):
    with shared.locked():
        if shared.attached() is None:
            shared.publish(AttachedCluster("local", Path("/nowhere"), Cell("1.37")))
            Path(os.environ["SHARED_LOG"] + ".owner").write_text(shared.worker)


@pytest.mark.parametrize("i", range(2))
def test_ordinary(rec, request, i):
    start_or_attach(shared_run(request.config))


def test_restarts_a_component(rec, request, local_cluster):
    shared = shared_run(request.config)
    start_or_attach(shared)
    assert shared.owner, "the whole-cluster test runs on the worker that owns the cluster"
"""


def test_with_every_test_held_the_whole_cluster_group_still_reaches_the_owner(
    pytester: pytest.Pytester, log: Path
) -> None:
    pytester.makeconftest(CONFTEST + "\nfrom fixtures.shared import shared_run\n" + OWNER_WAITS)
    pytester.makepyfile(TWO_AND_ONE)
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "no:randomly", "-p", "no:pytest-kind", timeout=120
    )
    result.assert_outcomes(passed=3)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    (whole,) = [r for r in rows if r["test"] == "test_restarts_a_component"]
    assert whole["worker"] == Path(f"{log}.owner").read_text()
    ordinary = [r for r in rows if r["test"].startswith("test_ordinary")]
    assert len(ordinary) == 2
    assert whole["start"] > max(r["end"] for r in ordinary)  # last, alone
