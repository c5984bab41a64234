"""The progress lines of fixtures/progress.py, from a real pytest run (pytester)."""

from __future__ import annotations

import re

import pytest

TESTS = """
import pytest

def test_passes():
    pass

def test_fails():
    assert False

@pytest.mark.skip(reason="not here")
def test_skipped():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("setup fails")

def test_errors(broken):
    pass
"""


def _lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("progress ")]


def test_a_line_after_every_test_counts_done_failed_and_gives_an_eta(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:pytest-kind", "--progress-interval=0", "-p", "no:randomly")
    lines = _lines(result)
    assert len(lines) == 4, result.outlines
    pattern = r"progress (\d\.\d+)/([a-z-]+): (\d)/4 tests(, (\d) failed)?, \d+s elapsed(, ETA \d+s)?"
    parsed = [re.fullmatch(pattern, line) for line in lines]
    assert all(parsed), lines
    assert [(m.group(3), m.group(5)) for m in parsed if m] == [
        ("1", None),
        ("2", "1"),
        ("3", "1"),
        ("4", "2"),
    ]
    assert [bool(m.group(6)) for m in parsed if m] == [True, True, True, False]  # no ETA when done


def test_the_default_interval_writes_only_the_last_line_of_a_short_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    lines = _lines(pytester.runpytest("-p", "no:pytest-kind", "-p", "no:randomly"))
    assert len(lines) == 1
    assert lines[0].startswith("progress ")
    assert ": 4/4 tests, 2 failed, " in lines[0]


def test_a_negative_interval_writes_none(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    assert _lines(pytester.runpytest("-p", "no:pytest-kind", "--progress-interval=-1")) == []


class _NoCache:
    cache = None


def test_the_eta_weighs_the_tests_left_by_their_measured_durations() -> None:
    from fixtures.progress import Progress

    progress = Progress(_NoCache(), "1.37/dra-all", 30.0)  # type: ignore[arg-type]
    progress.total = 4
    progress.ids = {"t::fast1", "t::fast2", "t::slow", "t::new"}
    progress.measured = {"t::slow": 600.0, "t::fast2": 2.0}
    progress.done = {"t::fast1"}
    progress.took = {"t::fast1": 2.0}
    # 2 test-seconds in 4 s elapsed: half speed. Left: 600 + 2 + 2 (the mean, never measured).
    assert progress.eta(4.0) == (600.0 + 2.0 + 2.0) / 0.5
    progress.measured = {}  # nothing measured: the count of tests left at this run's pace
    assert progress.eta(4.0) == 3 * 2.0 / 0.5
    progress.done = set(progress.ids)
    assert progress.eta(4.0) is None
