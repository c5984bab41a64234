"""Issue 41: on a cluster where NVIDIA's real driver runs, its `gpu.nvidia.com` and
`mig.nvidia.com` DeviceClasses and `gpu.nvidia.com` ResourceSlices are not ours. The stand-in
(`python -m harness.qualify.standin up|down`), the session's driver install and teardown
(fixtures.driver), the fake driver's own `install` and its publisher leave them exactly as they
were; an install over them is refused with one line and changes nothing."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from fake_driver.api.ownership import OWNER_LABEL, OWNER_VALUE, RUN_ENV, RUN_LABEL
from fake_driver.facts.personalities import Personality, get_personality
from fake_driver.publishing.publisher import Publisher
from fake_driver.rendering.deviceclasses import render_device_classes
from fixtures.driver import DriverUnderTest, install_classes, remove_classes
from fixtures.fake_driver import GpuPoolSpec, fleet_of
from fixtures.nodes import MakePool
from harness.clusters.base import Cell, Cluster
from harness.core.versions import REPO_ROOT
from harness.kit import kinds
from harness.kit.kinds import RESOURCE_V1 as API
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created
from harness.kit.waits import TIMEOUTS, wait_for
from harness.qualify.standin import STANDIN_LABEL

pytestmark = [pytest.mark.fake_driver_only("installs the fake driver over a real driver's objects")]

HELM = {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "nvidia-dra-driver-gpu"}
REFUSAL = (
    "refusing to install: DeviceClass gpu.nvidia.com exists and was not created by dra-harness "
    "(no label dra-harness.io/managed-by=dra-harness); nothing was changed"
)
ACME = "gpu.acme.example"


def _real_class(name: str, kind: str) -> Obj:
    expression = f"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{kind}'"
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": dict(HELM)},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _real_slice(node: str, i: int) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu.nvidia.com-real-{i}", "labels": dict(HELM)},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "pool": {"name": f"real-{node}", "generation": 1, "resourceSliceCount": 2},
            "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}}],
        },
    }


def _state(kube: Kube, kind: str, names: list[str]) -> dict[str, tuple[Any, ...]]:
    """What must not change: uid, resourceVersion, labels, annotations and spec, per name."""
    out = {}
    for name in names:
        obj = kube.get(API, kind, name)
        meta, spec = obj["metadata"], obj["spec"]
        out[name] = (meta["uid"], meta["resourceVersion"], meta.get("labels"), meta.get("annotations"), spec)
    return out


def _nvidia_classes(kube: Kube) -> list[str]:
    return sorted(
        c["metadata"]["name"] for c in kube.list(*kinds.DEVICE_CLASS) if "nvidia.com" in c["metadata"]["name"]
    )


def _run(module: str, *args: str, run_id: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != RUN_ENV} | ({RUN_ENV: run_id} if run_id else {})
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@dataclass(frozen=True)
class RealDriver:
    """gpu.nvidia.com's classes and two slices on `node`, as its Helm chart leaves them, with
    their state before the test (the session's own classes removed meanwhile)."""

    kube: Kube
    kubeconfig: str
    personality: Personality
    node: str
    classes: list[str]
    slices: list[str]
    before: tuple[dict[str, tuple[Any, ...]], dict[str, tuple[Any, ...]]]

    def state(self) -> tuple[dict[str, tuple[Any, ...]], dict[str, tuple[Any, ...]]]:
        return _state(self.kube, "DeviceClass", self.classes), _state(self.kube, "ResourceSlice", self.slices)


@pytest.fixture
def real_driver(
    kube: Kube, cluster: Cluster, driver: DriverUnderTest, node_pool: MakePool, objects: Created
) -> RealDriver:
    assert driver.personality is not None
    p = get_personality(driver.personality)
    # The session's own classes go (the teardown path: ours only) and come back at the end.
    assert remove_classes(kube, p) == [dc["metadata"]["name"] for dc in render_device_classes(p)]
    objects.defer("reinstall the session's classes", lambda: install_classes(kube, p))
    [node] = node_pool(1, suffix="real").node_names()
    for body in (_real_class("gpu.nvidia.com", "gpu"), _real_class("mig.nvidia.com", "mig")):
        objects.create(body)
    for i in range(2):
        objects.create(_real_slice(node, i))
    classes, slices = (
        ["gpu.nvidia.com", "mig.nvidia.com"],
        [f"{node}-gpu.nvidia.com-real-{i}" for i in range(2)],
    )
    before = (_state(kube, "DeviceClass", classes), _state(kube, "ResourceSlice", slices))
    return RealDriver(kube, str(cluster.kubeconfig), p, node, classes, slices, before)


def _standin(*args: str, run_id: str = "") -> subprocess.CompletedProcess[str]:
    return _run("harness.qualify.standin", *args, run_id=run_id)


@pytest.mark.serial  # replaces the session's cluster-wide gpu.nvidia.com classes for its duration
def test_the_standin_over_a_real_drivers_class_is_refused_before_any_node(real_driver: RealDriver) -> None:
    r = real_driver
    up = _standin("up", "--kubeconfig", r.kubeconfig, "--driver-name", "gpu.nvidia.com", "--pool", "own:1:2")
    assert (up.returncode, up.stderr, up.stdout) == (1, f"dra-harness: {REFUSAL}\n", "")
    assert r.kube.list(*kinds.NODE, label_selector=STANDIN_LABEL) == []
    down = _standin("down", "--kubeconfig", r.kubeconfig, "--driver-name", "gpu.nvidia.com")
    assert (down.returncode, down.stderr, down.stdout) == (
        0,
        "",
        "stand-in driver gpu.nvidia.com: removed 0 objects\n",
    )
    assert r.state() == r.before


@pytest.mark.serial
def test_installs_over_a_real_drivers_classes_are_refused_and_teardown_removes_none(
    real_driver: RealDriver,
) -> None:
    r, p = real_driver, real_driver.personality
    with pytest.raises(pytest.exit.Exception) as stopped:  # the session fixture's install
        install_classes(r.kube, p)
    assert (str(stopped.value), stopped.value.returncode) == (f"driver: {REFUSAL}", 1)
    installed = _run(
        "fake_driver", "install", "--personality", p.name, "--kubeconfig", r.kubeconfig,
        "--gpu-resources-enabled-override",
    )  # fmt: skip
    assert (installed.returncode, installed.stderr) == (1, f"fake_driver: error: {REFUSAL}\n")
    assert _nvidia_classes(r.kube) == r.classes  # no compute-domain or vfio class either
    assert remove_classes(r.kube, p) == []  # the session's teardown: none of them is ours
    assert r.state() == r.before


@pytest.mark.serial
def test_a_publisher_beside_a_real_driver_on_its_node_removes_only_its_own_slices(
    real_driver: RealDriver, cell: Cell
) -> None:
    r = real_driver
    fleet = fleet_of([GpuPoolSpec(gpus=2, personality=r.personality.name)], [[r.node]])
    pub = Publisher(r.kube.api_client, fleet, cell.minor)
    assert [x.action for x in pub.publish_all().results] == ["created"]
    assert [x.action for x in pub.sync().results] == ["unchanged"]
    assert pub.remove_all() == 1
    assert r.state() == r.before


@pytest.mark.serial
def test_the_standin_labels_what_it_makes_with_the_run_and_removes_only_that(
    real_driver: RealDriver, objects: Created
) -> None:
    r = real_driver
    up = _standin(
        "up", "--kubeconfig", r.kubeconfig, "--driver-name", ACME, "--pool", "t:1:2", run_id="run-41"
    )
    assert (up.returncode, up.stderr, up.stdout) == (0, "", f"stand-in driver {ACME} on acme-t-0\n")
    objects.defer(
        "stand-in down", lambda: _standin("down", "--kubeconfig", r.kubeconfig, "--driver-name", ACME)
    )
    run_labels = {OWNER_LABEL: OWNER_VALUE, RUN_LABEL: "run-41"}
    assert r.kube.get(*kinds.DEVICE_CLASS, ACME)["metadata"]["labels"] == run_labels
    [acme_slice] = [s for s in r.kube.list(*kinds.RESOURCE_SLICE) if s["spec"]["driver"] == ACME]
    assert acme_slice["metadata"]["labels"] == run_labels
    assert r.kube.get(*kinds.NODE, "acme-t-0")["metadata"]["labels"][RUN_LABEL] == "run-41"
    down = _standin("down", "--kubeconfig", r.kubeconfig, "--driver-name", ACME)
    assert (down.returncode, down.stderr, down.stdout) == (
        0,
        "",
        f"stand-in driver {ACME}: removed 5 objects\n",
    )
    assert [s for s in r.kube.list(*kinds.RESOURCE_SLICE) if s["spec"]["driver"] == ACME] == []
    assert r.state() == r.before


def _reap(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.communicate(timeout=30)


@pytest.mark.serial
def test_an_interrupted_standin_up_leaves_only_its_own_objects_and_down_removes_them(
    real_driver: RealDriver, objects: Created
) -> None:
    r = real_driver
    argv = ["up", "--kubeconfig", r.kubeconfig, "--driver-name", ACME, "--pool", "i:100:2"]
    env = {k: v for k, v in os.environ.items() if k != RUN_ENV}
    up = subprocess.Popen(
        [sys.executable, "-m", "harness.qualify.standin", *argv],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    objects.defer(
        "stand-in down", lambda: _standin("down", "--kubeconfig", r.kubeconfig, "--driver-name", ACME)
    )
    objects.defer("stand-in up gone", partial(_reap, up))
    wait_for(
        lambda: r.kube.list(*kinds.NODE, label_selector=f"{STANDIN_LABEL}={ACME}"),
        timeout=TIMEOUTS.api_object,
        describe="the stand-in's first node of 100",
    )
    up.send_signal(signal.SIGINT)  # mid-way: 100 kwok nodes Ready, then 100 slices, take seconds
    out, err = up.communicate(timeout=60)
    assert (up.returncode, err, out) == (128 + signal.SIGINT, "dra-harness: interrupted\n", "")
    left = r.kube.list(*kinds.NODE, label_selector=f"{STANDIN_LABEL}={ACME}")
    assert left != []
    assert all(n["metadata"]["labels"][OWNER_LABEL] == OWNER_VALUE for n in left)

    down = _standin("down", "--kubeconfig", r.kubeconfig, "--driver-name", ACME)

    assert (down.returncode, down.stderr) == (0, "")
    assert re.fullmatch(rf"stand-in driver {re.escape(ACME)}: removed \d+ objects\n", down.stdout)
    assert r.kube.list(*kinds.NODE, label_selector=f"{STANDIN_LABEL}={ACME}") == []
    assert [s for s in r.kube.list(*kinds.RESOURCE_SLICE) if s["spec"]["driver"] == ACME] == []
    assert r.state() == r.before
