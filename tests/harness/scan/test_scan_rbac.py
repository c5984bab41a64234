"""The scan's ClusterRole has one source: the rules in harness.scan.read; the file users
apply (deploy/scan/clusterrole.yaml) is generated from them and kept equal here."""

from __future__ import annotations

import subprocess
import sys

import yaml

from harness.core.versions import REPO_ROOT
from harness.scan.read import SCAN_RBAC_RULES, clusterrole_yaml

FILE = REPO_ROOT / "deploy" / "scan" / "clusterrole.yaml"


def test_the_clusterrole_file_is_the_rules_in_the_code() -> None:
    assert FILE.read_text() == clusterrole_yaml(), (
        "regenerate: dra-harness scan --print-clusterrole > deploy/scan/clusterrole.yaml"
    )
    role = yaml.safe_load(FILE.read_text())
    assert role["rules"] == SCAN_RBAC_RULES
    verbs = {v for rule in role["rules"] for v in rule["verbs"]}
    assert verbs == {"get", "list", "watch"}, "the scan is read-only"


def test_print_clusterrole_needs_no_cluster() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli.main",
            "scan",
            "--print-clusterrole",
            "--kubeconfig",
            "/nonexistent",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, clusterrole_yaml(), "")
