"""The in-cluster Job has one source (harness.qualify.job, deploy/qualify/job.yaml kept equal
here): the harness image never pulled, rbac.yaml's ServiceAccount, results on a volume, and
the same container the Sonobuoy plugin runs."""

from __future__ import annotations

import subprocess
import sys

import yaml

from harness.core.versions import REPO_ROOT
from harness.qualify.job import RESULTS_PATH, job_objects, job_yaml
from harness.qualify.rbac import rbac_objects
from harness.qualify.sonobuoy import plugin_manifest

FILE = REPO_ROOT / "deploy" / "qualify" / "job.yaml"


def test_the_job_file_is_the_job_in_the_code() -> None:
    assert FILE.read_text() == job_yaml(), (
        "regenerate: dra-harness qualify --print-job > deploy/qualify/job.yaml"
    )
    claim, job = yaml.safe_load_all(FILE.read_text())
    assert [claim, job] == job_objects()
    _, account, _, _ = rbac_objects()
    pod = job["spec"]["template"]["spec"]
    assert (pod["serviceAccountName"], job["metadata"]["namespace"]) == (
        account["metadata"]["name"],
        account["metadata"]["namespace"],
    )
    [container] = pod["containers"]
    assert container["imagePullPolicy"] == "Never"
    assert f"--out={RESULTS_PATH}" in container["args"]
    [mount] = container["volumeMounts"]
    [volume] = pod["volumes"]
    assert (mount["mountPath"], volume["persistentVolumeClaim"]["claimName"]) == (
        RESULTS_PATH,
        claim["metadata"]["name"],
    )
    assert job["spec"]["backoffLimit"] == 0


def test_the_plugin_runs_the_job_s_container() -> None:
    [container] = job_objects()[1]["spec"]["template"]["spec"]["containers"]
    spec = plugin_manifest()["spec"]
    assert spec["args"][:-1] == container["args"][:-1]
    assert (spec["image"], spec["command"], spec["env"]) == (
        container["image"],
        container["command"],
        container["env"],
    )


def test_print_job_needs_no_cluster() -> None:
    argv = [sys.executable, "-m", "harness.cli.main", "qualify", "--print-job"]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, job_yaml(), "")
