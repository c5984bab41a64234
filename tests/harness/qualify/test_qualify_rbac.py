"""qualify's in-cluster RBAC has one source: harness.qualify.rbac, whose rules are both the
Job's ClusterRole (deploy/qualify/rbac.yaml, kept equal here) and what preflight checks."""

from __future__ import annotations

import subprocess
import sys

import yaml

from harness.core.versions import REPO_ROOT
from harness.qualify import preflight
from harness.qualify.rbac import NAMESPACE, NEEDED_ACCESS, rbac_rules, rbac_yaml

FILE = REPO_ROOT / "deploy" / "qualify" / "rbac.yaml"


def test_the_rbac_file_is_the_rules_in_the_code() -> None:
    assert FILE.read_text() == rbac_yaml(), (
        "regenerate: dra-harness qualify --print-rbac > deploy/qualify/rbac.yaml"
    )
    docs = list(yaml.safe_load_all(FILE.read_text()))
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    assert docs[1]["metadata"]["namespace"] == NAMESPACE
    assert docs[2]["rules"] == rbac_rules()
    [subject] = docs[3]["subjects"]
    assert (subject["name"], subject["namespace"]) == (docs[1]["metadata"]["name"], NAMESPACE)


def test_preflight_checks_exactly_the_role_s_resource_rules() -> None:
    granted = {
        (verb, group, resource)
        for rule in rbac_rules()
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule["verbs"]
    }
    assert preflight.NEEDED_ACCESS is NEEDED_ACCESS  # type: ignore[attr-defined]
    assert set(NEEDED_ACCESS) == granted
    assert len(NEEDED_ACCESS) == len(granted), "no verb listed twice"
    assert not {v for v, _, _ in NEEDED_ACCESS} - {"get", "list", "watch", "create", "delete", "patch"}
    assert "*" not in yaml.safe_dump(rbac_rules()), "no wildcard"


def test_print_rbac_needs_no_cluster_nor_driver() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "qualify", "--print-rbac", "--kubeconfig=/nonexistent"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, rbac_yaml(), "")
