"""The kind path without Docker: generated configs for every cell, the provider's refusals,
leftover cleanup, and the deploy files kept in step with the project."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from fake_driver.fleetspec.fleet import parse_fleet
from fixtures.options import minors_to_check
from harness.clusters.kind import provider as kind_mod
from harness.clusters.kind.config import (
    CDI_PATCH,
    CREATED_LABEL,
    DEFAULT_POOLS,
    DEVICE_PLUGIN_LABEL,
    MANAGED_LABEL,
    config_problems,
    render_kind_config,
)
from harness.clusters.kind.leftovers import cleanup, parse_age
from harness.clusters.kind.provider import KindProvider, docker_problem, find_binary
from harness.clusters.nodes import POOL_LABEL
from harness.clusters.providers import make_cluster
from harness.controlplane.build import binary_path
from harness.controlplane.gates import KnownGate, known_gates
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT, GateProfile, Minor, load_matrix

MATRIX = load_matrix()
CELLS = [(m, p) for m in MATRIX.minors.values() for p in m.profiles.values()]


@pytest.mark.parametrize(("minor", "profile"), CELLS, ids=[f"{m.name}-{p.name}" for m, p in CELLS])
def test_config_of_every_cell(minor: Minor, profile: GateProfile) -> None:
    config = render_kind_config(minor, profile, created=1_700_000_000)

    assert config.get("featureGates", {}) == profile.gates
    assert config.get("runtimeConfig", {}) == profile.runtime_config
    assert config["containerdConfigPatches"] == [CDI_PATCH]
    assert {n["image"] for n in config["nodes"]} == {minor.kind_image}
    roles = [n["role"] for n in config["nodes"]]
    assert roles == ["control-plane"] + ["worker"] * sum(p.workers for p in DEFAULT_POOLS)
    workers = [n["labels"] for n in config["nodes"][1:]]
    assert [w[POOL_LABEL] for w in workers] == [p.name for p in DEFAULT_POOLS for _ in range(p.workers)]
    assert [w.get(DEVICE_PLUGIN_LABEL) for w in workers] == [
        "true" if p.device_plugin else None for p in DEFAULT_POOLS for _ in range(p.workers)
    ]
    assert all(n["labels"][MANAGED_LABEL] == "dra-harness" for n in config["nodes"])
    assert all(n["labels"][CREATED_LABEL] == "1700000000" for n in config["nodes"])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The gate names of each cell of the minors `make test` builds (--every-minor: all)."""
    if "built_cell" in metafunc.fixturenames:
        minors = [MATRIX.minor(m) for m in minors_to_check(metafunc.config)]
        cells = [(m, p) for m in minors for p in m.profiles.values()]
        metafunc.parametrize("built_cell", cells, ids=[f"{m.name}-{p.name}" for m, p in cells])


def test_every_gate_of_a_cell_is_known_to_its_minors_binary(built_cell: tuple[Minor, GateProfile]) -> None:
    minor, profile = built_cell
    if not binary_path(minor).exists():  # `make test` builds them (versions.toml [test]) first
        pytest.skip(f"{minor.kubernetes} is not built here: gate names not checked (make parts)")
    config = render_kind_config(minor, profile, created=1_700_000_000)
    assert config_problems(config, minor, known_gates(binary_path(minor))) == []


def _built_minor() -> tuple[Minor, dict[str, KnownGate]]:
    minor = MATRIX.minor(MATRIX.default_minor)  # the one every run builds first
    if not binary_path(minor).exists():
        pytest.skip(f"{minor.kubernetes} is not built here (make controlplane)")
    return minor, known_gates(binary_path(minor))


def test_config_problems_name_unknown_and_locked_gates_and_unpinned_images() -> None:
    minor, known = _built_minor()
    locked = next(g for g in known.values() if g.locked)
    profile = GateProfile("bad", {"NoSuchGate": True, locked.name: not locked.default}, {})
    config = render_kind_config(replace(minor, kind_image="kindest/node:latest"), profile)

    gate_problems = {
        "NoSuchGate": f"feature gate NoSuchGate is unknown to {minor.kubernetes}",
        locked.name: f"feature gate {locked.name} is locked to {str(locked.default).lower()} in {minor.name}",
    }
    image_problems = [
        f"node {k} ({'control-plane' if k == 0 else 'worker'}): image 'kindest/node:latest' "
        "is not pinned to a version tag"
        for k in range(1 + len(DEFAULT_POOLS))
    ]
    assert config_problems(config, minor, known) == [
        *(gate_problems[g] for g in sorted(gate_problems)),
        *image_problems,
    ]


def test_image_of_another_minor_is_refused() -> None:
    m134, m137 = MATRIX.minor("1.34"), MATRIX.minor("1.37")
    config = render_kind_config(replace(m137, kind_image=m134.kind_image), m137.profile("defaults"))
    assert (
        config_problems(config, m137, None)[0]
        == f"node 0: image '{m134.kind_image}' is not a Kubernetes 1.37 node image"
    )


def test_missing_kind_binary_is_one_line_saying_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("DRA_HARNESS_KIND", raising=False)
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with pytest.raises(HarnessError) as err:
        find_binary("kind", None, "DRA_HARNESS_KIND", kind_mod.kind_hint(MATRIX))
    assert str(err.value) == (
        f"kind not found on PATH (nor $DRA_HARNESS_KIND): install it with "
        f"`go install sigs.k8s.io/kind@{MATRIX.kind_version}` (docs/kind.md)"
    )


def test_explicit_binary_must_be_executable(tmp_path: Path) -> None:
    f = tmp_path / "kind"
    f.write_text("")
    with pytest.raises(HarnessError) as err:
        find_binary("kind", f, "DRA_HARNESS_KIND", "")
    assert str(err.value) == f"kind binary {f} does not exist or is not executable"


def _fake(tmp_path: Path, name: str) -> Path:
    f = tmp_path / name
    f.write_text("#!/bin/sh\nexit 0\n")
    f.chmod(0o755)
    return f


def test_provider_without_docker_engine_refuses_before_running_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    refused = (
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
    )

    def runner(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
        calls.append(list(cmd))
        return subprocess.CompletedProcess(list(cmd), 1, "", refused + "\n")

    monkeypatch.setattr(shutil, "which", lambda name, path=None: f"/usr/bin/{name}")
    p = KindProvider(
        "1.36",
        "dra-all",
        run_dir=tmp_path,
        kind_bin=_fake(tmp_path, "kind"),
        kubectl_bin=_fake(tmp_path, "kubectl"),
        runner=runner,
        start_engine=False,
    )
    with pytest.raises(HarnessError) as err:
        p.start()
    assert str(err.value) == f"the kind provider needs a Docker engine: no Docker engine: {refused}"
    assert calls == [["docker", "info", "--format", "{{.ServerVersion}}"]]
    assert p.name == "dra-harness-1-36-dra-all"
    assert not p.config_path.exists()


def test_without_driver_manifests_the_driver_image_is_loaded_and_nothing_applied(tmp_path: Path) -> None:
    """driver_manifests=False leaves the driver to the caller (the chart, with helm)."""
    calls: list[list[str]] = []

    def runner(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
        calls.append(list(cmd))
        return subprocess.CompletedProcess(list(cmd), 0, "", "")

    for manifests in (False, True):
        calls.clear()
        p = KindProvider(run_dir=tmp_path, runner=runner, kwok=False, driver_manifests=manifests)
        p._kind = SimpleNamespace(kind_path=Path("/k/kind"))
        p.deploy_driver("img:1", Path("/k/kubectl"))
        load = ["/k/kind", "load", "docker-image", "--name", p.name, "img:1"]
        verbs = [c[3] for c in calls[1:]]
        assert (calls[0], verbs) == (load, ["apply", "-n", "-n"] if manifests else [])


def test_docker_cli_missing_is_its_own_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    assert docker_problem() == "no Docker engine: the docker CLI is not installed"


def test_make_cluster_kind_gives_the_provider() -> None:
    c = make_cluster("kind", minor="1.35", profile="defaults", keep=True)
    assert isinstance(c, KindProvider)
    assert (c.provider, c.minor.name, c.profile.name, c.keep) == ("kind", "1.35", "defaults", True)


def test_cleanup_deletes_only_the_harness_clusters_older_than_the_age() -> None:
    now = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
    created = {
        "dra-harness-1-37-dra-all-control-plane": "2026-10-01T03:00:00.123456789Z",  # 9h
        "dra-harness-1-34-defaults-control-plane": "2026-10-01T11:00:00Z",  # 1h
        "dra-harness-half-made-control-plane": None,  # no container
    }
    calls: list[list[str]] = []

    def runner(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
        calls.append(list(cmd))
        if cmd[1:] == ["get", "clusters"]:
            out = "dra-harness-1-37-dra-all\ndra-harness-1-34-defaults\nsomeone-else\ndra-harness-half-made\n"
            return subprocess.CompletedProcess(list(cmd), 0, out, "")
        if cmd[0] == "docker":
            t = created.get(cmd[-1])
            return subprocess.CompletedProcess(
                list(cmd), 0 if t else 1, f"{t}\n" if t else "", "" if t else "No such object"
            )
        return subprocess.CompletedProcess(list(cmd), 0, "", "")

    dry = cleanup(parse_age("6h"), kind=Path("/k/kind"), now=now, dry_run=True, runner=runner)
    assert dry == ["dra-harness-1-37-dra-all"]
    assert not [c for c in calls if "delete" in c]
    assert cleanup(timedelta(hours=6), kind=Path("/k/kind"), now=now, runner=runner) == [
        "dra-harness-1-37-dra-all"
    ]
    assert [c for c in calls if "delete" in c] == [
        ["/k/kind", "delete", "cluster", "--name", "dra-harness-1-37-dra-all"]
    ]
    assert not any("someone-else" in " ".join(c) for c in calls)


@pytest.mark.parametrize(
    ("text", "age"),
    [
        ("30m", timedelta(minutes=30)),
        ("6h", timedelta(hours=6)),
        ("2d", timedelta(days=2)),
        ("0s", timedelta(0)),
    ],
)
def test_parse_age(text: str, age: timedelta) -> None:
    assert parse_age(text) == age


def test_parse_age_refuses_other_text() -> None:
    with pytest.raises(HarnessError, match=r"^age '6 hours' is not like 30m, 6h or 2d$"):
        parse_age("6 hours")


def test_dockerfile_pins_are_the_projects() -> None:
    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = dict(d.split("==") for d in deps)
    dockerfile = (REPO_ROOT / "deploy" / "Dockerfile").read_text()
    in_image = dict(re.findall(r"^\s+([a-z0-9-]+)==(\S+)", dockerfile, re.MULTILINE))
    assert set(in_image) == {"grpcio", "protobuf", "kubernetes", "pyyaml"}
    assert {k: pins[k] for k in in_image} == in_image
    from harness.clusters.kind.images.driver import driver_pins  # the image built without a registry

    assert driver_pins() == sorted(f"{k}=={v}" for k, v in in_image.items())


def test_deployed_fleet_has_the_kind_pools() -> None:
    cm = yaml.safe_load((REPO_ROOT / "deploy" / "manifests" / "30-fleet.yaml").read_text())
    fleet = parse_fleet(cm["data"]["fleet.yaml"])
    assert [(p.name, p.device_plugin) for p in fleet.pools] == [
        (p.name, p.device_plugin) for p in DEFAULT_POOLS
    ]


def test_nightly_runs_every_cell_on_kind_and_always_uploads_reports() -> None:
    wf = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    job = wf["jobs"]["kind"]
    assert job["strategy"]["fail-fast"] is False
    assert 1 <= job["strategy"]["max-parallel"] <= 4
    steps = {s.get("name", s.get("uses", "")): s for s in job["steps"]}
    assert "docker build -f deploy/Dockerfile" in steps["driver image"]["run"]
    assert "--cluster-provider kind" in steps["suites on kind"]["run"]
    assert steps["reports"]["if"] == "always()"
    assert steps["reports"]["with"]["path"] == "reports/out"


def test_config_for_a_local_node_image_brings_its_own_pod_network_and_accepts_cgroup_v1() -> None:
    from harness.clusters.kind.config import KUBELET_CGROUP_V1_PATCH
    from harness.clusters.kind.images.node import local_node_image

    minor = MATRIX.minor(MATRIX.default_minor)
    image = local_node_image(minor)
    config = render_kind_config(minor, minor.profile("defaults"), local_image=image)
    assert image == f"dra-harness.local/kind-node:{minor.kubernetes}"
    assert {n["image"] for n in config["nodes"]} == {image}
    assert config["networking"] == {"disableDefaultCNI": True}
    assert yaml.safe_load(config["kubeadmConfigPatches"][0]) == {
        "kind": "KubeletConfiguration",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "failCgroupV1": False,
    }
    timeouts = {
        yaml.safe_load(p)["kind"]: yaml.safe_load(p)["timeouts"] for p in config["kubeadmConfigPatches"][1:]
    }
    assert timeouts["InitConfiguration"]["controlPlaneComponentHealthCheck"] == "10m0s"
    assert timeouts["JoinConfiguration"]["tlsBootstrap"] == "10m0s"
    assert KUBELET_CGROUP_V1_PATCH in config["kubeadmConfigPatches"]
    assert config_problems(config, minor, None) == []


def test_pod_network_config_is_a_bridge_on_the_nodes_own_pod_cidr() -> None:
    import json

    from harness.clusters.kind.net import conflist

    config = json.loads(conflist("10.244.1.0/24"))
    assert [p["type"] for p in config["plugins"]] == ["bridge", "portmap"]
    assert config["plugins"][0]["ipam"]["ranges"] == [[{"subnet": "10.244.1.0/24"}]]
    assert (config["plugins"][0]["isGateway"], config["plugins"][0]["ipMasq"]) == (True, True)


STANDIN_MODFILE = (
    "module m\n\n"
    "// stand-in: sigs.k8s.io/iptables-wrappers@v1.0.0: refused on 2026-12-07: 403\n"
    "replace sigs.k8s.io/iptables-wrappers v1.0.0 => ./iptables-wrappers // stand-in\n"
)


@pytest.fixture
def standin_modfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The modfile every minor's kube-proxy is read from: one replacing iptables-wrappers."""
    from harness.clusters.kind import config as config_mod

    mod = tmp_path / "1.38.mod"
    mod.write_text(STANDIN_MODFILE)
    monkeypatch.setattr(config_mod, "modfile_path", lambda minor: mod)
    return mod


def test_kube_proxy_built_with_the_standin_runs_in_nftables_mode(standin_modfile: Path) -> None:
    from harness.clusters.kind.config import kube_proxy_fact, kube_proxy_mode

    minor = MATRIX.minor("1.38")
    image = "dra-harness.local/kind-node:v1.38.0-beta.0"
    mode = kube_proxy_mode(minor)
    assert mode == "nftables"
    assert kube_proxy_mode(minor, "nftables") == "nftables"
    assert kube_proxy_mode(minor, "none") == "none"
    config = render_kind_config(minor, minor.profile("defaults"), local_image=image, proxy_mode=mode)
    assert config["networking"] == {"disableDefaultCNI": True, "kubeProxyMode": "nftables"}
    assert kube_proxy_fact(minor, mode) == "nftables (sigs.k8s.io/iptables-wrappers: the project's stand-in)"
    # without the stand-in: kind's default mode, said as such
    standin_modfile.write_text("module m\n")
    assert kube_proxy_mode(minor) is None
    assert kube_proxy_fact(minor, None) == "iptables"
    assert "networking" not in render_kind_config(minor, minor.profile("defaults"), proxy_mode=None)


@pytest.mark.parametrize("mode", ["iptables", "ipvs"])
def test_iptables_mode_with_the_standin_is_one_line_saying_why_not(standin_modfile: Path, mode: str) -> None:
    with pytest.raises(HarnessError) as err:
        KindProvider("1.38", kube_proxy_mode=mode)
    assert str(err.value) == (
        f"kind on 1.38 cannot run kube-proxy in {mode} mode: its kube-proxy is built with the project's "
        "stand-in for sigs.k8s.io/iptables-wrappers (the module proxy refuses its source), which has no "
        "iptables; use nftables (the default here)"
    )
    assert "\n" not in str(err.value)


def test_unknown_kube_proxy_mode_is_one_line() -> None:
    with pytest.raises(
        HarnessError, match=r"^kube-proxy mode 'userspace' is not one of iptables, ipvs, nftables, none$"
    ):
        KindProvider("1.37", kube_proxy_mode="userspace")


def test_kube_proxy_mode_follows_the_modfiles_in_the_repository() -> None:
    """What the kind path runs is read from controlplane/mod/<minor>.mod: nftables exactly where a
    stand-in replaces iptables-wrappers, iptables (kind's default) elsewhere."""
    from harness.clusters.kind.config import kube_proxy_mode
    from harness.controlplane.build import modfile_path
    from harness.controlplane.modfile import standins_used

    for minor in MATRIX.minors.values():
        standin = bool(standins_used(modfile_path(minor).read_text()))
        assert kube_proxy_mode(minor) == ("nftables" if standin else None), minor.name
        assert KindProvider(minor.name).kube_proxy_mode == kube_proxy_mode(minor)


def test_the_summary_says_which_kube_proxy_a_kind_cell_ran(standin_modfile: Path) -> None:
    from harness.reports.summary import run_versions

    assert run_versions(MATRIX, "1.38", "kind") == {
        "kubernetes": "v1.38.0-beta.0",
        "kind": MATRIX.kind_version,
        "kind_image": MATRIX.minor("1.38").kind_image,
        "kube_proxy": "nftables (sigs.k8s.io/iptables-wrappers: the project's stand-in)",
    }
    standin_modfile.write_text("module m\n")
    assert run_versions(MATRIX, "1.38", "kind")["kube_proxy"] == "iptables"


def test_kube_proxy_mode_from_the_environment_is_refused_alike(
    standin_modfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRA_HARNESS_KUBE_PROXY_MODE", "iptables")
    with pytest.raises(HarnessError, match=r"^kind on 1\.38 cannot run kube-proxy in iptables mode: "):
        KindProvider("1.38")
    monkeypatch.setenv("DRA_HARNESS_KUBE_PROXY_MODE", "nftables")
    assert KindProvider("1.38").kube_proxy_mode == "nftables"
