"""`dra-harness qualify` as its in-cluster Job runs it: no kubeconfig, the pod's service account
(a token from a TokenRequest, the cluster's CA and namespace in a directory laid out like the
kubelet's mount, KUBERNETES_SERVICE_HOST/PORT), bound to exactly deploy/qualify/rbac.yaml's
ClusterRole; against the stand-in driver on a local cluster of its own. Then the Sonobuoy
contract: results in $SONOBUOY_RESULTS_DIR, `done` naming the tarball, progress POSTed.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from harness.core.versions import REPO_ROOT
from harness.kit import kinds
from harness.kit.incluster import SERVICE_ACCOUNT_DIR_ENV, in_cluster, write_kubeconfig
from harness.kit.kube import Kube, Obj
from harness.qualify.preflight import preflight
from harness.qualify.rbac import rbac_objects, rbac_rules
from harness.qualify.standin import StandinPoolSpec
from tests.e2e.standin_cluster import standin_cluster
from tests.support.sonobuoy_worker import progress_endpoint

DRIVER = "gpu.acme.example"
FLEET = (StandinPoolSpec("big", 1, 4), StandinPoolSpec("small", 1, 2))
# The suites that create the most kinds of object (claims, templates, classes, quotas, pods).
SUITES = ("suites/bridging", "suites/driver", "suites/failure_modes", "suites/shared_devices", "suites/gang")


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The admin kubeconfig of a cluster of our own with the stand-in driver installed."""
    with standin_cluster(tmp_path_factory.mktemp("incluster-cluster"), FLEET, DRIVER) as kubeconfig:
        yield kubeconfig


def pod_env(admin: Path, tmp_path: Path, name: str, rules: list[Obj]) -> dict[str, str]:
    """The environment of a pod whose ServiceAccount `name` (in namespace `name`) is bound to
    a ClusterRole of `rules`: its token mount in tmp_path, no kubeconfig anywhere."""
    objects = rbac_objects(name, name)
    objects[2]["rules"] = rules
    kube = Kube.from_kubeconfig(admin)
    try:
        for obj in objects:
            kube.create(obj)
        tokens = kube.resource(*kinds.SERVICE_ACCOUNT).subresources["token"]
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        created = tokens.create(body=request, name=name, namespace=name)  # type: ignore[no-untyped-call]
    finally:
        kube.close()
    cluster = yaml.safe_load(admin.read_text())["clusters"][0]["cluster"]
    mount = tmp_path / "serviceaccount"
    mount.mkdir()
    (mount / "token").write_text(created.to_dict()["status"]["token"])
    ca = cluster.get("certificate-authority-data")
    ca_pem = base64.b64decode(ca) if ca else (admin.parent / cluster["certificate-authority"]).read_bytes()
    (mount / "ca.crt").write_bytes(ca_pem)
    (mount / "namespace").write_text(name)
    server = urlsplit(cluster["server"])
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return env | {
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
        SERVICE_ACCOUNT_DIR_ENV: str(mount),
        "HOME": str(tmp_path / "home"),
    }


def qualify(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "harness.cli.main", "qualify", f"--driver-name={DRIVER}"]
    argv += [f"--device-class={DRIVER}", *args]
    return subprocess.run(
        argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_the_job_s_service_account_passes_preflight(standin: Path, tmp_path: Path) -> None:
    env = pod_env(standin, tmp_path, "qualify-exact", rbac_rules())
    creds = in_cluster(env)
    assert creds is not None
    kube = Kube.from_kubeconfig(write_kubeconfig(creds, tmp_path))
    try:
        facts, missing = preflight(kube, DRIVER, DRIVER)
    finally:
        kube.close()
    assert missing == []
    assert (facts.slices, facts.standin) == (2, True)


def test_a_service_account_missing_one_verb_is_named_and_exit_1(standin: Path, tmp_path: Path) -> None:
    rules = rbac_rules()
    [classes] = [r for r in rules if r.get("resources") == ["deviceclasses"]]
    classes["verbs"] = [v for v in classes["verbs"] if v != "delete"]
    env = pod_env(standin, tmp_path, "qualify-short", rules)

    done = qualify(env, f"--out={tmp_path / 'results'}", timeout=120)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "dra-harness: the kubeconfig's user may not delete deviceclasses.resource.k8s.io "
        "(the suites need to)\n"
    )
    assert not (tmp_path / "results").exists()


def test_the_sonobuoy_contract_done_file_tarball_and_progress(standin: Path, tmp_path: Path) -> None:
    """The whole run as the plugin's Job makes it: the exact role, no --out (Sonobuoy's results
    directory), progress posted to the worker's endpoint as tests finish."""
    results = tmp_path / "sonobuoy" / "results"
    results.mkdir(parents=True)
    with progress_endpoint() as (port, updates):
        env = pod_env(standin, tmp_path, "qualify-sonobuoy", rbac_rules())
        env |= {"SONOBUOY_RESULTS_DIR": str(results), "SONOBUOY_PROGRESS_PORT": str(port)}
        done = qualify(env, *(f"--suite={s}" for s in SUITES))

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "Sonobuoy progress not posted" not in done.stderr
    tarball = results / "results.tar.gz"
    assert (results / "done").read_text() == str(tarball.resolve())
    with tarfile.open(tarball) as tar:
        assert {"junit.xml", "qualify.json", "qualify.html", "summary.json"} <= set(tar.getnames())
    report = json.loads((results / "qualify.json").read_text())
    assert report["totals"]["failed"] == report["totals"]["errors"] == 0
    assert report["command"].startswith(f"dra-harness qualify --driver-name={DRIVER}"), (
        "no temporary kubeconfig"
    )
    total = updates[-1]["total"]
    assert total == sum(report["totals"].values()) > 0
    assert [u["completed"] for u in updates] == list(range(1, total + 1))
    assert {u["name"] for u in updates} == {"dra-qualify"}


def test_the_rbac_file_applies_and_the_server_accepts_the_job(standin: Path) -> None:
    """deploy/qualify/rbac.yaml created as is; the Job and its claim accepted (server-side dry
    run: the harness image is built for the kind path, not here)."""
    kube = Kube.from_kubeconfig(standin)
    try:
        for obj in yaml.safe_load_all((REPO_ROOT / "deploy" / "qualify" / "rbac.yaml").read_text()):
            kube.create(obj)
        answers = []
        for obj in yaml.safe_load_all((REPO_ROOT / "deploy" / "qualify" / "job.yaml").read_text()):
            group = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
            plural = {"Job": "jobs", "PersistentVolumeClaim": "persistentvolumeclaims"}[obj["kind"]]
            path = f"{group}/namespaces/{obj['metadata']['namespace']}/{plural}?dryRun=All"
            answers.append(kube.raw_post(path, obj))
    finally:
        kube.close()
    assert [(status, obj["kind"]) for status, obj in ((s, json.loads(b)) for s, b in answers)] == [
        (201, "PersistentVolumeClaim"),
        (201, "Job"),
    ]
