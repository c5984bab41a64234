"""`pytest --real-nodes`: tests that rely on kwok's pod simulation skip with one line, the others
run; without the option nothing is skipped for it. No cluster: the tests use no fixture."""

from __future__ import annotations

import pytest

from fixtures.realnodes import KWOK_PODS
from tests.cli import run_suite_file

TESTS = """
import pytest

@pytest.mark.kwok_pods
def test_needs_kwok():
    pass

def test_anywhere():
    pass
"""


@pytest.mark.parametrize(
    ("args", "outcomes"), [((), {"passed": 2}), (("--real-nodes",), {"passed": 1, "skipped": 1})]
)
def test_kwok_pods_tests_skip_on_real_nodes(
    pytester: pytest.Pytester, args: tuple[str, ...], outcomes: dict[str, int]
) -> None:
    result = run_suite_file(pytester, TESTS, "-rs", *args)
    result.assert_outcomes(**outcomes)
    if args:
        result.stdout.fnmatch_lines([f"SKIPPED * {KWOK_PODS}"])
