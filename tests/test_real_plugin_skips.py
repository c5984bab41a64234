"""`make test` counts its real-plugin comparisons (fixtures/realplugins.py): under
--require-real-plugins a skipped `real_plugin_comparison` test fails the session, one line per
test with its reason (also when xdist workers ran them); --exclude-real-plugins=WHY deselects
them and says so in one line at the start; a host that cannot run real nodes is named there too.
A plain run (no option) keeps pytest's skips as they are."""

from __future__ import annotations

import os

import pytest

from fixtures.realplugins import start_line
from harness.core.versions import REPO_ROOT

COMPARISONS = """
import pytest

pytestmark = [pytest.mark.real_plugin_comparison]


@pytest.fixture(scope="module")
def part():
    pytest.skip("the example driver v0.4.0 is not built: run `make drivers DRIVER=example@v0.4.0`")


def test_compares_in_setup(part):
    pass


def test_skips_in_its_body():
    pytest.skip("no MIG pool")


@pytest.mark.skip(reason="real nodes need root (mount namespaces, cgroups, bridges)")
def test_skipped_at_collection():  # as fixtures/realnodes.py skips where the host cannot
    pass
"""
OTHERS = """
import pytest


def test_unmarked_skip():
    pytest.skip("unrelated")


def test_plain():
    pass
"""
PASSING = """
import pytest


@pytest.mark.real_plugin_comparison
def test_compares():
    pass
"""
SKIPPED = [
    "real-plugin comparison skipped: test_compare.py::test_compares_in_setup: "
    "the example driver v0.4.0 is not built: run `make drivers DRIVER=example@v0.4.0`",
    "real-plugin comparison skipped: test_compare.py::test_skipped_at_collection: "
    "real nodes need root (mount namespaces, cgroups, bridges)",
    "real-plugin comparison skipped: test_compare.py::test_skips_in_its_body: no MIG pool",
    "3 real-plugin comparisons skipped under --require-real-plugins: "
    "--exclude-real-plugins=WHY (make test EXCLUDE_REAL_PLUGINS=WHY) leaves them out",
]
XDIST = [[], ["-n", "2"]]


def _run(pytester: pytest.Pytester, files: dict[str, str], *args: str) -> pytest.RunResult:
    pytester.makeconftest((REPO_ROOT / "conftest.py").read_text())
    for name, text in files.items():
        (pytester.path / name).write_text(text)
    return pytester.runpytest_subprocess(
        "-p", "no:pytest-kind", "-p", "no:cacheprovider", f"--rootdir={pytester.path}", *args, timeout=300
    )


def _ours(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith(("real-plugin comparison", "3 real-plugin"))]


@pytest.mark.parametrize("workers", XDIST, ids=["serial", "xdist"])
def test_a_skipped_comparison_fails_the_run_under_the_requirement(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    files = {"test_compare.py": COMPARISONS, "test_other.py": OTHERS}
    result = _run(pytester, files, "--require-real-plugins", *workers)
    result.assert_outcomes(passed=1, skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _ours(result) == SKIPPED  # the unmarked skip is not one of them

    plain = _run(pytester, files, *workers)  # an ad-hoc run: skips stay skips
    plain.assert_outcomes(passed=1, skipped=4)
    assert (plain.ret, _ours(plain)) == (pytest.ExitCode.OK, [])


@pytest.mark.parametrize("workers", XDIST, ids=["serial", "xdist"])
def test_excluded_comparisons_are_deselected_with_one_line_at_the_start(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    files = {"test_compare.py": COMPARISONS, "test_other.py": OTHERS}
    why = "make test EXCLUDE_REAL_PLUGINS=no root on this runner"
    result = _run(pytester, files, "--require-real-plugins", f"--exclude-real-plugins={why}", *workers)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=1, deselected=0 if workers else 3)
    line = f"real-plugin comparisons excluded: {why}"
    assert _ours(result) == [line]
    first_result = next(i for i, s in enumerate(result.outlines) if s.startswith(("collected", "created:")))
    assert result.outlines.index(line) < first_result  # in the header, before any test


def test_passing_comparisons_pass_under_the_requirement(pytester: pytest.Pytester) -> None:
    result = _run(pytester, {"test_compare.py": PASSING}, "--require-real-plugins")
    result.assert_outcomes(passed=1)
    assert (result.ret, _ours(result)) == (pytest.ExitCode.OK, [])


def test_a_host_that_cannot_run_real_nodes_is_named_at_the_start(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real host condition, not a stand-in: without `unshare` on PATH (or root) this process
    # cannot start real nodes (harness/clusters/host/state.py missing_requirement).
    monkeypatch.setenv("PATH", str(pytester.path))
    lacks = (
        "real nodes need `unshare` on PATH (make nodeparts)"
        if os.geteuid() == 0
        else "real nodes need root (mount namespaces, cgroups, bridges)"
    )
    result = _run(pytester, {"test_compare.py": COMPARISONS}, "--require-real-plugins")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    line = f"real-plugin comparisons cannot run on this host: {lacks}; their skips fail this run"
    assert _ours(result) == [line, *SKIPPED]
    assert result.outlines.index(line) < result.outlines.index("collected 3 items")


def test_the_start_line() -> None:
    assert start_line(False, None, None) is None
    assert start_line(True, None, None) is None
    assert start_line(False, None, "no root") is None  # an ad-hoc run: the skips say it
    assert start_line(True, "why", "no root") == "real-plugin comparisons excluded: why"


def test_an_empty_reason_is_refused_in_one_line(pytester: pytest.Pytester) -> None:
    result = _run(pytester, {"test_compare.py": PASSING}, "--exclude-real-plugins= ")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line] == [
        "ERROR: --exclude-real-plugins needs a reason: --exclude-real-plugins='no root on this runner'"
    ]
