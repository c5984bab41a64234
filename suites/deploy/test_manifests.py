"""The fake driver's manifests (deploy/manifests) against real API servers of every built minor:
server-side dry run of all of them, and the admission policy applied for real, exercised with
the kubelet plugin's own identity (a ServiceAccount token bound to a Node)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures.options import minors_to_check
from fixtures.requirements import not_built, provider_unmet, skip
from harness.clusters.base import Cell, Cluster
from harness.clusters.local.cluster import LocalCluster
from harness.controlplane.build import binary_path
from harness.core.versions import REPO_ROOT, load_matrix
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.waits import TIMEOUTS, wait_for

pytestmark = [pytest.mark.fake_driver_only("manifests (applying them creates its namespace)")]

MANIFESTS = REPO_ROOT / "deploy" / "manifests"
KUBECTL = str(Path(sys.executable).parent / "kubectl")
NAMESPACE = "dra-fake-driver"
PLUGIN_SA = "fake-driver-kubelet-plugin"
POLICY = "fake-driver-resourceslices"
DRY_RUN_LINE = re.compile(r"^(\S+)/(\S+) (created|configured|unchanged) \(server dry run\)$")


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


_NO_WAIT = ("--ignore-not-found", "--wait=false")


def ok(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, f"{out.args[3:]} failed: {out.stderr}"
    return out.stdout


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every minor `make test` builds (`--every-minor`: all of versions.toml; make test-minors)."""
    if "target" in metafunc.fixturenames:
        minors = minors_to_check(metafunc.config)
        metafunc.parametrize("target", minors, indirect=True, scope="module", ids=minors)


@pytest.fixture(scope="module")
def target(
    request: pytest.FixtureRequest, cluster: Cluster, cell: Cell, tmp_path_factory: Any
) -> Iterator[Path]:
    """A kubeconfig for a cluster of the param's minor: the session's, or a local one of our own."""
    minor = load_matrix().minor(request.param)
    if minor.name == cell.minor:
        yield cluster.kubeconfig
        return
    if cluster.provider != "local":
        skip(
            provider_unmet(
                f"{minor.name}: only the session's {cell.minor} cluster on the {cluster.provider} provider"
            )
        )
    if not binary_path(minor).exists():
        skip(not_built(f"{minor.name} is not built here (make controlplane K8S={minor.name})"))
    extra = LocalCluster(minor.name, "defaults", run_dir=tmp_path_factory.mktemp(f"deploy-{minor.name}"))
    extra.start()
    yield extra.kubeconfig
    extra.stop()  # pytest runs this after the module's last test, passed or failed


def manifest_objects() -> list[dict[str, Any]]:
    docs = [d for f in sorted(MANIFESTS.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    assert docs, f"no manifests under {MANIFESTS}"
    return docs


def test_manifests_pass_server_side_dry_run(target: Path) -> None:
    ok(kubectl(target, "apply", "-f", str(MANIFESTS / "00-namespace.yaml")))  # namespaced dry runs need it

    out = kubectl(target, "apply", "--dry-run=server", "-f", str(MANIFESTS))

    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert all(DRY_RUN_LINE.match(line) for line in lines), lines
    applied = sorted((m.group(1).split(".")[0], m.group(2)) for m in map(DRY_RUN_LINE.match, lines) if m)
    expected = sorted((d["kind"].lower(), d["metadata"]["name"]) for d in manifest_objects())
    assert applied == expected


def slice_doc(name: str, node: str | None) -> str:
    spec: dict[str, Any] = {
        "driver": "vap.dra-harness.io",
        "pool": {"name": node or "cluster", "generation": 1, "resourceSliceCount": 1},
        "devices": [],
    }
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    body = {
        "apiVersion": kinds.RESOURCE_V1,
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec,
    }
    return json.dumps(body)


def token_kubeconfig(admin: Path, token: str, path: Path) -> Path:
    """The admin kubeconfig's cluster with a bearer-token user (no client certificate)."""
    cfg = yaml.safe_load(admin.read_text())
    ctx = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])["context"]
    cluster = next(c for c in cfg["clusters"] if c["name"] == ctx["cluster"])
    path.write_text(yaml.safe_dump(b.token_kubeconfig(cluster["cluster"], token, "plugin")))
    return path


def denial(out: subprocess.CompletedProcess[str]) -> str:
    """The policy's message from a kubectl error, or the whole stderr if it is not a denial."""
    m = re.search(
        rf"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request: (.*)$", out.stderr
    )
    return m.group(1).strip() if m else f"<not denied: rc={out.returncode} {out.stderr.strip()}>"


@dataclass(frozen=True)
class NodePlugin:
    """The admission policy applied for real, two Nodes, and a kubeconfig with the kubelet
    plugin's token as a pod on node `a` gets it (bound to that Node)."""

    admin: Path
    plugin: Path
    a: str
    b: str
    suffix: str


# Applies and then deletes the driver's own namespace and cluster-wide objects under their real
# names: in a parallel run, not beside the dry run (which needs that namespace Active).
@pytest.fixture(scope="module")
def node_plugin(target: Path, cluster: Cluster, tmp_path_factory: Any) -> Iterator[NodePlugin]:
    if cluster.provider == "existing":
        skip(provider_unmet("creates cluster-scoped objects and Nodes: not on someone else's cluster"))
    real = [MANIFESTS / f for f in ("00-namespace.yaml", "10-serviceaccounts.yaml", "20-rbac.yaml")]
    real.append(MANIFESTS / "60-admission-policy.yaml")
    suffix = uuid.uuid4().hex[:6]
    node_a, node_b = f"vap-a-{suffix}", f"vap-b-{suffix}"
    with ExitStack() as undo:  # newest first: the nodes, then the manifests in reverse
        for f in real:
            undo.callback(kubectl, target, "delete", "-f", str(f), *_NO_WAIT)
            ok(kubectl(target, "apply", "-f", str(f)))
        for n in (node_a, node_b):
            undo.callback(kubectl, target, "delete", "node", n, *_NO_WAIT)
            ok(
                kubectl(
                    target,
                    "create",
                    "-f",
                    "-",
                    stdin=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}}),
                )
            )
        # The token a pod on node_a gets: bound to the Node, so the API server adds the
        # authentication.kubernetes.io/node-name extra that the policy reads.
        bound = ("--bound-object-kind", "Node", "--bound-object-name", node_a, "--duration", "10m")
        token = ok(kubectl(target, "create", "token", PLUGIN_SA, "-n", NAMESPACE, *bound)).strip()
        plugin = token_kubeconfig(target, token, tmp_path_factory.mktemp("vap") / "plugin.kubeconfig")
        yield NodePlugin(target, plugin, node_a, node_b, suffix)


def _create(kubeconfig: Path, name: str, node: str | None, *dry_run: str) -> subprocess.CompletedProcess[str]:
    return kubectl(kubeconfig, "create", *dry_run, "-f", "-", stdin=slice_doc(name, node))


def _other_node(p: NodePlugin) -> str:
    return f"this user running on node '{p.a}' may not modify resourceslices on node '{p.b}'"


@pytest.mark.serial
def test_the_plugins_token_names_its_service_account_and_its_node(node_plugin: NodePlugin) -> None:
    who = json.loads(ok(kubectl(node_plugin.plugin, "auth", "whoami", "-o", "json")))["status"]["userInfo"]
    assert who["username"] == f"system:serviceaccount:{NAMESPACE}:{PLUGIN_SA}"
    assert who["extra"]["authentication.kubernetes.io/node-name"] == [node_plugin.a]


@pytest.mark.serial
def test_a_node_plugin_may_not_write_another_nodes_slice(node_plugin: NodePlugin) -> None:
    p = node_plugin
    # The binding takes effect asynchronously: probe with server-side dry runs (admission
    # runs for them too) until the policy answers, so nothing is written meanwhile.
    probe = wait_for(
        lambda: _create(p.plugin, f"{p.b}-x", p.b, "--dry-run=server"),
        lambda out: out.returncode != 0,
        timeout=TIMEOUTS.api_object,
        describe="the admission policy to deny a slice of another node",
    )
    assert denial(probe) == _other_node(p)
    assert denial(_create(p.plugin, f"{p.b}-y", p.b)) == _other_node(p)


@pytest.mark.serial
def test_a_node_plugin_may_not_write_a_cluster_wide_slice(node_plugin: NodePlugin) -> None:
    p = node_plugin
    denied = _wait_denied(p, f"all-{p.suffix}", None)
    assert denial(denied) == f"this user running on node '{p.a}' may not modify cluster resourceslices"


@pytest.mark.serial
def test_a_node_plugin_writes_and_deletes_its_own_nodes_slice(node_plugin: NodePlugin) -> None:
    p = node_plugin
    _wait_denied(p, f"{p.b}-w", p.b)  # the policy is in effect, so the next create passed it
    ok(_create(p.plugin, f"{p.a}-own", p.a))
    ok(kubectl(p.plugin, "delete", "resourceslice", f"{p.a}-own"))


@pytest.mark.serial
def test_a_token_bound_to_no_node_may_write_no_slice(node_plugin: NodePlugin, tmp_path: Path) -> None:
    p = node_plugin
    _wait_denied(p, f"{p.b}-v", p.b)
    unbound = ok(kubectl(p.admin, "create", "token", PLUGIN_SA, "-n", NAMESPACE, "--duration", "10m")).strip()
    nowhere = token_kubeconfig(p.admin, unbound, tmp_path / "unbound.kubeconfig")
    assert denial(_create(nowhere, f"{p.a}-z", p.a)) == (
        "no node association found for user, this user must run in a pod on a node and "
        "ServiceAccountTokenPodNodeInfo must be enabled"
    )


@pytest.mark.serial
def test_the_admin_still_writes_any_nodes_slice(node_plugin: NodePlugin) -> None:
    p = node_plugin
    _wait_denied(p, f"{p.b}-u", p.b)  # only the plugin's identity is confined
    ok(_create(p.admin, f"{p.b}-admin", p.b, "--dry-run=server"))


@pytest.mark.serial
def test_the_node_plugin_cannot_read_secrets_even_in_its_namespace(node_plugin: NodePlugin) -> None:
    forbidden = kubectl(node_plugin.plugin, "get", "secrets", "-n", NAMESPACE)
    assert forbidden.returncode != 0
    assert "Forbidden" in forbidden.stderr


def _wait_denied(p: NodePlugin, name: str, node: str | None) -> subprocess.CompletedProcess[str]:
    """The plugin's dry-run create of a slice, once the policy (bound asynchronously) denies it."""
    return wait_for(
        lambda: _create(p.plugin, name, node, "--dry-run=server"),
        lambda out: out.returncode != 0,
        timeout=TIMEOUTS.api_object,
        describe=f"the admission policy to deny the plugin's slice {name}",
    )
