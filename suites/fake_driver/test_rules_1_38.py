"""The stricter 1.38 validation against the real 1.38 API server (v1.38.0-beta.0): each shape
fake_driver.rendering.apirules says 1.38 rejects is refused with upstream's message at the field the pure
check names (so the check and the server cannot drift apart unseen), the helper-only rule's
shape is taken by the server, and every slice the fake driver renders for 1.38 (each
personality, GPU profile and device layout) is accepted. Also what 1.38 removed: no
resource.k8s.io/v1beta1, v1beta2 off by default, and a component given the
DynamicResourceAllocation gate refuses to start. Needs the 1.38 control plane, which only `make
test-minors` builds (every_minor); the session's cluster when it runs 1.38, else one of our own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fake_driver.facts.personalities import PERSONALITIES
from fake_driver.facts.profiles import PROFILES
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.apirules import DRIVER_PREFIX, SERVER_RULES, SLASHES, slice_violations
from fake_driver.rendering.slices import render_node
from fixtures.planted import planted_slices, planted_template
from fixtures.requirements import not_built, provider_unmet, skip
from harness.clusters.base import Cell, Cluster
from harness.clusters.local.cluster import LocalCluster
from harness.clusters.local.components import Tuning
from harness.clusters.local.upgrade import served_kinds
from harness.controlplane.build import binary_path
from harness.core.errors import HarnessError
from harness.core.versions import load_matrix
from harness.kit.kube import Kube

pytestmark = [pytest.mark.every_minor]

MINOR = "1.38"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def _need_built() -> None:
    if not binary_path(load_matrix().minor(MINOR)).exists():
        skip(not_built(f"the {MINOR} control plane is not built here (make controlplane K8S={MINOR})"))


@pytest.fixture(scope="module")
def kube138(cluster: Cluster, cell: Cell, tmp_path_factory: Any) -> Iterator[Kube]:
    """A client of a 1.38 API server: the session's, or a local cluster of our own."""
    if cell.minor == MINOR:
        k = Kube.from_kubeconfig(cluster.kubeconfig)
        yield k
        k.close()
        return
    if cluster.provider != "local":
        skip(
            provider_unmet(
                f"{MINOR}: only the session's {cell.minor} cluster on the {cluster.provider} provider"
            )
        )
    _need_built()
    extra = LocalCluster(MINOR, "defaults", run_dir=tmp_path_factory.mktemp("rules-1.38"))
    extra.start()
    k = Kube.from_kubeconfig(extra.kubeconfig)
    try:
        yield k
    finally:
        k.close()
        extra.stop()


def _post(kube: Kube, path: str, body: dict[str, Any]) -> tuple[int, list[tuple[str, str]]]:
    """A server-side dry run: (HTTP status, the refusal's (field, message) causes)."""
    status, text = kube.raw_post(f"{path}?dryRun=All", body)
    if status == 201:
        return status, []
    details = json.loads(text).get("details") or {}
    return status, [(c.get("field", ""), c.get("message", "")) for c in details.get("causes") or ()]


def test_1_38_serves_the_git_version_pinned(kube138: Kube) -> None:
    assert kube138.git_version() == load_matrix().minor(MINOR).kubernetes == "v1.38.0-beta.0"


@pytest.mark.parametrize("rule", [r.id for r in SERVER_RULES])
def test_1_38_refuses_each_planted_slice_at_the_field_the_check_names(kube138: Kube, rule: str) -> None:
    body = planted_slices("rules-138")[rule]
    [violation] = slice_violations(body["spec"], (1, 38))

    status, causes = _post(kube138, SLICES, body)

    assert status == 422, causes
    assert [f for f, _ in causes] == [violation.field], causes
    assert causes[0][1].endswith(f": {violation.message}"), causes


def test_1_38_takes_the_name_only_the_publishing_helper_refuses(kube138: Kube) -> None:
    body = planted_slices("rules-138")[DRIVER_PREFIX.id]
    assert [v.rule for v in slice_violations(body["spec"], (1, 38))] == [DRIVER_PREFIX]

    assert _post(kube138, SLICES, body) == (201, [])


def test_1_38_refuses_a_claim_template_whose_constraint_has_two_slashes(kube138: Kube) -> None:
    body = planted_template("two-slashes", "default")

    status, causes = _post(
        kube138, "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", body
    )

    assert status == 422, causes
    assert causes == [
        (
            "spec.spec.devices.constraints[0].matchAttribute",
            f'Invalid value: "a.example.com/b/c": {SLASHES.message}',
        )
    ]


def _fleet_pools() -> list[dict[str, Any]]:
    """Each personality on each GPU profile, with every MIG mode, consumable capacity and
    partitions it has."""
    pools: list[dict[str, Any]] = []
    for name, p in sorted(PERSONALITIES.items()):
        for key, profile in sorted(PROFILES.items()):
            base = {"name": f"p{len(pools)}", "count": 1, "profile": key, "gpus": 2, "personality": name}
            variants: list[dict[str, Any]] = [{}]
            if p.is_nvidia and profile.mig_capable:
                variants.append({"mig": {"mode": "static", "layout": [profile.mig_profiles[0].name]}})
                if p.supports_dynamic_mig:
                    variants.append({"mig": "dynamic"})
            if p.supports_consumable_capacity:
                variants.append({"consumable_capacity": True})
            if not p.is_nvidia:
                variants.append({"partitions": 2})
            pools += [{**base, **v, "name": f"p{len(pools)}-{i}"} for i, v in enumerate(variants)]
    return pools


def test_every_slice_the_fake_driver_renders_for_1_38_is_accepted(kube138: Kube) -> None:
    fleet = fleet_from_dict({"pools": _fleet_pools()})
    slices = [s for node in fleet.nodes for s in render_node(node, (1, 38)).slices]

    refused = [(s["metadata"]["generateName"], _post(kube138, SLICES, s)) for s in slices]

    assert [r for r in refused if r[1][0] != 201] == []
    assert len(slices) >= len(fleet.nodes) == 79  # every pool published at least one slice


def test_1_38_serves_no_v1beta1_and_no_v1beta2_by_default(kube138: Kube) -> None:
    assert served_kinds(kube138, "resource.k8s.io/v1beta1") == {}
    assert served_kinds(kube138, "resource.k8s.io/v1beta2") == {}
    assert served_kinds(kube138, "resource.k8s.io/v1")["resourceslices"] == "ResourceSlice"


def test_a_component_given_the_removed_gate_refuses_to_start(cluster: Cluster, tmp_path: Path) -> None:
    if cluster.provider != "local":
        skip(provider_unmet(f"starts a {MINOR} control plane of its own: needs --cluster-provider local"))
    _need_built()
    flag = "--feature-gates=DynamicResourceAllocation=true"
    tuning = Tuning(component_flags={"kube-apiserver": [flag]})
    c = LocalCluster(MINOR, "defaults", run_dir=tmp_path / "gate", tuning=tuning)
    try:
        with pytest.raises(HarnessError) as err:
            c.start()
    finally:
        c.stop()

    assert "unrecognized feature gate: DynamicResourceAllocation" in str(err.value)
