"""The DeviceClass field behind the bridge: what the API server does with extendedResourceName.
Upstream counterparts: kubernetes test/e2e/dra "extended resource" validation cases."""

from __future__ import annotations

import json

import pytest

from harness.clusters.base import Cell
from harness.core.expectations import invalid_extended_resource_name_message
from harness.kit import builders as b
from harness.kit.kube import ApiException, Kube
from harness.kit.objects import Created


@pytest.mark.feature_gate("DRAExtendedResource")
def test_an_invalid_extended_resource_name_is_rejected(namespace: str, objects: Created, cell: Cell) -> None:
    # An unprefixed name is a native resource, not an extended one; the message differs per
    # minor (harness.core.expectations).
    name = f"{namespace}-bad-name"
    with pytest.raises(ApiException) as err:
        objects.create(b.device_class(name, selectors=["true"], extended_resource_name="gpu"))

    status = json.loads(err.value.body or "{}")
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    [cause] = status["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("spec.extendedResourceName", "FieldValueInvalid")
    assert cause["message"] == invalid_extended_resource_name_message(cell.number, "gpu")


@pytest.mark.feature_gate("DRAExtendedResource", enabled=False)
def test_with_the_gate_off_the_extended_resource_name_is_dropped(
    kube: Kube, namespace: str, objects: Created
) -> None:
    # pkg/registry/resource/deviceclass/strategy.go dropDisabledDRAExtendedResourceFields @
    # v1.34.4: a new class loses the field while the gate is off, silently.
    name = f"{namespace}-dropped"
    objects.create(b.device_class(name, selectors=["true"], extended_resource_name="example.com/gpu"))

    stored = kube.get(b.resource_api(), "DeviceClass", name)

    assert stored["spec"] == {"selectors": [{"cel": {"expression": "true"}}]}
