"""action.yml's Qualify step turns qualify's exit code into the `verdict` output with the
words of harness.reports.verdicts: run as bash with a stand-in `dra-harness` that exits with
each code (no cluster; tests/e2e/test_action.py runs every step against one)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.core.versions import REPO_ROOT
from harness.qualify.report import EXIT_CODES


def _qualify_step() -> str:
    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    [step] = [s for s in action["runs"]["steps"] if s.get("id") == "qualify"]
    return str(step["run"])


@pytest.mark.parametrize(("code", "word"), [*((c, str(w)) for w, c in EXIT_CODES.items()), (2, "ERROR")])
def test_each_exit_code_is_its_verdict_word(tmp_path: Path, code: int, word: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dra-harness"
    fake.write_text(f"#!/bin/sh\nexit {code}\n")
    fake.chmod(0o755)
    output = tmp_path / "output"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output),
        "KUBECONFIG_PATH": str(tmp_path / "k"),
        "DRIVER_NAME": "gpu.acme.example",
        "DEVICE_CLASS": "gpu.acme.example",
        "OUT": str(tmp_path / "out"),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", _qualify_step()], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert output.read_text().splitlines()[0] == f"verdict={word}"
    assert done.stdout == f"dra-harness qualify: {word} (exit {code}), report in {tmp_path / 'out'}\n"
