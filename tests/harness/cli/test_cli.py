"""Bad input to the CLI: one line on stderr, non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cli import bench as cli_bench
from harness.cli import main as cli
from harness.core.versions import REPO_ROOT
from harness.kit.waits import wait_for
from tests.support.cli import run_cli


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("cluster", "up", "-k", "1.99"),
            "dra-harness: unknown Kubernetes version '1.99'; valid: 1.34, 1.35, 1.36, 1.37, 1.38",
        ),
        (
            ("cluster", "up", "-g", "everything"),
            "dra-harness: unknown gate profile 'everything' for 1.37; valid: defaults, dra-all",
        ),
        (
            ("controlplane", "build", "-k", "2.0"),
            "dra-harness: unknown Kubernetes version '2.0'; valid: 1.34, 1.35, 1.36, 1.37, 1.38",
        ),
        (
            ("run", "-k", "1.99"),
            "dra-harness: unknown Kubernetes version '1.99'; valid: 1.34, 1.35, 1.36, 1.37, 1.38",
        ),
        (
            ("bench", "-k", "1.37,1.99"),
            "dra-harness: unknown Kubernetes version '1.99'; valid: 1.34, 1.35, 1.36, 1.37, 1.38",
        ),
        (
            ("bench", "--modes", "plain,dra"),
            "dra-harness: unknown bench mode dra; valid: plain, legacy, bridged, claims",
        ),
        (
            ("bench", "-k", "1.36,1.37", "--out", "x.json"),
            "dra-harness: --out names one file; give one -k with it",
        ),
        (
            ("bench", "--modes", "legacy,bridged", "--profile", "claims"),
            "dra-harness: --profile claims: that mode is not among --modes legacy,bridged",
        ),
        (("bench-curve", "-k", "1.36,1.37"), "dra-harness: bench-curve runs one minor; give one -k"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(args: tuple[str, ...], line: str) -> None:
    done = run_cli(*args)
    assert (done.returncode, done.stderr, done.stdout) == (1, line + "\n", "")


def test_a_wait_that_runs_out_is_its_name_and_last_state_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def bench(_: object) -> int:
        wait_for(lambda: 1080, lambda n: n == 2000, timeout=0, describe="2000 bench nodes registered")
        return 0

    monkeypatch.setattr(cli_bench, "cmd_bench", bench)
    assert cli.main(["bench"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dra-harness: timed out after 0s waiting for 2000 bench nodes registered")
    assert err.endswith("last observed:\n1080\n")


def test_versions_lists_every_minor_with_its_release() -> None:
    done = run_cli("versions")
    assert done.returncode == 0
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["1.34", "1.35", "1.36", "1.37", "1.38"]
    assert "1.37 (default)  v1.37.2  profiles" in done.stdout
    assert "1.38  v1.38.0-beta.0 (GOTOOLCHAIN=go1.27.3)  profiles" in done.stdout


def test_pytest_refuses_an_unknown_version_with_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "suites/smoke", "--k8s-version=1.99", "-q"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 4
    valid = "1.34, 1.35, 1.36, 1.37, 1.38"
    assert done.stderr.strip() == f"ERROR: unknown Kubernetes version '1.99'; valid: {valid}"
