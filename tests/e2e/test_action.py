"""The composite action (action.yml) without a runner: every step run in its order, with the
same inputs, as a runner would (bash for `run:` steps with their `env:`, GITHUB_OUTPUT and
GITHUB_PATH files, `if:` conditions, the outputs' expressions), against a local cluster of our
own with the stand-in driver `gpu.acme.example` (harness/qualify/standin.py). The two `uses:`
steps are the runner's: setup-python is a directory with the machine's Python on PATH, and
upload-artifact is checked to name a directory holding the report. Also: the run's objects are
gone after the clean-up step, and a kubeconfig given as content is written 0600 and removed."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.clusters.local.cluster import LocalCluster
from harness.core.versions import REPO_ROOT
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.qualify.standin import StandinPoolSpec, install

ACTION = REPO_ROOT / "action.yml"
DRIVER = "gpu.acme.example"
RUN = "dra-harness.io/run"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_REF = re.compile(r"\b(inputs|steps|github|runner)((?:\.[A-Za-z_][\w-]*)+)")
STEP_TIMEOUT = 900  # seconds: the qualify step runs a suite


@dataclass
class Runner:
    """What a runner keeps between a composite action's steps."""

    inputs: dict[str, str]
    temp: Path
    path: list[str]
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def lookup(self, scope: str, dotted: str) -> str:
        keys = dotted.strip(".").split(".")
        if scope == "inputs":
            return self.inputs.get(keys[0], "")
        if scope == "steps":
            return self.steps.get(keys[0], {}).get(keys[2], "")
        github = {"action_path": str(REPO_ROOT), "run_id": "4242", "run_attempt": "1"}
        return github[keys[0]] if scope == "github" else {"temp": str(self.temp)}[keys[0]]

    def expand(self, text: str) -> str:
        return _EXPR.sub(lambda m: self.lookup(*_REF.fullmatch(m.group(1)).groups()), text)  # type: ignore[union-attr]

    def should_run(self, expr: str | None) -> bool:
        """`if:` as a runner reads it: no status function means success() && expr."""
        failed = "failed" in self.ran
        if expr is None:
            return not failed
        if failed and "always()" not in expr:
            return False
        text = _REF.sub(lambda m: repr(self.lookup(m.group(1), m.group(2))), expr)
        text = text.replace("always()", "True").replace("&&", " and ").replace("||", " or ")
        return bool(eval(text, {"__builtins__": {}}))  # our own action.yml's expressions only


def run_step(runner: Runner, step: dict[str, Any]) -> str:
    """`ok`, `failed`, `skipped` (or `no files` for an upload with nothing to upload)."""
    if not runner.should_run(step.get("if")):
        return "skipped"
    uses = step.get("uses", "")
    if uses.startswith("actions/setup-python@"):
        bindir = runner.temp / "setup-python"
        bindir.mkdir(exist_ok=True)
        if not (bindir / "python").exists():  # a second run of the same job's runner
            (bindir / "python").symlink_to(Path(sys.base_prefix) / "bin" / "python3")
        runner.path.insert(0, str(bindir))
        return "ok"
    if uses.startswith("actions/upload-artifact@"):
        assert runner.expand(step["with"]["name"]) == runner.inputs["artifact-name"]
        assert step["with"]["if-no-files-found"] == "warn"
        upload = Path(runner.expand(step["with"]["path"]))
        return "ok" if upload.is_dir() and any(upload.iterdir()) else "no files"
    assert step["shell"] == "bash"
    output, gh_path, script = runner.temp / "output", runner.temp / "path", runner.temp / "step.sh"
    output.write_text("")
    gh_path.write_text("")
    script.write_text(step["run"])
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "KUBECONFIG")}
    env |= {k: runner.expand(str(v)) for k, v in (step.get("env") or {}).items()}
    env |= {
        "PATH": os.pathsep.join([*runner.path, "/usr/bin", "/bin"]),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_PATH": str(gh_path),
        "RUNNER_TEMP": str(runner.temp),
    }
    done = subprocess.run(  # how a runner runs `shell: bash`
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
        check=False,
    )
    runner.log.append(
        f"--- {step['name']} (exit {done.returncode})\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    )
    if "id" in step:
        runner.steps[step["id"]] = dict(
            line.split("=", 1) for line in output.read_text().splitlines() if "=" in line
        )
    runner.path[:0] = [p for p in reversed(gh_path.read_text().splitlines()) if p]
    return "ok" if done.returncode == 0 else "failed"


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[Path]:
    cluster = LocalCluster(profile="dra-all", run_dir=tmp_path / "cluster")
    cluster.start()
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    try:
        install(kube, (StandinPoolSpec("big", 1, 8), StandinPoolSpec("small", 1, 4)), DRIVER)
        yield cluster.kubeconfig
    finally:
        kube.close()
        cluster.stop()


STEPS = ["Python", "Install dra-harness", "Kubeconfig", "Qualify", "Upload the report", "Verdict", "Clean up"]


def run_action(inputs: dict[str, str], temp: Path) -> tuple[Runner, list[tuple[str, str]]]:
    """Every step of action.yml in order; `temp` is RUNNER_TEMP (one job's: the venv stays)."""
    action = yaml.safe_load(ACTION.read_text())
    defaults = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    assert set(inputs) <= set(defaults), sorted(set(inputs) - set(defaults))
    shutil.rmtree(temp / "dra-harness-qualify", ignore_errors=True)
    runner = Runner({**defaults, **inputs}, temp, [])
    outcomes = []
    for step in action["runs"]["steps"]:
        outcome = run_step(runner, step)
        runner.ran.append(outcome)
        outcomes.append((step["name"], outcome))
    return runner, outcomes


# One test, one cluster and one venv (the install step is the slow one): a passing run with the
# kubeconfig given as content, then a run that cannot start with the kubeconfig given as a path.
def test_the_action_qualifies_uploads_and_cleans_up_and_a_run_that_cannot_start_is_error(
    standin: Path, tmp_path: Path
) -> None:
    temp = tmp_path / "runner"
    temp.mkdir()
    inputs = {
        "kubeconfig": standin.read_text(),
        "driver-name": DRIVER,
        "device-class": DRIVER,
        "extended-resource": "nvidia.com/gpu",
        "suites": "suites/driver",
        "artifact-name": "qualify-acme",
        # reach qualify's command; suites/driver runs no container (the stand-in's nodes are kwok's)
        "container-command": "env",
        "container-device-pattern": r"^GPU_DEVICE_\w+=(?P<device>gpu-[\w-]+)$",
        "plugin-restart-command": "kubectl delete pod -l app=plugin --field-selector spec.nodeName={node}",
    }

    # what a cancelled run would leave: a namespace labelled with this run's id
    with closing(Kube.from_kubeconfig(standin)) as kube:
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "left-behind", "labels": {RUN: "gha-4242-1"}},
            }
        )

    runner, outcomes = run_action(inputs, temp)

    assert [o for _, o in outcomes] == ["ok"] * 7, "\n".join(runner.log)
    assert [n for n, _ in outcomes] == STEPS
    action = yaml.safe_load(ACTION.read_text())
    outputs = {k: runner.expand(v["value"]) for k, v in action["outputs"].items()}
    assert outputs == {"verdict": "PASS", "report-path": str(temp / "dra-harness-qualify")}
    report = json.loads((temp / "dra-harness-qualify" / "qualify.json").read_text())
    assert report["totals"]["failed"] == report["totals"]["errors"] == 0
    assert report["command"].endswith(
        r" --container-command=env '--container-device-pattern=^GPU_DEVICE_\w+=(?P<device>gpu-[\w-]+)$' "
        "'--plugin-restart-command=kubectl delete pod -l app=plugin --field-selector spec.nodeName={node}'"
    ), report["command"]
    done = (temp / "dra-harness-qualify" / "done").read_text().strip()
    assert done.endswith("results.tar.gz")
    written = Path(runner.steps["kubeconfig"]["path"])
    assert written == temp / "dra-harness.kubeconfig"
    assert not written.exists()  # removed by the clean-up step
    with closing(Kube.from_kubeconfig(standin)) as kube:  # the clean-up step deleted it
        left = kube.list(*kinds.NAMESPACE, label_selector=f"{RUN}=gha-4242-1")
        phases = {n["metadata"]["name"]: n["status"]["phase"] for n in left}
        # the planted one and the suites' own (labelled with the run's id too): none left Active
        assert {name: p for name, p in phases.items() if p != "Terminating"} == {}

    given = tmp_path / "given.kubeconfig"
    shutil.copy(standin, given)
    given.chmod(stat.S_IRUSR | stat.S_IWUSR)
    inputs = {"kubeconfig": str(given), "driver-name": "gpu.absent.example", "device-class": "absent"}
    inputs["plugin-restart-command"] = "restart {host}"  # refused with one line before preflight

    runner, outcomes = run_action(inputs, temp)

    assert runner.steps["qualify"]["verdict"] == "ERROR"
    assert runner.steps["qualify"]["exit-code"] == "1"
    assert outcomes == list(zip(STEPS, ["ok", "ok", "ok", "ok", "no files", "failed", "ok"], strict=True)), (
        "\n".join(runner.log)
    )
    assert given.exists()  # a path given is the caller's: not removed
    [qualify] = [entry for entry in runner.log if entry.startswith("--- Qualify (exit 0)")]
    assert "dra-harness: --plugin-restart-command: '{host}': only {node} may be named ('host')\n" in qualify
