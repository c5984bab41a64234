"""`dra-harness scan --target 1.38` on a cluster of an older minor: every shape 1.38 newly
rejects, planted here (the older API server takes them all), is one finding with its field,
upstream's message and source line; a component whose --feature-gates names the removed
DynamicResourceAllocation, or sets a gate 1.38 locks to another value, is one finding too. The
same shapes against the 1.38 API server: suites/fake_driver/test_rules_1_38.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_driver.rendering.apirules import DRIVER_PREFIX, NODE_SELECTOR_TERMS, SLASHES, VERSION_DIGITS
from fixtures.planted import DRIVER, planted_component, planted_slices, planted_template
from fixtures.requirements import api_unserved, provider_unmet, skip
from fixtures.scan import run_scan
from harness.clusters.base import Cell, Cluster
from harness.clusters.local.upgrade import served_kinds
from harness.controlplane.build import binary_path
from harness.core.upgrade_facts import GATE_REMOVALS
from harness.core.versions import load_matrix, minor_number
from harness.kit.kube import Kube
from harness.kit.objects import Created
from harness.scan.shapes import DEPRECATED_METRIC, DEPRECATED_SOURCE

pytestmark = [
    pytest.mark.feature_gate("DRAPartitionableDevices"),  # else the per-device nodeSelector is dropped
    pytest.mark.fake_driver_only("cluster to itself (planted slices of a driver of its own)"),
]

TARGET = "1.38"
FIELD_OF = {
    SLASHES.id: ("spec.devices[0].attributes", "'a.example.com/b/c'"),
    NODE_SELECTOR_TERMS.id: ("spec.devices[0].nodeSelector.nodeSelectorTerms", "'2'"),
    VERSION_DIGITS.id: ("spec.devices[0].attributes[fw].version", "'1234567890123456789.0.0'"),
    DRIVER_PREFIX.id: ("spec.devices[0].capacity", f"'{DRIVER}/memory'"),
}
RULES = {r.id: r for r in (SLASHES, NODE_SELECTOR_TERMS, VERSION_DIGITS, DRIVER_PREFIX)}


def test_the_1_38_target_scan_finds_every_planted_shape_and_component_flag(
    cluster: Cluster, cell: Cell, namespace: str, objects: Created, tmp_path: Path
) -> None:
    if minor_number(cell.minor) >= minor_number(TARGET):
        skip(provider_unmet(f"the cluster runs {cell.minor}: scan --target {TARGET} needs an older minor"))
    slices = planted_slices(namespace)
    for body in slices.values():
        objects.create(body)  # the older server takes every shape
    objects.create(planted_template("two-slashes", namespace))
    locked = "DRADeviceBindingConditions"  # GA and locked to true at v1.38.0-beta.0
    objects.create(
        planted_component("old-flags", namespace, f"DynamicResourceAllocation=true,{locked}=false")
    )

    code, output, report = run_scan(cluster.kubeconfig, tmp_path / "scan.json", "--target", TARGET)

    mine = {f"resourceslice/{s['metadata']['name']}" for s in slices.values()}
    mine |= {f"resourceclaimtemplate/{namespace}/two-slashes", f"deployment/{namespace}/old-flags"}
    found = [
        (f["severity"], f["check"], f["subject"], f["message"])
        for f in report["findings"]  # type: ignore[attr-defined]
        if f["subject"] in mine
    ]
    assert code == 3, output  # NOT READY

    def shape(rule: str, severity: str, verb: str) -> tuple[str, str, str, str]:
        field, value = FIELD_OF[rule]
        r = RULES[rule]
        message = r.message.format(id="memory")
        return (
            severity,
            "rejected-shape",
            f"resourceslice/{slices[rule]['metadata']['name']}",
            f'{field} = {value}: {TARGET} {verb} it, "{message}" ({r.source})',
        )

    [removal] = GATE_REMOVALS
    where = f"deployment/{namespace}/old-flags container scheduler: --feature-gates"
    flags = [
        (
            "BLOCKING",
            "gate-flag",
            f"deployment/{namespace}/old-flags",
            f"{where} DynamicResourceAllocation=true: {TARGET} has no such gate, the component exits with "
            '"unrecognized feature gate: DynamicResourceAllocation" '
            f"(k8s.io/component-base featuregate/feature_gate.go:421 @v0.38.0-beta.0; {removal.source})",
        )
    ]
    if binary_path(load_matrix().minor(TARGET)).exists():  # the lock needs 1.38's gate table
        flags.insert(
            0,
            (
                "BLOCKING",
                "gate-flag",
                f"deployment/{namespace}/old-flags",
                f"{where} {locked}=false: {TARGET} locks it, the component exits with "
                f'"cannot set feature gate {locked} to false, feature is locked to true" '
                "(k8s.io/component-base featuregate/feature_gate.go:426 @v0.38.0-beta.0)",
            ),
        )
    template = (
        "BLOCKING",
        "rejected-shape",
        f"resourceclaimtemplate/{namespace}/two-slashes",
        "spec.spec.devices.constraints[0].matchAttribute = 'a.example.com/b/c': "
        f'{TARGET} rejects it, "must not contain more than one slash" ({SLASHES.source})',
    )
    # Blocking first, then warnings; by check, then subject (harness.scan.cluster sorts them).
    expected = sorted(
        [
            *flags,
            shape(SLASHES.id, "BLOCKING", "rejects"),
            shape(NODE_SELECTOR_TERMS.id, "BLOCKING", "rejects"),
            shape(VERSION_DIGITS.id, "BLOCKING", "rejects"),
            template,
            shape(DRIVER_PREFIX.id, "WARNING", "helper refuses"),
        ],
        key=lambda f: (f[0] != "BLOCKING", f[1], f[2]),
    )
    assert found == expected
    # The CLI prints each on its own line.
    for severity, check, subject, message in found:
        assert f"{severity:<8} {check:<26} {subject}: {message}" in output.splitlines()


def test_the_1_38_target_scan_finds_a_client_of_resource_v1beta1(
    cluster: Cluster, cell: Cell, kube: Kube, tmp_path: Path
) -> None:
    """A client that only reads v1beta1 leaves no managedFields; the API server's gauge of
    requested deprecated APIs still names the version and resource."""
    if minor_number(cell.minor) >= minor_number(TARGET):
        skip(provider_unmet(f"the cluster runs {cell.minor}: scan --target {TARGET} needs an older minor"))
    if "resourceslices" not in served_kinds(kube, "resource.k8s.io/v1beta1"):
        skip(api_unserved(cell, "resource.k8s.io/v1beta1"))
    status, _ = kube.raw_get("/apis/resource.k8s.io/v1beta1/resourceslices?limit=1")
    assert status == 200

    code, output, report = run_scan(cluster.kubeconfig, tmp_path / "scan.json", "--target", TARGET)

    found = [
        (f["severity"], f["message"])
        for f in report["findings"]  # type: ignore[attr-defined]
        if (f["check"], f["subject"]) == ("api-client", "resource.k8s.io/v1beta1/resourceslices")
    ]
    assert code == 3, output
    assert found == [
        (
            "BLOCKING",
            "a client requested resource.k8s.io/v1beta1 resourceslices since the API server started; "
            f"{TARGET} no longer serves it ({DEPRECATED_METRIC}, {DEPRECATED_SOURCE})",
        )
    ]
