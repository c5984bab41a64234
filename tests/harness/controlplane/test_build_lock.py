"""Two processes that need the same binary: one builds it, the other waits for that build and
uses it, instead of both writing the same files at once."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.controlplane import build
from harness.core.versions import Minor, load_matrix

WAIT = 30.0  # seconds; a bound for each step, far above what it takes

FAKE_GO = """#!/bin/sh
case "$1" in
env) echo go1.26.0 ;;
install) echo install >> "$GO_CALLS"; timeout 30 cat "$GATE" > /dev/null; : > "$GOBIN/kwok" ;;
esac
"""


def _watch(lines: list[str], prefix: str, seen: threading.Event) -> Callable[[str], None]:
    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith(prefix):
            seen.set()

    return progress


def _in_thread(target: Callable[[], Path], results: list[Path]) -> threading.Thread:
    thread = threading.Thread(target=lambda: results.append(target()), daemon=True)
    thread.start()
    return thread


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "dra-harness"


def test_a_second_kwok_build_waits_for_the_first_and_reuses_it(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir, gate, calls = tmp_path / "bin", tmp_path / "gate", tmp_path / "go-calls"
    bin_dir.mkdir()
    (bin_dir / "go").write_text(FAKE_GO)
    (bin_dir / "go").chmod(0o755)
    os.mkfifo(gate)  # the fake `go install` blocks reading it (30 s at most) until the test writes
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("GATE", str(gate))
    monkeypatch.setenv("GO_CALLS", str(calls))
    matrix = load_matrix()
    first_lines: list[str] = []
    second_lines: list[str] = []
    building, waiting = threading.Event(), threading.Event()
    results: list[Path] = []

    first = _in_thread(lambda: build.ensure_kwok(matrix, _watch(first_lines, "building", building)), results)
    assert building.wait(WAIT)
    second = _in_thread(lambda: build.ensure_kwok(matrix, _watch(second_lines, "waiting", waiting)), results)
    assert waiting.wait(WAIT)
    opener = threading.Thread(target=lambda: open(gate, "w").close(), daemon=True)
    opener.start()
    for thread in (opener, first, second):
        thread.join(WAIT)
        assert not thread.is_alive()

    assert results == [build.kwok_path(matrix)] * 2
    assert calls.read_text() == "install\n"
    assert second_lines == [f"waiting for another build of kwok {matrix.kwok_version} ({results[0]})"]
    assert sorted(p.name for p in results[0].parent.iterdir()) == ["kwok", "kwok.lock"]


def test_a_second_controlplane_build_waits_for_the_first_and_reuses_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    minor = load_matrix().minor("1.37")
    started, release = threading.Event(), threading.Event()
    builds: list[Path] = []

    def slow_build(minor: Minor, binary: Path, progress: build.Progress) -> None:
        builds.append(binary)
        started.set()
        assert release.wait(WAIT)
        binary.write_text("k8slocal")

    monkeypatch.setattr(build, "check_go", lambda mod, what, minor=None: None)
    monkeypatch.setattr(build, "_inputs_hash", lambda minor: "inputs")
    monkeypatch.setattr(build, "_build_controlplane", slow_build)
    lines: list[str] = []
    waiting = threading.Event()
    results: list[Path] = []

    first = _in_thread(lambda: build.ensure_controlplane(minor, lambda _: None), results)
    assert started.wait(WAIT)
    second = _in_thread(lambda: build.ensure_controlplane(minor, _watch(lines, "waiting", waiting)), results)
    assert waiting.wait(WAIT)
    release.set()
    for thread in (first, second):
        thread.join(WAIT)
        assert not thread.is_alive()

    binary = build.binary_path(minor)
    assert (results, builds) == ([binary, binary], [binary])
    assert lines == [f"waiting for another build of k8slocal {minor.kubernetes} ({binary})"]
    assert binary.with_name("inputs.sha256").read_text() == "inputs"


def test_temporary_build_outputs_have_names_of_their_own(tmp_path: Path) -> None:
    first, second = build._temp_path(tmp_path, "k8slocal."), build._temp_path(tmp_path, "k8slocal.")
    assert first != second
    assert first.parent == second.parent == tmp_path
