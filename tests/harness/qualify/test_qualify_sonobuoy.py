"""qualify as a Sonobuoy plugin: the definition has one source (harness.qualify.sonobuoy, the
file kept equal here), progress goes to the worker's endpoint as Sonobuoy's ProgressUpdate,
and a missing endpoint costs one line, not one timeout per test."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.core.versions import REPO_ROOT
from harness.kit import sonobuoy
from harness.qualify.sonobuoy import plugin_manifest, plugin_yaml
from tests.support.sonobuoy_worker import progress_endpoint

FILE = REPO_ROOT / "deploy" / "qualify" / "sonobuoy-plugin.yaml"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sonobuoy, "_given_up", [])


def test_the_plugin_file_is_the_definition_in_the_code() -> None:
    assert FILE.read_text() == plugin_yaml(), (
        "regenerate: dra-harness qualify --print-sonobuoy-plugin > deploy/qualify/sonobuoy-plugin.yaml"
    )
    plugin = yaml.safe_load(FILE.read_text())
    assert plugin == plugin_manifest()
    config = plugin["sonobuoy-config"]
    assert (config["driver"], config["plugin-name"], config["result-format"]) == (
        "Job",
        "dra-qualify",
        "junit",
    )
    assert config["result-files"] == ["junit.xml"]
    spec = plugin["spec"]
    assert spec["imagePullPolicy"] == "Never", "the harness image is built locally, never pulled"
    assert [spec["command"][0], spec["args"][0]] == ["dra-harness", "qualify"]
    assert "--out=$(SONOBUOY_RESULTS_DIR)" in spec["args"]


def test_print_sonobuoy_plugin_needs_no_cluster() -> None:
    argv = [sys.executable, "-m", "harness.cli.main", "qualify", "--print-sonobuoy-plugin"]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, plugin_yaml(), "")


def test_progress_is_posted_as_sonobuoy_s_progress_update() -> None:
    with progress_endpoint() as (port, updates):
        env = {"SONOBUOY_PROGRESS_PORT": str(port)}
        assert sonobuoy.post_progress("finished a", 1, 2, env=env)
        assert sonobuoy.post_progress("finished b", 2, 2, ["b"], env=env)
    assert [(u["msg"], u["completed"], u["total"], u["failures"]) for u in updates] == [
        ("finished a", 1, 2, []),
        ("finished b", 2, 2, ["b"]),
    ]
    assert set(updates[0]) == {"name", "node", "timestamp", "msg", "total", "completed", "errors", "failures"}
    assert updates[0]["name"] == "dra-qualify"


def test_no_port_no_post() -> None:
    assert not sonobuoy.post_progress("x", 1, 1, env={})


def test_an_endpoint_that_is_not_there_is_one_line_then_silence(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"SONOBUOY_PROGRESS_PORT": str(port)}
    assert not sonobuoy.post_progress("x", 1, 2, env=env)
    assert not sonobuoy.post_progress("y", 2, 2, env=env)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"dra-harness: Sonobuoy progress not posted to http://localhost:{port}/progress ("
    )


def test_qualify_s_results_default_to_sonobuoy_s_directory(tmp_path: Path) -> None:
    assert sonobuoy.results_dir({"SONOBUOY_RESULTS_DIR": str(tmp_path)}) == str(tmp_path)
    assert sonobuoy.results_dir({}) == ""
