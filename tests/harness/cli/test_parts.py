"""What `make test` builds (harness.cli.parts): every part has a measured budget,
the two lanes run side by side with their order, a failed part stops only what waits for it,
and the fresh-machine table says which part was built without a budget."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from fixtures.options import minors_to_check
from harness.cli import parts
from harness.controlplane.buildlog import expectation, log_build, measured_builds
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT, load_matrix, parse_matrix

MATRIX = load_matrix()
NOT_BUILT = lambda: False  # noqa: E731  (a toy part that always builds)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """builds.jsonl of this test's own: toy parts never enter the machine's measurements."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_every_part_make_test_builds_has_a_measured_cold_time() -> None:
    names = [p.name for p in parts.parts_for("test", MATRIX)]
    assert len(names) == len(set(names)), names
    assert [n for n in names if n not in MATRIX.budget] == []
    parts.check_budget(parts.parts_for("test", MATRIX), MATRIX)  # what `make parts` checks first


def test_make_test_builds_the_control_plane_of_every_minor_its_checks_start(
    pytestconfig: pytest.Config,
) -> None:
    names = {p.name for p in parts.parts_for("test", MATRIX)}
    default = MATRIX.minor(MATRIX.default_minor).number
    # The skew table's kubelets: every minor up to the default (a newer one, 1.38 before its
    # release, is built by `make test-minors`, not within CI's budget).
    skew = {f"kubelet {m.name}" for m in MATRIX.minors.values() if m.number <= default}
    assert skew <= names
    if not pytestconfig.getoption("--every-minor"):
        assert {f"k8slocal {m}" for m in minors_to_check(pytestconfig)} <= names


def test_every_part_waits_only_for_parts_of_its_set() -> None:
    for set_name in parts.SETS:
        names = {p.name for p in parts.parts_for(set_name, MATRIX)}
        assert {d for p in parts.parts_for(set_name, MATRIX) for d in p.after} <= names, set_name
    with pytest.raises(HarnessError) as err:
        parts.build_parts([parts.Part("image", parts.GO_A, lambda _: None, after=("aptt",))])
    assert str(err.value) == "parts wait for parts the set does not have: aptt"


def test_a_part_without_a_budget_is_refused_with_one_line() -> None:
    extra = parts.Part("helm 3.99", parts.GO_A, lambda _: None)
    with pytest.raises(HarnessError) as err:
        parts.check_budget([*parts.parts_for("test", MATRIX), extra], MATRIX)
    assert str(err.value) == (
        "versions.toml [budget] has no cold build time for helm 3.99: measure it with "
        "`make test-fresh` (it lists what each part took) and add it"
    )


def test_the_budget_of_parts_and_the_total_is_within_ci_limits() -> None:
    assert MATRIX.budget_minutes <= 45  # CI gives 90 minutes; half of them is the goal


def _recorder(log: list[str], lock: threading.Lock, name: str) -> Callable[[object], None]:
    def build(_: object) -> None:
        with lock:
            log.append(name)

    return build


def test_a_part_waits_for_the_parts_it_comes_after_and_each_lane_keeps_its_order() -> None:
    log: list[str] = []
    lock = threading.Lock()
    gate = threading.Event()

    def first_go(_: object) -> None:
        _recorder(log, lock, "go 1")(None)
        gate.set()

    def slow_apt(_: object) -> None:
        gate.wait(timeout=30)  # released by the cpu lane's first part: the lanes run side by side
        _recorder(log, lock, "apt")(None)

    plan = [
        parts.Part("apt", parts.IO, slow_apt, built=NOT_BUILT),
        parts.Part("go 1", parts.GO_A, first_go, built=NOT_BUILT),
        parts.Part("go 2", parts.GO_A, _recorder(log, lock, "go 2"), built=NOT_BUILT),
        parts.Part("image", parts.GO_A, _recorder(log, lock, "image"), after=("apt",), built=NOT_BUILT),
        parts.Part("cached", parts.IO, _recorder(log, lock, "never"), built=lambda: True),
    ]
    outcomes = parts.build_parts(plan, progress=lambda _: None)
    assert log.index("go 1") < log.index("apt") < log.index("image")
    assert log.index("go 1") < log.index("go 2")
    assert "never" not in log
    assert [(o.part, o.cached, o.error) for o in outcomes] == [
        ("apt", False, ""),
        ("go 1", False, ""),
        ("go 2", False, ""),
        ("image", False, ""),
        ("cached", True, ""),
    ]


def test_a_failed_part_stops_what_waits_for_it_and_nothing_else(tmp_path: Path) -> None:
    def fails(_: object) -> None:
        raise HarnessError("apt-get install failed: E: Unable to locate package nope\nmore")

    plan = [
        parts.Part("apt", parts.IO, fails, built=NOT_BUILT),
        parts.Part("go", parts.GO_A, lambda _: None, built=NOT_BUILT),
        parts.Part("image", parts.GO_A, lambda _: None, after=("apt",), built=NOT_BUILT),
    ]
    outcomes = {o.part: o.error for o in parts.build_parts(plan, progress=lambda _: None)}
    assert list(measured_builds()) == ["go"]  # only what was built is a measurement
    assert outcomes == {
        "apt": "apt-get install failed: E: Unable to locate package nope",
        "go": "",
        "image": "not built: apt failed",
    }


def test_builds_are_logged_and_expected_from_the_measurement(own_cache: Path) -> None:
    assert measured_builds() == {}
    assert expectation("k8slocal 1.37") == (
        f"about {round(MATRIX.budget['k8slocal 1.37'] / 60)} min cold on 2 cores (versions.toml [budget])"
    )
    log_build("k8slocal 1.37", 61.0)
    log_build("k8slocal 1.37", 185.4)
    (own_cache / "dra-harness" / "builds.jsonl").open("a").write('{"part": "cut sh')  # a killed writer
    assert measured_builds() == {"k8slocal 1.37": 185.4}
    assert expectation("k8slocal 1.37") == "about 3 min, measured here"
    assert expectation("no such part") == "several minutes"


def test_the_fresh_machine_table_flags_a_part_built_without_a_budget_and_a_slow_run() -> None:
    log_build("kwok", 100.0)
    log_build("helm 3.99", 12.0)
    table, problems = parts.budget_report(50 * 60, MATRIX)
    assert table.splitlines()[1].split()[:3] == ["kwok", "100", str(MATRIX.budget["kwok"])]
    assert problems == [
        "helm 3.99 was built (12s) but has no budget in versions.toml",
        f"make test took 50.0 min, over the budget of {MATRIX.budget_minutes} min",
    ]


def test_versions_says_what_is_not_built_and_how_long_its_build_takes(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))  # an empty cache: a new machine
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "versions"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for line, minor in zip(done.stdout.splitlines(), MATRIX.minors.values(), strict=True):
        minutes = round(MATRIX.budget[f"k8slocal {minor.name}"] / 60)
        assert line.endswith(
            f"not built (`make controlplane K8S={minor.name}`, a build of ~{minutes} min)"
        ), line


def test_versions_toml_refuses_a_test_minor_it_does_not_define() -> None:
    text = (
        (REPO_ROOT / "versions.toml")
        .read_text()
        .replace('controlplanes = ["1.37"', 'controlplanes = ["1.99", "1.37"')
    )
    with pytest.raises(HarnessError) as err:
        parse_matrix(text)
    assert str(err.value) == "versions.toml: [test] names 1.99, which [minors] does not define"


def test_a_part_that_cannot_tell_and_reused_its_cache_is_not_a_measurement() -> None:
    outcome = parts.build_parts([parts.Part("crictl", parts.GO_A, lambda _: None)], progress=lambda _: None)
    assert [(o.part, o.cached, o.error) for o in outcome] == [("crictl", True, "")]
    assert measured_builds() == {}
