"""The DeviceClass field behind the bridge: what the API server does with extendedResourceName.
Upstream counterparts: kubernetes test/e2e/dra "extended resource" validation cases."""

from __future__ import annotations

import json

import pytest

from harness.clusters.base import Cell
from harness.core.expectations import invalid_extended_resource_name_message
from harness.kit import builders as b
from harness.kit import kinds
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

    stored = kube.get(*kinds.DEVICE_CLASS, name)

    assert stored["spec"] == {"selectors": [{"cel": {"expression": "true"}}]}


def test_a_pod_asking_for_an_invalid_extended_resource_name_is_rejected(kube: Kube, namespace: str) -> None:
    """Upstream twin: test/e2e/dra/dra.go @ v1.37.2 "must reject pod with invalid extended
    resource name" (the Pod, where the test above rejects a DeviceClass). The messages are
    pkg/apis/core/validation/validation.go validateResourceName and ValidateContainerResourceName,
    the same @ v1.34.4, v1.35.4, v1.36.3 and v1.37.2."""
    pod = b.pod("bad", namespace, containers=[b.container(limits={"invalid_resource_name": "1"})])
    with pytest.raises(ApiException) as err:
        kube.create(pod)

    status = json.loads(err.value.body or "{}")
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    # Requests are defaulted from the limits first, so both are rejected, each twice.
    invalid = 'Invalid value: "invalid_resource_name": '
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
        (f"spec.containers[0].resources.{kind}[invalid_resource_name]", invalid + message)
        for kind in ("limits", "requests")
        for message in (
            "must be a standard resource type or fully qualified",
            "must be a standard resource for containers",
        )
    ]
    assert kube.list(*kinds.POD, namespace) == []
