"""fixtures/shared.py's scheduling, from real pytest-xdist runs (pytester, two workers): tests
that need the whole cluster run after every other test, alone, on the worker that owns the
cluster; the run's lock directory is gone afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TESTS = """
import json, os, time
from pathlib import Path

import pytest

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
