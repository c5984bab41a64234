"""charts/dra-harness-fake-gpu installed with helm on a local cluster of our own with a kwok
fleet: the chart's objects are created, the fleet's nodes (from the chart's fleet ConfigMap) get
the chart's personality's slices, an unchanged nvidia.com/gpu pod is bridged to a claim and
runs, and `helm uninstall` leaves none of the release's objects. Values that contradict are
refused at `helm install` with one line, nothing applied.

kwok nodes run no containers, so the DaemonSets stay off them (their affinity says so) and the
fake driver's publisher plays the kubelet plugins, from the fleet the chart installed: the same
split as `dra-harness cluster up`."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_driver.fleetspec.fleet import load_fleet
from fake_driver.publishing.publisher import Publisher
from harness.chart.generate import CHART
from harness.chart.helm import run_helm
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.named.gpufleet import create_fleet_nodes
from harness.clusters.nodes import POOL_LABEL
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube, NotFoundError
from harness.kit.pods import wait_phase
from harness.kit.waits import TIMEOUTS, wait_for
from tests.support.helmtool import built_helm

pytestmark = [pytest.mark.own_target("test-chart")]

RELEASE, NAMESPACE = "fake-gpu", "fake-gpu"
FAILED = re.compile(
    r"Error: INSTALLATION FAILED: execution error at "
    r"\(dra-harness-fake-gpu/templates/validate\.yaml:\d+:\d+\): (.*)"
)
VALUES = {
    "personality": "nvidia-v25.12",
    "deviceClass": {"extendedResourceName": "nvidia.com/gpu"},
    "fleet": {
        "pools": [
            {"name": "h100", "count": 2, "profile": "h100-80gb-hbm3", "gpus": 4},
            {
                "name": "a100-mig",
                "count": 1,
                "profile": "a100-80gb-pcie",
                "gpus": 2,
                "mig": {"mode": "static", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]},
            },
            {
                "name": "legacy",
                "count": 1,
                "profile": "h100-80gb-hbm3",
                "gpus": 8,
                "device_plugin": True,
                "dra": False,
            },
        ]
    },
}


@pytest.fixture(scope="module")
def cluster(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Asks for helm first: without it the tests skip before a cluster starts."""
    local = LocalCluster(profile="dra-all", run_dir=tmp_path_factory.mktemp("chart-cluster"))
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def helm() -> Path:
    return built_helm()


def helm_install(helm: Path, cluster: LocalCluster, values: Path, namespace: str = NAMESPACE) -> Any:
    args = ["install", RELEASE, str(CHART), "-n", namespace, "--create-namespace", "--values", str(values)]
    return run_helm([*args, "--wait", "--timeout", "120s"], kubeconfig=cluster.kubeconfig, helm=helm)


def release_objects(helm: Path, cluster: LocalCluster) -> list[tuple[str, str, str, str]]:
    """(apiVersion, kind, namespace, name) of every object `helm get manifest` lists."""
    done = run_helm(["get", "manifest", RELEASE, "-n", NAMESPACE], kubeconfig=cluster.kubeconfig, helm=helm)
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    return [
        (d["apiVersion"], d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs
    ]


def gone(kube: Kube, obj: tuple[str, str, str, str]) -> bool:
    try:
        kube.get(obj[0], obj[1], obj[3], obj[2] or None)
    except NotFoundError:
        return True
    return False


def test_install_publishes_the_fleet_runs_a_bridged_pod_and_uninstall_leaves_nothing(
    cluster: LocalCluster, helm: Path, tmp_path: Path
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(VALUES))
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    start = time.monotonic()
    done = helm_install(helm, cluster, values)
    assert done.returncode == 0, done.stderr
    installed_s = time.monotonic() - start

    objects = release_objects(helm, cluster)
    assert sorted(o[1] for o in objects).count("DeviceClass") == 5
    classes = {
        o[3]: kube.get(o[0], o[1], o[3])["spec"].get("extendedResourceName")
        for o in objects
        if o[1] == "DeviceClass"
    }
    assert classes["gpu.nvidia.com"] == "nvidia.com/gpu"
    for ds in ("fake-driver-kubelet-plugin", "fake-driver-device-plugin"):  # kwok nodes run no plugin
        assert kube.get(*kinds.DAEMON_SET, ds, NAMESPACE)["status"]["desiredNumberScheduled"] == 0

    # The fleet as the chart installed it; kwok nodes for its pools; the publisher plays the plugins.
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(kube.get(*kinds.CONFIG_MAP, "fake-driver-fleet", NAMESPACE)["data"]["fleet.yaml"])
    fleet = load_fleet(fleet_file)
    create_fleet_nodes(kube, fleet)
    publisher = Publisher(kube.api_client, fleet, cluster.minor.name)
    try:
        publisher.publish_all()
        devices = wait_for(
            lambda: _devices_per_node(kube),
            lambda seen: len(seen) == 3,
            timeout=TIMEOUTS.api_object,
            describe="slices of the chart's 3 DRA nodes",
        )
        assert devices == {"h100-0": 4, "h100-1": 4, "a100-mig-0": 8}  # static MIG: 4 per GPU, parents hidden
        slices_s = time.monotonic() - start

        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "chart-pods"}})
        kube.create(
            b.legacy_pod("legacy-gpu", "chart-pods", "nvidia.com/gpu", 2, node_selector={POOL_LABEL: "h100"})
        )
        pod = wait_phase(kube, "chart-pods", "legacy-gpu", "Running")
        claim = pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
        allocation = kube.get(*kinds.RESOURCE_CLAIM, claim, "chart-pods")["status"]["allocation"]
        assert [r["driver"] for r in allocation["devices"]["results"]] == ["gpu.nvidia.com"] * 2
        running_s = time.monotonic() - start
        kube.delete(*kinds.NAMESPACE, "chart-pods")
    finally:
        publisher.remove_all()
    print(f"helm install {installed_s:.1f}s, slices {slices_s:.1f}s, bridged pod Running {running_s:.1f}s")

    done = run_helm(
        ["uninstall", RELEASE, "-n", NAMESPACE, "--wait"], kubeconfig=cluster.kubeconfig, helm=helm
    )
    assert done.returncode == 0, done.stderr
    assert [o for o in objects if not gone(kube, o)] == []
    assert kube.list(*kinds.SECRET, namespace=NAMESPACE, label_selector="owner=helm") == []
    kube.delete(*kinds.NAMESPACE, NAMESPACE)
    for node in fleet.node_names:
        kube.delete(*kinds.NODE, node)
    kube.close()


def _devices_per_node(kube: Kube) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in kube.list(*kinds.RESOURCE_SLICE):
        out[s["spec"]["nodeName"]] = out.get(s["spec"]["nodeName"], 0) + len(s["spec"].get("devices") or [])
    return out


@pytest.mark.parametrize(
    ("override", "namespace", "line"),
    [
        (
            {
                "fleet": {
                    "pools": [
                        {
                            "name": "l4",
                            "count": 1,
                            "profile": "l4",
                            "gpus": 1,
                            "mig": {"mode": "static", "layout": ["1g.10gb"]},
                        }
                    ]
                }
            },
            NAMESPACE,
            "fleet pool l4: GPU l4 has no MIG, so it cannot have a MIG layout (MIG GPUs: a100-40gb, "
            "a100-80gb-pcie, b200, h100-80gb-hbm3, h200-141gb-hbm3e)",
        ),
        (
            {"personality": "nvidia-v99"},
            NAMESPACE,
            "- at '/personality': value must be one of 'nvidia-v25.3', 'nvidia-v25.8', 'nvidia-v25.12', "
            "'nvidia-v0.4', 'example-v0.4'",
        ),
        (
            {},
            "default",
            "refusing to install into the default namespace: use --namespace (or namespaceOverride), "
            "or set allowDefaultNamespace=true",
        ),
    ],
    ids=["mig-on-l4", "unknown-personality", "default-namespace"],
)
def test_contradicting_values_fail_the_install_with_one_line_and_nothing_applied(
    cluster: LocalCluster, helm: Path, tmp_path: Path, override: dict[str, Any], namespace: str, line: str
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(override))
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    before = {d["metadata"]["name"] for d in kube.list(*kinds.DEVICE_CLASS)}

    done = helm_install(helm, cluster, values, namespace)

    assert done.returncode == 1
    lines = done.stderr.splitlines()
    if line.startswith("- at "):  # the schema: a header, the chart, one line per violation
        assert lines == [
            "Error: INSTALLATION FAILED: values don't meet the specifications of the schema(s) in the "
            "following chart(s):",
            "dra-harness-fake-gpu:",
            line,
            "",
        ]
    else:  # the chart's own `fail`: one line
        assert len(lines) == 1, lines
        m = FAILED.fullmatch(lines[0])
        assert m is not None, lines
        assert m.group(1) == line
    listed = run_helm(["list", "-A", "-q"], kubeconfig=cluster.kubeconfig, helm=helm)
    assert listed.stdout == ""
    assert {d["metadata"]["name"] for d in kube.list(*kinds.DEVICE_CLASS)} == before
    roles = [r["metadata"]["name"] for r in kube.list(*kinds.CLUSTER_ROLE)]
    assert roles
    assert not [r for r in roles if r.startswith("fake-driver")]
    kube.close()
