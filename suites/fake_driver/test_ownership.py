"""Issue 41: on a cluster where NVIDIA's real driver runs, its `gpu.nvidia.com` and
`mig.nvidia.com` DeviceClasses and `gpu.nvidia.com` ResourceSlices are not ours. The stand-in
(`python -m harness.qualify.standin up|down`), the session's driver install and teardown
(fixtures.driver), the fake driver's own `install` and its publisher leave them exactly as they
were; an install over them is refused with one line and changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from fake_driver.deviceclasses import render_device_classes
from fake_driver.ownership import OWNER_LABEL, OWNER_VALUE, RUN_ENV, RUN_LABEL
from fake_driver.personalities import get_personality
from fake_driver.publisher import Publisher
from fixtures.driver import DriverUnderTest, install_classes, remove_classes
from fixtures.fake_driver import GpuPoolSpec, fleet_of
from fixtures.nodes import MakePool
from harness.clusters.base import Cell, Cluster
from harness.core.versions import REPO_ROOT
from harness.kit import kinds
from harness.kit.kinds import RESOURCE_V1 as API
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created
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
        meta = kube.get(API, kind, name)["metadata"]
        spec = kube.get(API, kind, name)["spec"]
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


@pytest.mark.serial  # replaces the session's cluster-wide gpu.nvidia.com classes for its duration
def test_a_real_drivers_classes_and_slices_are_never_replaced_or_deleted(
    kube: Kube, cluster: Cluster, cell: Cell, driver: DriverUnderTest, node_pool: MakePool, objects: Created
) -> None:
    assert driver.personality is not None
    p = get_personality(driver.personality)
    kubeconfig = str(cluster.kubeconfig)
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

    up = _run(
        "harness.qualify.standin",
        "up",
        "--kubeconfig",
        kubeconfig,
        "--driver-name",
        "gpu.nvidia.com",
        "--pool",
        "own:1:2",
    )
    assert (up.returncode, up.stderr, up.stdout) == (1, f"dra-harness: {REFUSAL}\n", "")
    assert kube.list(*kinds.NODE, label_selector=STANDIN_LABEL) == []  # refused before any node
    down = _run(
        "harness.qualify.standin", "down", "--kubeconfig", kubeconfig, "--driver-name", "gpu.nvidia.com"
    )
    assert (down.returncode, down.stderr, down.stdout) == (
        0,
        "",
        "stand-in driver gpu.nvidia.com: removed 0 objects\n",
    )

    with pytest.raises(pytest.exit.Exception) as stopped:  # the session fixture's install
        install_classes(kube, p)
    assert (str(stopped.value), stopped.value.returncode) == (f"driver: {REFUSAL}", 1)
    installed = _run(
        "fake_driver",
        "install",
        "--personality",
        p.name,
        "--kubeconfig",
        kubeconfig,
        "--gpu-resources-enabled-override",
    )
    assert (installed.returncode, installed.stderr) == (1, f"fake_driver: error: {REFUSAL}\n")
    assert _nvidia_classes(kube) == classes  # no compute-domain or vfio class either
    assert remove_classes(kube, p) == []  # the session's teardown: none of them is ours

    # A run's publisher on the same node, same driver: publishes beside them, removes its own.
    pub = Publisher(
        kube.api_client, fleet_of([GpuPoolSpec(gpus=2, personality=p.name)], [[node]]), cell.minor
    )
    assert [r.action for r in pub.publish_all().results] == ["created"]
    assert [r.action for r in pub.sync().results] == ["unchanged"]
    assert pub.remove_all() == 1
    assert (_state(kube, "DeviceClass", classes), _state(kube, "ResourceSlice", slices)) == before

    # The stand-in still removes what it made, and only that; its objects carry the run's id.
    up = _run(
        "harness.qualify.standin",
        "up",
        "--kubeconfig",
        kubeconfig,
        "--driver-name",
        ACME,
        "--pool",
        "t:1:2",
        run_id="run-41",
    )
    assert (up.returncode, up.stderr, up.stdout) == (0, "", f"stand-in driver {ACME} on acme-t-0\n")
    objects.defer(
        "stand-in down",
        lambda: _run("harness.qualify.standin", "down", "--kubeconfig", kubeconfig, "--driver-name", ACME),
    )
    labels = kube.get(*kinds.DEVICE_CLASS, ACME)["metadata"]["labels"]
    assert labels == {OWNER_LABEL: OWNER_VALUE, RUN_LABEL: "run-41"}
    [acme_slice] = [s for s in kube.list(*kinds.RESOURCE_SLICE) if s["spec"]["driver"] == ACME]
    assert acme_slice["metadata"]["labels"] == {OWNER_LABEL: OWNER_VALUE, RUN_LABEL: "run-41"}
    assert kube.get(*kinds.NODE, "acme-t-0")["metadata"]["labels"][RUN_LABEL] == "run-41"
    down = _run("harness.qualify.standin", "down", "--kubeconfig", kubeconfig, "--driver-name", ACME)
    assert (down.returncode, down.stderr, down.stdout) == (
        0,
        "",
        f"stand-in driver {ACME}: removed 5 objects\n",
    )
    assert [s for s in kube.list(*kinds.RESOURCE_SLICE) if s["spec"]["driver"] == ACME] == []

    after = (_state(kube, "DeviceClass", classes), _state(kube, "ResourceSlice", slices))
    assert after == before
