"""charts/dra-harness-fake-gpu without a cluster: its generated files and deploy/manifests equal
what their sources give (one source), `helm lint` is clean, `helm template` of every personality
gives that personality's DeviceClasses and a fleet the fake driver loads, and contradicting
values are refused with one line. helm is versions.toml's [tools.helm] (a part of make test)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_driver.facts.personalities import PERSONALITIES
from fake_driver.fleetspec import fleet as fleet_module
from fake_driver.fleetspec.fleet import load_fleet
from fake_driver.rendering.deviceclasses import render_device_classes
from harness.chart import generate
from harness.chart.helm import run_helm
from tests.support.helmtool import built_helm

NEEDS_HELM = pytest.mark.own_target("test-chart")  # make test leaves these out: helm is built by test-chart

CHART = str(generate.CHART)


@pytest.fixture(scope="module")
def helm() -> Path:
    return built_helm()


def template(helm: Path, *args: str, namespace: str = "gpu-fleet") -> list[dict[str, Any]]:
    done = run_helm(["template", "t", CHART, "--namespace", namespace, *args], helm=helm)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


FAILED = re.compile(
    r"^Error: execution error at \(dra-harness-fake-gpu/templates/validate\.yaml:\d+:\d+\): (.*)$"
)


def refusal(helm: Path, *args: str, namespace: str = "gpu-fleet") -> list[str]:
    done = run_helm(["template", "t", CHART, "--namespace", namespace, *args], helm=helm)
    assert done.returncode == 1, done.stdout
    assert done.stdout == ""
    return done.stderr.splitlines()


def failed(helm: Path, *args: str, namespace: str = "gpu-fleet") -> str:
    """The chart's own refusal (a template `fail`): one line, then helm template's hint."""
    lines = refusal(helm, *args, namespace=namespace)
    assert lines[1:] == ["", "Use --debug flag to render out invalid YAML"], lines
    m = FAILED.match(lines[0])
    assert m is not None, lines
    return m.group(1)


def test_the_chart_files_generated_from_fake_driver_equal_the_tree() -> None:
    assert generate.stale_chart_files() == [], "run `dra-harness chart generate`"


@NEEDS_HELM
def test_deploy_manifests_equal_the_chart_rendered_with_their_values(helm: Path) -> None:
    assert generate.stale_manifests(helm) == [], "run `dra-harness chart generate`"


@NEEDS_HELM
def test_helm_lint_is_clean(helm: Path) -> None:
    done = run_helm(["lint", CHART, "--strict", "--namespace", "gpu-fleet"], helm=helm)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "1 chart(s) linted, 0 chart(s) failed"
    assert "[WARNING]" not in done.stdout
    assert "[ERROR]" not in done.stdout


@pytest.mark.parametrize("personality", list(PERSONALITIES))
@NEEDS_HELM
def test_template_gives_the_personality_classes_and_a_fleet_the_driver_loads(
    helm: Path, personality: str, tmp_path: Path
) -> None:
    docs = template(helm, "--set", f"personality={personality}")

    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs if d["kind"] != "DeviceClass")
    assert kinds == [
        ("ClusterRole", "fake-driver-device-plugin"),
        ("ClusterRole", "fake-driver-kubelet-plugin"),
        ("ClusterRoleBinding", "fake-driver-device-plugin"),
        ("ClusterRoleBinding", "fake-driver-kubelet-plugin"),
        ("ConfigMap", "fake-driver-fleet"),
        ("DaemonSet", "fake-driver-device-plugin"),
        ("DaemonSet", "fake-driver-kubelet-plugin"),
        ("ServiceAccount", "fake-driver-device-plugin"),
        ("ServiceAccount", "fake-driver-kubelet-plugin"),
        ("ValidatingAdmissionPolicy", "fake-driver-resourceslices"),
        ("ValidatingAdmissionPolicyBinding", "fake-driver-resourceslices"),
    ]
    p = PERSONALITIES[personality]
    expected = render_device_classes(p)
    for dc in expected:  # deviceClass.extendedResourceName is empty by default: no class bridges
        dc["spec"].pop("extendedResourceName", None)
    assert [d for d in docs if d["kind"] == "DeviceClass"] == expected
    fleet_cm = next(d for d in docs if d["kind"] == "ConfigMap")
    (tmp_path / "fleet.yaml").write_text(fleet_cm["data"]["fleet.yaml"])
    fleet = load_fleet(tmp_path / "fleet.yaml")
    assert [(pool.name, pool.personality.name, pool.gpus, pool.device_plugin) for pool in fleet.pools] == [
        ("h100", personality, 2, False),
        ("h100-legacy", personality, 2, True),
    ]
    assert all(
        d["metadata"]["namespace"] == "gpu-fleet" for d in docs if d["kind"] in ("DaemonSet", "ConfigMap")
    )


@NEEDS_HELM
def test_extended_resource_name_goes_on_the_gpu_class_only(helm: Path) -> None:
    docs = template(helm, "--set", "deviceClass.extendedResourceName=nvidia.com/gpu")

    bridged = {
        d["metadata"]["name"]: d["spec"].get("extendedResourceName")
        for d in docs
        if d["kind"] == "DeviceClass"
    }
    assert {k: v for k, v in bridged.items() if v} == {"gpu.nvidia.com": "nvidia.com/gpu"}
    assert len(bridged) == 5


@NEEDS_HELM
def test_toggles_and_namespace_override(helm: Path) -> None:
    docs = template(
        helm,
        "--set",
        "devicePlugin.enabled=false,kubeletPlugin.enabled=false,deviceClass.create=false",
        "--set",
        "namespaceOverride=elsewhere",
    )

    assert [(d["kind"], d["metadata"]["namespace"]) for d in docs] == [("ConfigMap", "elsewhere")]


@NEEDS_HELM
def test_the_default_namespace_is_refused(helm: Path) -> None:
    assert failed(helm, namespace="default") == (
        "refusing to install into the default namespace: use --namespace (or namespaceOverride), "
        "or set allowDefaultNamespace=true"
    )
    assert template(helm, "--set", "allowDefaultNamespace=true", namespace="default")


@NEEDS_HELM
def test_a_mig_layout_on_a_gpu_without_mig_is_refused(helm: Path, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    pool = {
        "name": "l4",
        "count": 1,
        "profile": "l4",
        "gpus": 2,
        "mig": {"mode": "static", "layout": ["1g.10gb"]},
    }
    values.write_text(yaml.safe_dump({"fleet": {"pools": [pool]}}))

    line = failed(helm, "--values", str(values))

    assert line == (
        "fleet pool l4: GPU l4 has no MIG, so it cannot have a MIG layout "
        "(MIG GPUs: a100-40gb, a100-80gb-pcie, b200, h100-80gb-hbm3, h200-141gb-hbm3e)"
    )


@NEEDS_HELM
def test_a_mig_profile_another_gpu_has_is_refused(helm: Path, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    pool = {
        "name": "a",
        "count": 1,
        "profile": "a100-40gb",
        "gpus": 1,
        "mig": {"mode": "static", "layout": ["3g.40gb"]},
    }
    values.write_text(yaml.safe_dump({"fleet": {"pools": [pool]}}))

    line = failed(helm, "--values", str(values))

    assert line == (
        "fleet pool a: 3g.40gb is not a MIG profile of a100-40gb "
        "(1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb)"
    )


@NEEDS_HELM
def test_a_driver_name_the_personality_does_not_publish_is_refused(helm: Path) -> None:
    line = failed(helm, "--set", "driverName=gpu.acme.example")

    assert line == (
        "driverName gpu.acme.example: personality nvidia-v25.12 publishes gpu.nvidia.com "
        "(leave driverName empty)"
    )


@NEEDS_HELM
def test_an_unknown_personality_is_refused_by_the_schema(helm: Path) -> None:
    lines = refusal(helm, "--set", "personality=nvidia-v99")

    assert lines == [
        "Error: values don't meet the specifications of the schema(s) in the following chart(s):",
        "dra-harness-fake-gpu:",
        # the schema's enum is the personalities, in their order (a new one needs no edit here)
        "- at '/personality': value must be one of " + ", ".join(f"'{n}'" for n in PERSONALITIES),
        "",
    ]


@NEEDS_HELM
def test_a_pool_field_the_fleet_format_does_not_have_is_refused_by_the_schema(
    helm: Path, tmp_path: Path
) -> None:
    values = tmp_path / "values.yaml"
    pool = {"name": "a", "count": 1, "profile": "t4", "gpus": 1, "device-plugin": True}
    values.write_text(yaml.safe_dump({"fleet": {"pools": [pool]}}))

    assert "- at '/fleet/pools/0': additional properties 'device-plugin' not allowed" in refusal(
        helm, "--values", str(values)
    )


def test_the_schema_knows_every_field_of_the_fleet_format() -> None:
    assert set(generate.pool_schema()["properties"]) == set(fleet_module._POOL_FIELDS)
    assert set(generate.pool_schema()["properties"]["mig"]["properties"]) == set(fleet_module._MIG_FIELDS)
