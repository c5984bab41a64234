"""Offline CEL evaluation of DRA selectors, with the Kubernetes quantity/semver extensions."""

from __future__ import annotations

import pytest

from harness.kit.cel import Outcome, count_matches, evaluate

DRIVER = "gpu.nvidia.com"
H100 = {
    "name": "gpu-0",
    "attributes": {
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "type": {"string": "gpu"},
        "driverVersion": {"version": "580.95.5"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        "index": {"int": 0},
    },
    # NVML memory.Total of an H100 80GB HBM3 (fake_driver.profiles): less than 80Gi.
    "capacity": {"memory": {"value": "81559Mi"}},
}
L4 = {
    "name": "gpu-1",
    "attributes": {
        "productName": {"string": "NVIDIA L4"},
        "type": {"string": "gpu"},
        "driverVersion": {"version": "570.0.0-rc.1"},
    },
    "capacity": {"memory": {"value": "24Gi"}},
}


@pytest.mark.parametrize(
    ("expression", "device", "outcome"),
    [
        ('device.driver == "gpu.nvidia.com"', H100, Outcome.MATCH),
        ('device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"', H100, Outcome.NO_MATCH),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', H100, Outcome.MATCH),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', L4, Outcome.NO_MATCH),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0', H100, Outcome.NO_MATCH),
        (
            'device.attributes["gpu.nvidia.com"].driverVersion.compareTo(semver("570.0.0")) >= 0',
            H100,
            Outcome.MATCH,
        ),
        # A pre-release sorts before its release.
        (
            'device.attributes["gpu.nvidia.com"].driverVersion.compareTo(semver("570.0.0")) >= 0',
            L4,
            Outcome.NO_MATCH,
        ),
        ('device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:00"', H100, Outcome.MATCH),
        ('device.attributes["gpu.nvidia.com"].index == 0', L4, Outcome.RUNTIME_ERROR),
        ('device.attributes["gpu.nvidia.com"].productName.matches("^NVIDIA H")', H100, Outcome.MATCH),
        ('device.attributes["gpu.nvidia.com"].productName ==', H100, Outcome.UNKNOWN),
    ],
    ids=[
        "driver",
        "product-mismatch",
        "quantity-ge",
        "quantity-lt",
        "h100-is-not-80Gi",
        "semver-ge",
        "semver-prerelease",
        "other-domain",
        "missing-attribute",
        "regex",
        "syntax-error",
    ],
)
def test_selector_outcomes(expression: str, device: dict[str, object], outcome: Outcome) -> None:
    assert evaluate(expression, DRIVER, device).outcome is outcome


def test_runtime_error_names_the_missing_attribute() -> None:
    result = evaluate('device.attributes["gpu.nvidia.com"].index == 0', DRIVER, L4)
    assert "index" in result.detail


def test_count_matches_requires_every_selector() -> None:
    devices = [(DRIVER, "n1", H100), (DRIVER, "n1", L4), ("other.example.com", "n2", L4)]
    counts = count_matches(
        ['device.driver == "gpu.nvidia.com"', 'device.attributes["gpu.nvidia.com"].index >= 0'], devices
    )
    assert counts == {Outcome.MATCH: 1, Outcome.NO_MATCH: 1, Outcome.RUNTIME_ERROR: 1, Outcome.UNKNOWN: 0}
