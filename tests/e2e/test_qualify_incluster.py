"""`dra-harness qualify` as its in-cluster Job runs it: no kubeconfig, the pod's service account
(a token from a TokenRequest, the cluster's CA and namespace in a directory laid out like the
kubelet's mount, KUBERNETES_SERVICE_HOST/PORT), bound to exactly deploy/qualify/rbac.yaml's
ClusterRole; against the stand-in driver on a local cluster of its own.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from harness.clusters.local.cluster import LocalCluster
from harness.core.versions import REPO_ROOT
from harness.kit import kinds
from harness.kit.incluster import SERVICE_ACCOUNT_DIR_ENV, in_cluster, write_kubeconfig
from harness.kit.kube import Kube, Obj
from harness.qualify.preflight import preflight
from harness.qualify.rbac import rbac_objects, rbac_rules
from harness.qualify.standin import StandinPoolSpec, install

DRIVER = "gpu.acme.example"
FLEET = (StandinPoolSpec("big", 1, 4), StandinPoolSpec("small", 1, 2))


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The admin kubeconfig of a cluster of our own with the stand-in driver installed."""
    cluster = LocalCluster(profile="dra-all", run_dir=tmp_path_factory.mktemp("incluster-cluster"))
    cluster.start()
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    try:
        install(kube, FLEET, DRIVER)
        yield cluster.kubeconfig
    finally:
        kube.close()
        cluster.stop()


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
