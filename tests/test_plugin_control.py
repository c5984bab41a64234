"""The real nodes' plugin-restart channel (harness/clusters/realnodes/control.py): what the
owner's socket answers, that a restart runs on the one long-lived worker thread (a component
dies with the thread that started it), and the client's exit codes and one-line errors."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.clusters.realnodes import control
from harness.core.drivers import plugin_restart_argv
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT


def _client(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", control.MODULE, *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_restart_runs_on_the_long_lived_worker_and_the_client_exits_0() -> None:
    calls: list[tuple[str, str]] = []

    def restart(node: str) -> None:
        if node == "gone":
            raise HarnessError("no real node gone here (real nodes: real-0)")
        calls.append((node, threading.current_thread().name))

    with control.serving(restart) as template:
        argv = [word.format(node="real-0") for word in template]
        assert argv[:3] == [sys.executable, "-m", control.MODULE]
        socket_path = Path(argv[3])
        assert len(str(socket_path)) <= 107
        ok = _client(argv[3:])
        twice = _client(argv[3:])
        unknown = _client([argv[3], control.COMMAND, "gone"])

    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    assert twice.returncode == 0
    assert [node for node, _ in calls] == ["real-0", "real-0"]
    [worker] = {thread for _, thread in calls}
    assert worker.startswith("real-node-restarts")
    assert (unknown.returncode, unknown.stderr) == (
        1,
        "restart-plugin gone: no real node gone here (real nodes: real-0)\n",
    )
    assert not socket_path.exists()
    assert not socket_path.parent.exists()


def test_without_an_owner_the_client_says_so_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "s"
    done = _client([str(missing), control.COMMAND, "real-0"])
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"restart-plugin real-0: no answer from the real nodes' owner at {missing}: "
    )
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("argv", [[], ["s", "reboot", "n"], ["s", control.COMMAND, ""]])
def test_a_malformed_call_prints_the_usage_and_exits_2(argv: list[str]) -> None:
    done = _client(argv)
    assert (done.returncode, done.stderr) == (
        2,
        f"usage: python -m {control.MODULE} SOCKET restart-plugin NODE\n",
    )


def test_the_restart_template_names_only_the_node() -> None:
    assert plugin_restart_argv("kubectl delete pod -l app=plugin --field-selector spec.nodeName={node}") == (
        "kubectl",
        "delete",
        "pod",
        "-l",
        "app=plugin",
        "--field-selector",
        "spec.nodeName={node}",
    )
    assert plugin_restart_argv("") == ()
    with pytest.raises(ValueError, match=r"^--plugin-restart-command: '\{0\}': only \{node\} may be named"):
        plugin_restart_argv("restart {0}")
