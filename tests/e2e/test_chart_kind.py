"""charts/dra-harness-fake-gpu installed with `helm install` on a real kind cluster of the project's
provider (its own engine where no Docker answers), the fake driver's image loaded but
deploy/manifests not applied (`driver_manifests=False`): the chart alone installs the driver, with
deploy/manifests.values.yaml (the kind workers' pools) plus the values for kind below.

On one release, in order: both DaemonSets roll out on exactly the workers they select; each
worker's slices are published by the kubelet plugin in its pod there; a claim pod (a
ResourceClaimTemplate on the chart's GPU class) and an unchanged nvidia.com/gpu pod (bridged) run
and see exactly their allocated GPU (the CDI spec's environment); `helm uninstall` leaves none of
the objects `helm get manifest` listed, and the kubelet then drops the slices. Times are printed.
Without helm (`make test-chart`), the engine or kind (`make kind-engine`) or the images (`make
kind-images`) the module skips with one line naming the target."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from fake_driver.kubeletplugin.cdi import VISIBLE_DEVICES_ENV
from fake_driver.publishing.legacy import LEGACY_RESOURCE
from harness.chart.generate import CHART, MANIFEST_VALUES
from harness.chart.helm import run_helm
from harness.clusters.kind import engine
from harness.clusters.kind.config import DEFAULT_POOLS
from harness.clusters.kind.provider import DRIVER_IMAGE, KindProvider, docker_problem, find_binary
from harness.core.errors import HarnessError
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.drastate import allocated_devices, claims_of, devices_per_node, node_slices
from harness.kit.kube import Kube, NotFoundError
from harness.kit.nodepods import container_env, device_env, env_pod
from harness.kit.objects import Cleanup
from harness.kit.pods import pod_story, wait_phase
from harness.kit.waits import TIMEOUTS, wait_for
from tests.support.helmtool import built_helm
from tests.support.kindchart import (
    DEVICE_PLUGIN,
    DRA_POOL,
    DRIVER,
    GPU_CLASS,
    GPUS,
    HELM_WAIT,
    KIND_VALUES,
    KUBELET_PLUGIN,
    LEGACY_POOL,
    NAMESPACE,
    NAMESPACE_GONE_TIMEOUT,
    POD_TIMEOUT,
    RELEASE,
    SLICES_GONE_TIMEOUT,
    TARGET,
    expected_env,
    plugin_log,
    plugin_pods,
    wait_published,
    wait_registered,
    wait_rolled_out,
    worker,
    workers,
)

pytestmark = [pytest.mark.own_target("test-chart"), pytest.mark.docker_engine]


@pytest.fixture(scope="module")
def helm() -> Path:
    return built_helm()


@pytest.fixture(scope="module")
def kind_cluster(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KindProvider]:
    """Two workers (DEFAULT_POOLS), the driver image loaded, no driver deployed; deleted after.
    Asks for helm first: without it the module skips before a cluster starts."""
    ours = docker_problem() is not None
    if ours and (why := engine.cannot_start()) is not None:
        pytest.skip(f"{why} (make kind-engine, then {TARGET})")
    try:
        kind = find_binary("kind", None, "DRA_HARNESS_KIND", f"make kind-engine, then {TARGET}")
    except HarnessError as err:
        pytest.skip(str(err))
    if not ours and engine.docker("image", "inspect", DRIVER_IMAGE).returncode != 0:
        pytest.skip(f"no {DRIVER_IMAGE} on this Docker: build it (docs/kind.md, step 2), then {TARGET}")
    p = KindProvider(
        run_dir=tmp_path_factory.mktemp("kind"),
        name="dra-harness-test-chart",
        kind_bin=kind,
        driver_image=DRIVER_IMAGE,
        driver_manifests=False,
        kwok=False,
    )
    try:
        p.start()  # stops what it started if it fails
    except HarnessError as err:
        if "is not built: make kind-images" in str(err):
            pytest.skip(f"{err} (then {TARGET})")
        raise
    try:
        yield p
    finally:
        p.stop()


@dataclass
class Release:
    """The chart installed on the kind cluster, and the times since `helm install` started."""

    kube: Kube
    kubeconfig: Path
    binary: Path
    started: float = field(default_factory=time.monotonic)
    objects: list[tuple[str, str, str, str]] = field(default_factory=list)  # from helm get manifest
    pods: dict[str, dict[str, str]] = field(default_factory=dict)  # daemon set -> node -> state
    times: dict[str, float] = field(default_factory=dict)
    uninstalled: bool = False

    def helm(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_helm(list(args), kubeconfig=self.kubeconfig, helm=self.binary)

    def mark(self, what: str) -> None:
        self.times[what] = time.monotonic() - self.started
        print(f"{what}: {self.times[what]:.1f}s after helm install started")

    def uninstall(self) -> subprocess.CompletedProcess[str]:
        self.uninstalled = True
        return self.helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout", HELM_WAIT)


@pytest.fixture(scope="module")
def release(
    kind_cluster: KindProvider, helm: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Release]:
    """`helm install` with the values for kind, then both DaemonSets rolled out; uninstalled
    (if a test has not) and its namespace deleted after, pass or fail."""
    values = tmp_path_factory.mktemp("chart-kind") / "kind.values.yaml"
    values.write_text(yaml.safe_dump(KIND_VALUES))
    kube = Kube.from_kubeconfig(kind_cluster.kubeconfig)
    rel = Release(kube, kind_cluster.kubeconfig, helm)
    undo = Cleanup()  # newest first: uninstall, then the namespace helm created, then the client
    undo.defer("close the client", kube.close)
    undo.defer(f"delete namespace {NAMESPACE}", lambda: kube.delete(*kinds.NAMESPACE, NAMESPACE))
    undo.defer("helm uninstall", lambda: rel.uninstalled or _uninstalled(rel))
    try:
        done = rel.helm(
            "install", RELEASE, str(CHART), "-n", NAMESPACE, "--create-namespace",
            "--values", str(MANIFEST_VALUES), "--values", str(values),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        rel.mark("helm install returned")
        rel.objects = release_objects(rel)
        rel.pods = wait_rolled_out(kube, workers(kube))
        rel.mark("both DaemonSets rolled out")
        yield rel
    finally:
        undo.cleanup()
    print("times after helm install started: " + ", ".join(f"{k} {v:.1f}s" for k, v in rel.times.items()))


def _uninstalled(rel: Release) -> bool:
    """Teardown's uninstall: a release that never got installed is not an error here."""
    done = rel.helm(
        "uninstall", RELEASE, "-n", NAMESPACE, "--ignore-not-found", "--wait", "--timeout", HELM_WAIT
    )
    if done.returncode != 0:
        raise HarnessError(f"helm uninstall {RELEASE}: {done.stderr.strip()}")
    return True


@pytest.fixture
def pods_ns(release: Release) -> Iterator[str]:
    """A namespace for a test's pods, deleted (and waited gone) before the next test: a claim pod
    left running would outlive the plugin at uninstall, which must unprepare its claim."""
    kube, name = release.kube, f"chart-kind-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        kube.delete(*kinds.NAMESPACE, name)
        wait_for(
            lambda: status_or_gone(kube, (*kinds.NAMESPACE, "", name)),
            lambda status: status == "gone",
            timeout=NAMESPACE_GONE_TIMEOUT,
            describe=f"namespace {name} gone (its pods stopped, their claims unprepared)",
        )


def status_or_gone(kube: Kube, obj: tuple[str, str, str, str]) -> object:
    """The status of (apiVersion, kind, namespace, name), or "gone"."""
    try:
        return kube.get(obj[0], obj[1], obj[3], obj[2] or None).get("status") or {}
    except NotFoundError:
        return "gone"


def release_objects(rel: Release) -> list[tuple[str, str, str, str]]:
    """(apiVersion, kind, namespace, name) of every object `helm get manifest` lists."""
    done = rel.helm("get", "manifest", RELEASE, "-n", NAMESPACE)
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    return [
        (d["apiVersion"], d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs
    ]


def test_the_plugins_roll_out_on_the_workers_and_each_publishes_its_nodes_slices(release: Release) -> None:
    kube, nodes = release.kube, workers(release.kube)
    assert sorted(nodes.values()) == sorted(p.name for p in DEFAULT_POOLS)
    assert release.pods[KUBELET_PLUGIN] == dict.fromkeys(nodes, "Running, ready")
    assert release.pods[DEVICE_PLUGIN] == {worker(kube, LEGACY_POOL): "Running, ready"}

    # The plugin publishes after it starts; its kubelet's registration is not waited for.
    for node, pool in nodes.items():
        devices = wait_published(kube, node, GPUS[pool])
        assert len(set(devices.values())) == GPUS[pool], devices
        owners = {
            (o["kind"], o["name"])
            for s in node_slices(kube, node, DRIVER)
            for o in s["metadata"]["ownerReferences"]
        }
        assert owners == {("Node", node)}
        assert any(
            line.startswith(f"{node}\t") and "slices=" in line for line in plugin_log(kube, node).splitlines()
        )
    assert devices_per_node(kube, DRIVER) == {n: GPUS[p] for n, p in nodes.items()}
    release.mark("every worker's slices published")
    # A claim pod's Prepare before that fails ("DRA driver ... is not registered") and is retried
    # only after the kubelet's backoff (~80 s seen here).
    for node in nodes:
        wait_registered(kube, node)
    release.mark("every worker's plugin registered with its kubelet")


def test_a_pod_with_a_claim_on_the_charts_gpu_class_runs_and_sees_exactly_its_gpu(
    release: Release, pods_ns: str
) -> None:
    kube, ns, node = release.kube, pods_ns, worker(release.kube, DRA_POOL)
    kube.create(b.claim_template("one", ns, [b.exact_request("gpu", GPU_CLASS)]))
    kube.create(env_pod("claimed", ns, DRIVER_IMAGE, node, claim_templates={"gpu": "one"}))

    pod = wait_phase(kube, ns, "claimed", "Running", timeout=POD_TIMEOUT)
    release.mark("claim pod Running")
    print(pod_story(pod, kube.events(ns, "claimed")))  # the first pod's start: what it waited on

    [claim] = claims_of(kube, ns, "claimed")
    assert [r["driver"] for r in allocated_devices(claim)] == [DRIVER]
    env = device_env(container_env(kube, ns, "claimed"))
    assert env == expected_env(kube, node, claim)
    assert env[VISIBLE_DEVICES_ENV].startswith("GPU-"), env


def test_an_unchanged_nvidia_gpu_pod_is_bridged_to_a_claim_and_sees_exactly_its_gpu(
    release: Release, kind_cluster: KindProvider, pods_ns: str
) -> None:
    if kind_cluster.cell().gate("DRAExtendedResource") is not True:
        pytest.skip(
            f"DRAExtendedResource is off in {kind_cluster.cell().id}: nothing bridges {LEGACY_RESOURCE}"
        )
    kube, ns, node = release.kube, pods_ns, worker(release.kube, DRA_POOL)
    classes = {o[3] for o in release.objects if o[1] == "DeviceClass"}
    assert GPU_CLASS in classes
    assert kube.get(*kinds.DEVICE_CLASS, GPU_CLASS)["spec"]["extendedResourceName"] == LEGACY_RESOURCE
    kube.create(env_pod("bridged", ns, DRIVER_IMAGE, node, limits={LEGACY_RESOURCE: "1"}))

    pod = wait_phase(kube, ns, "bridged", "Running", timeout=POD_TIMEOUT)
    release.mark("bridged pod Running")

    [claim] = claims_of(kube, ns, "bridged")  # the scheduler's claim for the extended resource
    assert pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == claim["metadata"]["name"]
    assert [r["driver"] for r in allocated_devices(claim)] == [DRIVER]
    assert device_env(container_env(kube, ns, "bridged")) == expected_env(kube, node, claim)


def test_helm_uninstall_leaves_no_object_the_chart_made(release: Release) -> None:
    kube, objects = release.kube, release_objects(release)
    assert objects == release.objects
    assert {o[1] for o in objects} >= {"DaemonSet", "DeviceClass", "ConfigMap", "ClusterRole"}

    done = release.uninstall()

    assert done.returncode == 0, done.stderr
    release.mark("helm uninstall returned")
    left = wait_for(
        lambda: [o for o in objects if status_or_gone(kube, o) != "gone"] + plugin_pods(kube),
        lambda found: found == [],
        timeout=TIMEOUTS.deletion,
        describe="the release's objects and the plugins' pods gone",
    )
    assert left == []
    assert kube.list(*kinds.SECRET, NAMESPACE, label_selector="owner=helm") == []
    assert release.helm("list", "-A", "-q").stdout == ""
    # The slices are the plugin's, not the chart's: the kubelet drops them once it is gone.
    wait_for(
        lambda: devices_per_node(kube, DRIVER),
        lambda found: found == {},
        timeout=SLICES_GONE_TIMEOUT,
        describe=f"no {DRIVER} slices left after the plugin is gone",
    )
    release.mark("the plugin's slices gone")
