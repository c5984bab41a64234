"""resource.k8s.io beyond v1: drivers and manifests written for v1beta1 (device `basic`, flat
requests) or v1beta2 (`exactly`) still work where the server serves those versions, and the
server converts them to v1 without losing what allocation reads. Shapes: k8s.io/api
resource/v1beta1, v1beta2 and v1 types.go @ v0.34.4 and v0.37.2; which versions a cell serves
follows its runtime-config (versions.toml). Upstream counterpart: kubernetes
test/e2e/dra "supports ... v1beta1/v1beta2" API-version cases."""

from __future__ import annotations

import json

import pytest

from fixtures.requirements import api_unserved, provider_unmet, skip
from harness.clusters.base import Cell
from harness.core.upgrade_facts import resource_v1beta1_served
from harness.core.versions import load_matrix
from harness.kit import builders as b
from harness.kit import kinds
from harness.kit.kube import Kube, Obj
from harness.kit.objects import Created

DRIVER = "apiversions.dra-harness.io"
H100 = f'device.attributes["{DRIVER}"].model == "H100"'


def _served(kube: Kube, cell: Cell, version: str) -> None:
    status, _ = kube.raw_get(f"/apis/{kinds.resource_api(version)}")
    if status != 200:
        skip(api_unserved(cell, kinds.resource_api(version)))


def _v1_requests(device_class: str) -> list[Obj]:
    return [
        b.exact_request("gpus", device_class, count=2, selectors=[H100]),
        b.first_available_request(
            "one", [b.subrequest("big", device_class, selectors=[H100]), b.subrequest("any", device_class)]
        ),
    ]


def _beta_requests(version: str, device_class: str) -> list[Obj]:
    """The same requests in the beta shape: v1beta1 puts the exact request's fields on the
    request itself; v1beta2 has v1's `exactly`."""
    if version == "v1beta2":
        return _v1_requests(device_class)
    exact = b.exact_request("gpus", device_class, count=2, selectors=[H100])
    return [{"name": "gpus", **exact["exactly"]}, _v1_requests(device_class)[1]]


def _v1_device() -> Obj:
    return b.device("gpu-0", {"model": "H100", "index": 0}, {"memory": "81559Mi"})


def _beta_device(version: str) -> Obj:
    v1 = _v1_device()
    if version == "v1beta2":
        return v1
    return {"name": v1["name"], "basic": {"attributes": v1["attributes"], "capacity": v1["capacity"]}}


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_a_claim_written_in_a_beta_version_reads_the_same_in_v1(
    kube: Kube, namespace: str, objects: Created, cell: Cell, version: str
) -> None:
    _served(kube, cell, version)
    constraint = b.match_attribute(["gpus", "one"], f"{DRIVER}/model")
    body = b.resource_claim("beta", namespace, _beta_requests(version, "gpu"), [constraint], api=version)

    objects.create(body)

    stored = kube.get(*kinds.RESOURCE_CLAIM, "beta", namespace)
    assert stored["spec"] == b.claim_spec(_v1_requests("gpu"), [constraint])
    back = kube.get(kinds.resource_api(version), "ResourceClaim", "beta", namespace)
    expected = body["spec"]
    if version == "v1beta1":
        # v1beta1 DeviceRequest.DeviceClassName is a string without omitempty (k8s.io/api
        # resource/v1beta1/types.go): a firstAvailable request reads back with "" in it.
        expected["devices"]["requests"][1]["deviceClassName"] = ""
    assert back["spec"] == expected


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_a_slice_published_in_a_beta_version_reads_the_same_in_v1(
    kube: Kube, namespace: str, objects: Created, cell: Cell, version: str
) -> None:
    _served(kube, cell, version)
    pool = f"{namespace}-pool"
    body = b.resource_slice(
        pool, driver=DRIVER, node_name="", devices=[_beta_device(version)], pool=pool, api=version
    )
    del body["spec"]["nodeName"]
    body["spec"]["allNodes"] = True

    objects.create(body)

    stored = kube.get(*kinds.RESOURCE_SLICE, pool)
    assert stored["spec"]["devices"] == [_v1_device()]
    assert (stored["spec"]["driver"], stored["spec"]["pool"], stored["spec"]["allNodes"]) == (
        DRIVER,
        {"name": pool, "generation": 1, "resourceSliceCount": 1},
        True,
    )


def test_v1beta1_is_served_only_where_the_minor_still_has_it(kube: Kube, cell: Cell) -> None:
    minor = load_matrix().minor(cell.minor)
    if cell.profile not in minor.profiles:
        skip(provider_unmet(f"the cell's gate profile {cell.profile!r} is not one of versions.toml's"))
    asked = minor.profile(cell.profile).runtime_config.get("resource.k8s.io/v1beta1") == "true"
    served = asked and resource_v1beta1_served(cell.number)

    status, _ = kube.raw_get("/apis/resource.k8s.io/v1beta1")
    _, group = kube.raw_get("/apis/resource.k8s.io")

    assert status == (200 if served else 404)
    versions = {v["version"] for v in json.loads(group)["versions"]}
    assert ("v1beta1" in versions) == served
    assert "v1" in versions
