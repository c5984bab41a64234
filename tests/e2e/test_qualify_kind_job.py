"""`dra-harness qualify` as its in-cluster Job on a real kind cluster: the project's kind
provider (its own engine where no Docker answers), the stand-in vendor driver installed, the
harness image (`dra-harness kind images --harness`, never pulled) loaded into the worker,
deploy/qualify/rbac.yaml and job.yaml applied as they are but for the driver's name and class,
the Job waited to its end, then its results read back from the node and checked: `done` names
the tarball holding junit.xml, qualify.json, qualify.html and summary.json; the verdict.

The harness's kind nodes have no storage provisioner (docs/kind.md), so the job's claim is bound
to a hostPath PersistentVolume on the worker, made here: that also keeps the Job's pod off the
stand-in's kwok nodes, which run no containers. The results are read from that directory.

The harness image and this run (~4 min) do not fit `make test`'s budget: `make
test-kind-qualify` builds the images and runs it; elsewhere it skips naming that target.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness.clusters.kind import engine
from harness.clusters.kind.config import DEFAULT_POOLS
from harness.clusters.kind.engine import Engine
from harness.clusters.kind.images.harnessimage import HARNESS_IMAGE, built_harness_archive
from harness.clusters.kind.images.node import load_archive
from harness.clusters.kind.provider import KindProvider, docker_problem, find_binary
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT
from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.waits import wait_for
from harness.qualify.rbac import NAME, NAMESPACE
from harness.qualify.standin import StandinPoolSpec, install

pytestmark = [pytest.mark.own_target("test-kind-qualify"), pytest.mark.docker_engine]

TARGET = "make test-kind-qualify"
DRIVER = "gpu.acme.example"
FLEET = (StandinPoolSpec("big", 1, 4), StandinPoolSpec("small", 1, 2))
POOL = next(p for p in DEFAULT_POOLS if not p.device_plugin)  # one worker: the Job's node
RESULTS_DIR = "/var/lib/dra-harness-qualify"  # on the worker (the PersistentVolume's hostPath)
# The suites' run in the pod on 2 busy cores, with margin; the Job's own deadline is 3 h.
JOB_TIMEOUT = 1800.0
KUBECTL = str(Path(sys.executable).parent / "kubectl")


@pytest.fixture(scope="module")
def kind_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KindProvider]:
    """A kind cluster of one worker, the harness image loaded into it; deleted after."""
    if docker_problem() is not None and (why := engine.cannot_start()) is not None:
        pytest.skip(f"{why} ({TARGET})")
    try:
        kind = find_binary("kind", None, "DRA_HARNESS_KIND", TARGET)
    except HarnessError as err:
        pytest.skip(str(err))
    archive = built_harness_archive()
    if archive is None:
        pytest.skip(f"the harness image of this checkout is not built: {TARGET}")
    p = KindProvider(
        run_dir=tmp_path_factory.mktemp("kind"), name="dra-harness-test-qualify", kind_bin=kind, pools=(POOL,)
    )
    try:
        p.start()
    except HarnessError as err:
        if "is not built: make kind-images" in str(err):
            pytest.skip(f"{err} ({TARGET} builds it)")
        raise
    try:
        load_archive(p.engine or Engine(), archive)
        argv = [str(kind), "load", "docker-image", "--name", p.name, HARNESS_IMAGE]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        yield p
    finally:
        p.stop()


def worker(kube: Kube) -> str:
    [node] = kube.list(*kinds.NODE, label_selector=f"dra-harness.io/pool={POOL.name}")
    return str(node["metadata"]["name"])


def job_objects() -> list[Obj]:
    """deploy/qualify/job.yaml with the stand-in's driver name and class in the env."""
    objects = list(yaml.safe_load_all((REPO_ROOT / "deploy" / "qualify" / "job.yaml").read_text()))
    [job] = [o for o in objects if o["kind"] == "Job"]
    [container] = job["spec"]["template"]["spec"]["containers"]
    values = {"DRIVER_NAME": DRIVER, "DEVICE_CLASS": DRIVER}
    container["env"] = [e | {"value": values.get(e["name"], e["value"])} for e in container["env"]]
    return objects


def results_volume(claim: Obj, node: str) -> Obj:
    """A hostPath volume on `node` bound to the job's claim (of whatever class it was given)."""
    spec = claim["spec"]
    on_node = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"{NAME}-results"},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec["accessModes"],
            "storageClassName": spec.get("storageClassName") or "",
            "claimRef": {"namespace": NAMESPACE, "name": claim["metadata"]["name"]},
            "hostPath": {"path": RESULTS_DIR, "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [on_node]}]}},
        },
    }


@dataclass(frozen=True)
class JobState:
    """What the Job and its pod say: the wait's last observed state."""

    conditions: list[tuple[str, str, str | None]]  # type, status, reason
    pods: list[tuple[str, list[Obj]]]  # phase, container states
    times: tuple[str | None, str | None]  # started, completed

    @property
    def finished(self) -> bool:
        return any(t in ("Complete", "Failed") and s == "True" for t, s, _ in self.conditions)


def job_state(kube: Kube) -> JobState:
    status = kube.get(*kinds.JOB, NAME, NAMESPACE).get("status") or {}
    pods = kube.list(*kinds.POD, NAMESPACE, label_selector=f"app={NAME}")
    return JobState(
        conditions=[(c["type"], c["status"], c.get("reason")) for c in status.get("conditions") or []],
        pods=[
            (p["status"].get("phase"), [c.get("state") for c in p["status"].get("containerStatuses") or []])
            for p in pods
        ],
        times=(status.get("startTime"), status.get("completionTime")),
    )


def test_the_qualify_job_runs_in_the_cluster_and_leaves_its_results(
    kind_cluster: KindProvider, tmp_path: Path
) -> None:
    kube = Kube.from_kubeconfig(kind_cluster.kubeconfig)
    try:
        install(kube, FLEET, DRIVER)
        for obj in yaml.safe_load_all((REPO_ROOT / "deploy" / "qualify" / "rbac.yaml").read_text()):
            kube.create(obj)
        created = [kube.create(obj) for obj in job_objects()]
        node = worker(kube)  # kind's node and its container share the name
        kube.create(results_volume(created[0], node))
        started = time.monotonic()
        state = wait_for(
            lambda: job_state(kube),
            lambda s: s.finished,
            timeout=JOB_TIMEOUT,
            interval=5,
            describe="qualify Job ended",
        )
        print(f"qualify Job: {time.monotonic() - started:.0f}s from creation; {state.times}")
    finally:
        kube.close()
    logs = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kind_cluster.kubeconfig), "-n", NAMESPACE, "logs", f"job/{NAME}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    print(logs[-4000:])
    copy = subprocess.run(
        ["docker", "cp", f"{node}:{RESULTS_DIR}", str(tmp_path / "results")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert copy.returncode == 0, copy.stderr
    results = tmp_path / "results"

    assert ("Complete", "True") in [(t, s) for t, s, _ in state.conditions], logs[-3000:]  # exit 0
    tarball = "/results/results.tar.gz"  # as the pod saw it
    assert (results / "done").read_text() == tarball
    with tarfile.open(results / Path(tarball).name) as tar:
        assert {"junit.xml", "qualify.json", "qualify.html", "summary.json"} <= set(tar.getnames())
    report = json.loads((results / "qualify.json").read_text())
    assert report["totals"]["failed"] == report["totals"]["errors"] == 0
    assert report["totals"]["passed"] > 0
    assert report["command"].startswith(f"dra-harness qualify --driver-name={DRIVER}"), "in-cluster"
    assert f"results: {tarball}; exit 0" in logs
