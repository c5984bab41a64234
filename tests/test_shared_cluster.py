"""fixtures/shared.py's scheduling, from real pytest-xdist runs (pytester, two workers): tests
that need the whole cluster run after every other test, alone, on the worker that owns the
cluster; the run's lock directory is gone afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.controlplane.build import cache_root

CACHE = cache_root().parent  # read at import, before pytester moves HOME

TESTS = """
import json, os, time
from pathlib import Path

import pytest

from harness.controlplane.build import cache_root

CACHE = cache_root().parent  # read at import, before pytester moves HOME

from fixtures.shared import shared_run
from harness.cells import Cell
from harness.clusters.attached import AttachedCluster


@pytest.fixture
def rec(request):
    start = time.monotonic()
    yield
    line = {"test": request.node.name, "worker": os.environ["PYTEST_XDIST_WORKER"],
            "start": start, "end": time.monotonic()}
    with Path(os.environ["SHARED_LOG"]).open("a") as f:
        f.write(json.dumps(line) + "\\n")


@pytest.fixture
def local_cluster():  # stands in for the plugin's: the name alone puts a test in the group
    return None


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

# Real-node tests (their clusters are their own) as a group on one worker, beside the others:
# the first waits until a whole-cluster test has started, which it can only do if the
# whole-cluster group does not wait for the real-node group.
REAL_TESTS = """
@pytest.mark.real_node
@pytest.mark.parametrize("i", range(2))
def test_real(rec, i):
    if i == 0:
        from harness.waits import wait_for
        wait_for(lambda: Path(os.environ["SHARED_LOG"] + ".whole").exists(), timeout=60,
                 describe="a whole-cluster test started beside the real-node group")


@pytest.mark.serial
def test_whole_beside_real(rec):
    Path(os.environ["SHARED_LOG"] + ".whole").touch()
"""


def test_whole_cluster_tests_run_last_alone_on_the_owner(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("SHARED_LOG", str(log))
    monkeypatch.setenv("DRA_HARNESS_RUN_DIR", str(tmp_path / "runs"))
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


def test_real_node_tests_run_on_one_worker_beside_the_whole_cluster_group(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("SHARED_LOG", str(log))
    monkeypatch.setenv("DRA_HARNESS_RUN_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(CACHE))  # pytester's HOME has no built kubelet
    pytester.makepyfile(TESTS + REAL_TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly", "-p", "no:pytest-kind", "-rs")
    if result.parseoutcomes().get("skipped"):  # the real-node collection check's one line
        pytest.skip(next(line for line in result.outlines if line.startswith("SKIPPED")))
    result.assert_outcomes(passed=15)
    rows = {json.loads(line)["test"]: json.loads(line) for line in log.read_text().splitlines()}
    real = [rows["test_real[0]"], rows["test_real[1]"]]
    assert len({r["worker"] for r in real}) == 1
    whole = rows["test_whole_beside_real"]
    owner = Path(f"{log}.owner").read_text()
    assert whole["worker"] == owner != real[0]["worker"]
    assert whole["start"] < real[0]["end"]  # beside, not after
    ordinary = [r for name, r in rows.items() if name.startswith("test_ordinary")]
    timeline = " ".join(f"{r['test']}@{r['worker']}:{r['start']:.3f}-{r['end']:.3f}" for r in rows.values())
    assert whole["start"] > max(r["end"] for r in ordinary), timeline  # after every ordinary test
