"""One line for every bad input: what users get wrong, each row run as they run it.

Every row holds the same promise: the exit code it names, one line on stderr that says what is
wrong (nothing at all for a closed pipe), no traceback, nothing left running, no build started
and no report written. The rows run in parallel subprocesses (tests/support/badinput/common.py); each test
then checks its row.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.core.layout import REPORTS
from tests.support.badinput.bounds import BOUNDS
from tests.support.badinput.common import SUMMARY, Outcome, Row, files, run_row, summary, versions
from tests.support.badinput.fakedriver import FAKE_DRIVER, NOT_A_DIR, PLUGINS, F
from tests.support.badinput.hostile import HOSTILE
from tests.support.badinput.lifecycle import LIFECYCLE
from tests.support.badinput.standin import STANDIN_ROWS
from tests.support.badinput.upgrade import CLUSTER_UPGRADE, UPGRADE

SKIPPED_FOR_WEATHER = (SUMMARY % ("1.37", "skipped", "1.0")).replace(
    '"message": ""', '"message": "", "reasons": [{"kind": "weather"}]'
)

WORKERS = 4  # subprocesses at a time: Python start-up is most of each row

REPORT = ("report", "{tmp}/run", "--out", "{tmp}/out")
LIST = ("matrix", "--list", "--versions", "{tmp}/versions.toml")
QUALIFY = ("qualify", "--driver-name", "gpu.acme.example", "--device-class", "gpu.acme.example")

# ---- the catalogue ------------------------------------------------------------------------

USAGE = [  # argparse: exit 2, one line, before anything runs
    Row("no-command", (), 2, r"^dra-harness: error: the following arguments are required: command"),
    Row("unknown-command", ("deploy",), 2, r"invalid choice: 'deploy'"),
    Row("unknown-flag", ("versions", "--all"), 2, r"^dra-harness: error: unrecognized arguments: --all"),
    Row("args-after-dashdash", ("versions", "--", "-x"), 2, r"versions takes no arguments after --"),
    Row("controlplane-no-action", ("controlplane",), 2, r"required: action"),
    Row(
        "chart-no-action",
        ("chart",),
        2,
        r"^dra-harness chart: error: the following arguments are required: action",
    ),
    Row(
        "tool-unknown",
        ("tool", "path", "kubectl"),
        2,
        r"^dra-harness tool path: error: argument name: invalid choice",
    ),
    Row("controlplane-empty-k", ("controlplane", "build", "-k", ""), 2, r"--k8s-version: must not be empty"),
    Row("cluster-up-empty-k", ("cluster", "up", "-k", ""), 2, r"^dra-harness cluster up: error: .*must not"),
    Row("cluster-up-empty-g", ("cluster", "up", "-g", " "), 2, r"-g/--gates: must not be empty"),
    Row("run-empty-k", ("run", "-k", ""), 2, r"^dra-harness run: error: argument -k/--k8s-version: must"),
    Row("run-empty-g", ("run", "--gates="), 2, r"argument -g/--gates: must not be empty"),
    Row("run-empty-path", ("run", ""), 2, r"argument paths: must not be empty"),
    Row("bench-empty-k", ("bench", "-k", ""), 2, r"argument -k/--k8s-version: must not be empty"),
    Row("bench-only-commas", ("bench", "-k", ",,"), 2, r"-k/--k8s-version: empty item in ',,'"),
    Row("bench-trailing-comma", ("bench", "-k", "1.37,"), 2, r"empty item in '1.37,'"),
    Row("bench-k-no-value", ("bench", "-k"), 2, r"-k/--k8s-version: expected one argument"),
    Row("bench-nodes-negative", ("bench", "--nodes", "-5"), 2, r"--nodes: must be greater than 0, got '-5'"),
    Row("bench-nodes-zero", ("bench", "--nodes", "0"), 2, r"--nodes: must be greater than 0, got '0'"),
    Row("bench-pods-zero", ("bench", "--pods", "0"), 2, r"--pods: must be greater than 0"),
    Row("bench-pods-word", ("bench", "--pods", "lots"), 2, r"--pods: expected a whole number, got 'lots'"),
    Row("bench-reps-negative", ("bench", "--reps", "-1"), 2, r"--reps: must be greater than 0"),
    Row("bench-max-batches-zero", ("bench", "--max-batches", "0"), 2, r"--max-batches: must be greater"),
    Row("bench-min-window-nan", ("bench", "--min-window", "nan"), 2, r"--min-window: must be greater than 0"),
    Row("bench-empty-modes", ("bench", "--modes", ""), 2, r"--modes: must not be empty"),
    Row("bench-empty-out", ("bench", "--out", ""), 2, r"--out: must not be empty"),
    Row("matrix-jobs-zero", ("matrix", "-j", "0"), 2, r"-j/--jobs: must be greater than 0, got '0'"),
    Row("matrix-jobs-negative", ("matrix", "--jobs", "-3"), 2, r"-j/--jobs: must be greater than 0"),
    Row("matrix-xdist-negative", ("matrix", "-n", "-1"), 2, r"-n/--xdist: must be at least 0, got '-1'"),
    Row("matrix-empty-suite", ("matrix", "--suite", ""), 2, r"--suite: must not be empty"),
    # The scan's usage errors exit 64: its 2 and 3 are verdicts (harness.scan.exits).
    Row("scan-empty-json", ("scan", "--json", ""), 64, r"--json: must not be empty"),
    Row("scan-empty-context", ("scan", "--context", ""), 64, r"--context: must not be empty"),
    Row(
        "scan-empty-include", ("scan", "--include-resource", ""), 64, r"--include-resource: must not be empty"
    ),
    Row("scan-unknown-option", ("scan", "--contxt", "a"), 64, r"unrecognized arguments: --contxt a"),
    Row(
        "qualify-no-driver-name",
        ("qualify", "--device-class", "c"),
        1,
        r"^dra-harness: qualify needs --driver-name and --device-class, or --driver-spec NAME@VERSION$",
    ),
    Row("qualify-empty-class", ("qualify", "--driver-name", "d", "--device-class", ""), 2, r"must not be"),
    Row("scan-empty-kubeconfig", ("scan", "--kubeconfig", ""), 64, r"--kubeconfig: must not be empty"),
    Row("report-empty-out", ("report", "--out", ""), 2, r"--out: must not be empty"),
    Row("report-empty-dir", ("report", ""), 2, r"argument dir: must not be empty"),
]

HARNESS = [  # checked input: exit 1, "dra-harness: <what is wrong>"
    Row("bench-unknown-minor", ("bench", "-k", "1.37,1.99"), 1, r"unknown Kubernetes version '1.99'"),
    Row("bench-short-window", ("bench", "--min-window", "5"), 1, r"--min-window must be 10-300 s\w+, got 5"),
    Row("bench-unknown-mode", ("bench", "--modes", "plain,dra"), 1, r"unknown bench mode dra; valid: plain"),
    Row("bench-too-many-nodes", ("bench", "--nodes", "5001"), 1, r"--nodes must be at most 5000, got 5001"),
    Row("bench-out-two-minors", ("bench", "-k", "1.36,1.37", "--out", "x.json"), 1, r"--out names one file"),
    Row(
        "bench-out-under-a-file",
        ("bench", "--out", "{tmp}/afile/x.json"),
        1,
        r"^dra-harness: --out .*/" + NOT_A_DIR,
    ),
    Row("bench-out-a-directory", ("bench", "--out", "{tmp}"), 1, r"--out .*: is a directory$"),
    Row("bench-out-in-proc", ("bench", "--out", "/proc/dra/x.json"), 1, r"cannot create files in /proc"),
    Row("controlplane-unknown", ("controlplane", "build", "-k", "2.0"), 1, r"unknown Kubernetes version"),
    Row("cluster-up-unknown-gates", ("cluster", "up", "-g", "all"), 1, r"unknown gate profile 'all' for"),
    Row("run-unknown-minor", ("run", "-k", "1.99"), 1, r"^dra-harness: unknown Kubernetes version '1.99'"),
    Row(
        "run-missing-path", ("run", "suites/nope"), 1, r"^dra-harness: test path suites/nope does not exist$"
    ),
    Row("run-missing-node-id", ("run", "nope.py::test_x"), 1, r"test path nope.py does not exist"),
    Row("matrix-missing-suite", ("matrix", "--suite", "nope"), 1, r"test path nope does not exist"),
    Row("matrix-unknown-cell", ("matrix", "--cells", "1.37/x/dra-all"), 1, r"no driver personality 'x'"),
    Row("matrix-cell-shape", ("matrix", "--cells", "1.37"), 1, r"cell '1.37' is not <minor>/<personality>"),
    Row("matrix-no-cells", ("matrix", "--list", "--cells", ","), 1, r"no cells given"),
    Row("matrix-no-cell-match", ("matrix", "--cells", "9.*/*/*"), 1, r"cell pattern '9.\*/\*/\*' matches no"),
    Row(
        "scan-no-kubeconfig", ("scan", "--kubeconfig", "{tmp}/nope"), 1, r"kubeconfig .*/nope does not exist"
    ),
    Row(
        "qualify-no-kubeconfig",
        (*QUALIFY, "--kubeconfig", "{tmp}/nope"),
        1,
        r"^dra-harness: kubeconfig .*/nope does not exist$",
    ),
    Row(
        "qualify-bad-node-selector",
        (*QUALIFY, "--kubeconfig", "{tmp}/kubeconfig", "--node-selector", "pool"),
        1,
        r"^dra-harness: node selector 'pool': expected key=value\[,key=value\]$",
    ),
    Row(
        "qualify-missing-suite",
        (*QUALIFY, "--kubeconfig", "{tmp}/kubeconfig", "--suite", "suites/nope"),
        1,
        r"^dra-harness: suite suites/nope does not exist$",
    ),
    Row(
        "qualify-unusable-kubeconfig",
        (*QUALIFY, "--kubeconfig", "{tmp}/kubeconfig"),
        1,
        r"^dra-harness: kubeconfig .*/kubeconfig",
    ),
    Row(
        "scan-json-under-a-file",
        ("scan", "--kubeconfig", "{tmp}/kubeconfig", "--json", "{tmp}/afile/x"),
        1,
        NOT_A_DIR,
    ),
    Row(
        "report-out-under-a-file",
        ("report", "{tmp}/run", "--out", "{tmp}/afile/r"),
        1,
        r"--out .*/" + NOT_A_DIR,
    ),
    Row("report-no-dir", ("report", "{tmp}/nope"), 1, r"^dra-harness: .*/nope does not exist$"),
    Row("report-no-runs", ("report", "--merge", "{tmp}/empty"), 1, r"no summary.json under .*/empty"),
    Row(
        "report-bench-missing",
        (*REPORT, "--bench", "{tmp}/nope.json"),
        1,
        r"benchmark file .*/nope.json does",
    ),
    Row(
        "summary-minor-abc",
        REPORT,
        1,
        r'summary.json: cell.minor must be a .* like "1.37", got',
        setup=summary("abc"),
    ),
    Row(
        "summary-unknown-outcome",
        REPORT,
        1,
        r"tests\[0\].outcome must be one of passed, failed, skipped, errors, got 'flaky'",
        setup=summary(outcome="flaky"),
    ),
    Row(
        "summary-unknown-skip-reason-kind",
        REPORT,
        1,
        r"tests\[0\].reasons\[0\]: 'weather' is not a valid Kind",
        setup=files({"run/summary.json": SKIPPED_FOR_WEATHER}),
    ),
    Row(
        "summary-wall-seconds-text",
        REPORT,
        1,
        r"wall_seconds must be a number, got 'soon'",
        setup=summary(wall='"soon"'),
    ),
    Row(
        "summary-not-utf8",
        REPORT,
        1,
        r"summary.json: 'utf-8' codec can't decode",
        setup=files({"run/summary.json": b"\xff"}),
    ),
    Row(
        "summary-not-json",
        REPORT,
        1,
        r"run/summary.json is not a summary.json: Expecting",
        setup=files({"run/summary.json": "{"}),
    ),
]

VERSIONS = [  # a broken versions.toml: one line naming the file and the key
    Row(
        "versions-tool-builds-another-command",
        LIST,
        1,
        r"^dra-harness: .*versions.toml: \[tools.helm\]: module helm.sh/helm/v4/cmd/helmx builds 'helmx', "
        r"not 'helm'$",
        setup=versions(lambda t: t.replace('"helm.sh/helm/v4/cmd/helm"', '"helm.sh/helm/v4/cmd/helmx"')),
    ),
    Row(
        "versions-not-utf8",
        LIST,
        1,
        r"^dra-harness: versions.toml is not UTF-8 text: invalid start byte at byte 0$",
        setup=files({"versions.toml": b"\xff"}),
    ),
    Row(
        "versions-matrix-a-string",
        LIST,
        1,
        r"^dra-harness: versions.toml: \[matrix\] must be a table$",
        setup=versions(lambda t: 'matrix = "all"\n' + t.replace("[matrix]", "[old]")),
    ),
    Row(
        "versions-kind-version-a-number",
        LIST,
        1,
        r"versions.toml: \[kind\]: version must be a string, got 33$",
        setup=versions(lambda t: t.replace('version = "v0.33.0"', "version = 33")),
    ),
    Row(
        "versions-default-minor-unknown",
        LIST,
        1,
        r"versions.toml: default_minor: unknown Kubernetes version '1.99'",
        setup=versions(lambda t: t.replace('default_minor = "1.37"', 'default_minor = "1.99"')),
    ),
    Row(
        "versions-not-toml",
        LIST,
        1,
        r"^dra-harness: versions.toml is not valid TOML: ",
        setup=versions(lambda t: t.replace("[kind]", "[kind")),
    ),
    Row(
        "versions-missing",
        ("matrix", "--list", "--versions", "{tmp}/nope.toml"),
        1,
        r"cannot read .*/nope.toml: No such file",
    ),
    Row(
        "versions-only-for-list",
        ("matrix", "--versions", "{tmp}/versions.toml"),
        1,
        r"--versions .* is for --list only",
    ),
]

CLOSED_PIPE = [  # `... | head`: the reader went away; quiet, 141 as from a shell
    Row("epipe-versions", ("versions",), 141, "", closed_stdout=True),
    Row("epipe-cluster-status", ("cluster", "status"), 141, "", closed_stdout=True),
    Row("epipe-matrix-list", ("matrix", "--list", "--cells", "all"), 141, "", closed_stdout=True),
    Row("epipe-fd-profiles", ("profiles",), 141, "", program="fake_driver", closed_stdout=True),
    Row(
        "epipe-fd-render",
        ("render", "--fleet", F, "--minor", "1.37"),
        141,
        "",
        "fake_driver",
        closed_stdout=True,
    ),
]


PYTEST = [  # the plugin's options: pytest's usage error, exit 4
    Row(
        "pytest-empty-k8s-version",
        ("--k8s-version=",),
        4,
        r"^ERROR: --k8s-version must not be empty",
        "pytest",
    ),
    Row("pytest-empty-gates", ("--gates", ""), 4, r"^ERROR: --gates must not be empty", "pytest"),
    Row(
        "pytest-unknown-version", ("--k8s-version=1.99",), 4, r"^ERROR: unknown Kubernetes version", "pytest"
    ),
    Row(
        "pytest-real-nodes-not-local",
        ("--real-nodes", "--cluster-provider=kind"),
        4,
        r"^ERROR: --real-nodes needs --cluster-provider local, not kind$",
        "pytest",
    ),
]

ROWS = [
    *USAGE,
    *HARNESS,
    *VERSIONS,
    *CLOSED_PIPE,
    *FAKE_DRIVER,
    *PLUGINS,
    *PYTEST,
    *LIFECYCLE,
    *UPGRADE,
    *CLUSTER_UPGRADE,
    *STANDIN_ROWS,
    *HOSTILE,
    *BOUNDS,
]
BY_ID = {row.id: row for row in ROWS}


def _listing() -> set[str]:
    """reports/out's entries but the runs that got as far as pytest (its junit.xml or allure
    results): a refused command never does, and in a parallel run other workers' `run`s write
    there meanwhile."""
    if not REPORTS.is_dir():
        return set()
    ran = ("junit.xml", "allure-results")
    return {p.name for p in REPORTS.iterdir() if not any((p / name).exists() for name in ran)}


Ran = tuple[Outcome, Path]  # the outcome, and the row's directory


@pytest.fixture(scope="module")
def outcome_of(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[Row], Ran]]:
    """The session's rows, run all at once (under xdist, one by one as each test asks: a worker
    does not know which rows it will get); at the end, did any of them write a report?"""
    done: dict[str, Ran] = {}
    before = _listing()
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        wanted = [
            BY_ID[item.callspec.id]
            for item in request.session.items
            if isinstance(item, pytest.Function) and item.originalname == "test_bad_input_is_one_line"
        ]
        dirs = [tmp_path_factory.mktemp(row.id) for row in wanted]
        with ThreadPoolExecutor(WORKERS) as pool:
            outcomes = pool.map(run_row, wanted, dirs)
            done.update({row.id: (o, d) for row, o, d in zip(wanted, outcomes, dirs, strict=True)})

    def outcome(row: Row) -> Ran:
        if row.id not in done:
            tmp = tmp_path_factory.mktemp(row.id)
            done[row.id] = (run_row(row, tmp), tmp)
        return done[row.id]

    yield outcome
    # New entries only: another worker's run that was starting at `before` has its junit.xml
    # now, so it left the listing (the comparison by equality failed on that in CI).
    assert _listing() - before == set(), "a refused command wrote into reports/out"


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_bad_input_is_one_line(row: Row, outcome_of: Callable[[Row], Ran]) -> None:
    done, tmp = outcome_of(row)
    seen = f"exit {done.code}\nstderr: {done.stderr}\nstdout: {done.stdout[:2000]}"
    assert done.code == row.code, seen
    assert "Traceback" not in done.stdout + done.stderr, seen
    assert "Exception ignored" not in done.stderr, seen
    if row.line:
        assert "\n" not in done.stderr.strip(), seen
        assert re.search(row.line, done.stderr.strip()), seen
    else:
        assert done.stderr == "", seen
    assert not done.left_running, f"a process of {row.id} outlived it"
    assert done.go_calls == "", f"{row.id} started a build: go {done.go_calls}"
    assert not (tmp / "cache" / "dra-harness" / "bin").exists(), f"{row.id} made a build directory"


def test_the_catalogue_has_a_row_for_each_kind_of_mistake() -> None:
    assert len(ROWS) >= 60
    assert len(BY_ID) == len(ROWS), "row ids must be unique"
