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
from harness.core.drivers import inject_fault_argv, plugin_restart_argv
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT
from harness.kit.nodepods import PLUGIN_RESTART_TIMEOUT, inject_fault, restart_plugin
from harness.kit.waits import wait_for


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


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["s", "reboot", "n"],
        ["s", control.COMMAND, ""],
        ["s", control.INJECT, "n"],
        ["s", control.INJECT, "n", ""],
    ],
)
def test_a_malformed_call_prints_the_usage_and_exits_2(argv: list[str]) -> None:
    done = _client(argv)
    assert (done.returncode, done.stderr) == (
        2,
        f"usage: python -m {control.MODULE} SOCKET restart-plugin NODE | SOCKET inject-fault NODE DEVICE\n",
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


def test_the_suites_restart_runner_fills_the_node_and_reports_a_failure_in_one_line() -> None:
    restart_plugin(("sh", "-c", 'test "$0" = node-a', "{node}"), "node-a")
    with pytest.raises(HarnessError) as failed:
        restart_plugin(("sh", "-c", "echo first; echo 'no plugin on {node}' >&2; exit 3"), "node-b")
    assert str(failed.value) == (
        "sh -c 'echo first; echo '\"'\"'no plugin on node-b'\"'\"' >&2; exit 3': exit 3: "
        "first | no plugin on node-b"
    )


def test_a_restart_command_that_never_returns_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child"
    with pytest.raises(HarnessError, match=r": no exit in 1 s: started$"):
        restart_plugin(("sh", "-c", f"sleep 600 & echo $! > {pid_file}; echo started; wait"), "n", timeout=1)
    status = Path(f"/proc/{int(pid_file.read_text())}/status")
    # The pipe closes on the way out of the kernel's exit, a moment before the state says so.
    wait_for(
        lambda: _read_or_gone(status),
        lambda text: text == "gone" or "(zombie)" in text,
        timeout=10,
        describe="the command's background child killed with its group",
    )


def _read_or_gone(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:  # reaped between two reads
        return "gone"


def test_the_restart_command_gets_the_runs_kubeconfig_not_the_runners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", "/home/runner/.kube/config")  # the runner's default context
    given = tmp_path / "cluster.kubeconfig"
    with pytest.raises(HarnessError) as failed:
        restart_plugin(("sh", "-c", 'echo "KUBECONFIG=$KUBECONFIG"; exit 3'), "n", kubeconfig=given)
    assert str(failed.value) == (
        f"""sh -c 'echo "KUBECONFIG=$KUBECONFIG"; exit 3': exit 3: KUBECONFIG={given}"""
    )
    with pytest.raises(HarnessError, match=r": exit 3: KUBECONFIG=/home/runner/\.kube/config$"):
        restart_plugin(("sh", "-c", 'echo "KUBECONFIG=$KUBECONFIG"; exit 3'), "n")  # none given: as it was


def test_a_restart_command_runs_without_a_shell() -> None:
    with pytest.raises(HarnessError) as failed:
        restart_plugin(("true;", "echo", "{node}"), "n")
    assert str(failed.value) == "'true;' echo n: No such file or directory"


def test_the_help_says_the_restart_bound_it_has() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "qualify", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert f"killed after {PLUGIN_RESTART_TIMEOUT:.0f} s" in " ".join(done.stdout.split())


def test_the_socket_injects_a_fault_through_the_owner_and_says_why_not_in_one_line() -> None:
    calls: list[tuple[str, str]] = []

    def inject(node: str, device: str) -> None:
        if node == "off":
            raise HarnessError("node off: the plugin's NVMLDeviceHealthCheck gate is off")
        calls.append((node, device))

    with control.serving(lambda node: None, inject) as template:
        fault = control.inject_template(template)
        assert fault[4:] == [control.INJECT, "{node}", "{device}"]
        inject_fault_argv(" ".join(fault))  # a valid --inject-fault-command
        ok = _client([w.format(node="real-0", device="gpu-3") for w in fault[3:]])
        off = _client([w.format(node="off", device="gpu-0") for w in fault[3:]])
    assert (ok.returncode, ok.stderr, calls) == (0, "", [("real-0", "gpu-3")])
    assert (off.returncode, off.stderr) == (
        1,
        "inject-fault off gpu-0: node off: the plugin's NVMLDeviceHealthCheck gate is off\n",
    )
    with control.serving(lambda node: None) as template:  # no injector served
        none = _client([w.format(node="n", device="d") for w in control.inject_template(template)[3:]])
    assert none.returncode == 1
    assert none.stderr.startswith("inject-fault n d: expected `restart-plugin NODE`"), none.stderr


@pytest.mark.parametrize(
    ("command", "line"),
    [
        ("", "--inject-fault-command: empty; give a command with {node} and {device}"),
        (
            "sick {node}",
            "--inject-fault-command: 'sick {node}' names no {device}: it must say which device to make sick",
        ),
        (
            "sick {{node}} {device}",
            "--inject-fault-command: 'sick {{node}} {device}' names no {node}: "
            "it must say which device to make sick",
        ),
        (
            "sick {node} {gpu}",
            "--inject-fault-command: '{gpu}': only {node} and {device} may be named ('gpu')",
        ),
        ("sick '{node}", "--inject-fault-command: No closing quotation"),
    ],
)
def test_a_bad_fault_template_is_one_line(command: str, line: str) -> None:
    with pytest.raises(ValueError, match=r"^--inject-fault-command: ") as err:
        inject_fault_argv(command)
    assert str(err.value) == line


def test_the_fault_runner_fills_both_fields_and_redacts_what_it_reports() -> None:
    inject_fault(("sh", "-c", 'test "$0 $1" = "n1 gpu-2"', "{node}", "{device}"), "n1", "gpu-2")
    with pytest.raises(HarnessError) as failed:
        inject_fault(("sh", "-c", "echo password=hunter2 >&2; exit 4", "{node}", "{device}"), "n1", "gpu-2")
    assert (
        str(failed.value)
        == "sh -c 'echo password=<redacted> >&2; exit 4' n1 gpu-2: exit 4: password=<redacted>"
    )
    with pytest.raises(HarnessError, match=r" n1 gpu-2: no exit in 1 s: no output$"):
        inject_fault(("sh", "-c", "exec sleep 600", "{node}", "{device}"), "n1", "gpu-2", timeout=1)
