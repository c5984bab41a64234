"""Offline CEL evaluation of DRA selectors, with the Kubernetes quantity/semver extensions."""

from __future__ import annotations

import time

import pytest

from harness.kit import cel
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
    # NVML memory.Total of an H100 80GB HBM3 (fake_driver.facts.profiles): less than 80Gi.
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
    assert counts == {
        Outcome.MATCH: 1,
        Outcome.NO_MATCH: 1,
        Outcome.RUNTIME_ERROR: 1,
        Outcome.UNKNOWN: 0,
        Outcome.OVER_LIMIT: 0,
    }


TEN = "[" + ",".join(str(i) for i in range(10)) + "]"


def nested(depth: int, body: str = "true") -> str:
    """A selector the API server accepts that is built to be slow: `depth` macros nested over a
    list of ten, 10**depth evaluations of the body."""
    return "".join(f"{TEN}.all(v{i}, " for i in range(depth)) + body + ")" * depth


def test_a_selector_built_to_be_slow_is_not_evaluated_past_the_limit() -> None:
    """Issue 41: one took 180 s on 32 devices; now its limit once, then not evaluated again."""
    expression = nested(6, 'device.driver == "gpu.nvidia.com"')
    devices = [(DRIVER, "n1", {**H100, "name": f"gpu-{i}"}) for i in range(32)]
    started = time.monotonic()
    counts = count_matches([expression], devices)
    took = time.monotonic() - started
    assert counts[Outcome.OVER_LIMIT] == 32, counts
    assert took < cel.TIME_LIMIT + 5, f"32 devices took {took:.1f} s"
    assert evaluate(expression, DRIVER, H100) == cel.Result(
        Outcome.OVER_LIMIT, f"over the cost limit: more than {cel.TIME_LIMIT:g} s"
    )
    assert cel.over_limit(['device.driver == "x"', expression]) == evaluate(expression, DRIVER, H100).detail


def test_the_cost_limit_counts_every_node_macros_included(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel, "_OVER", {})
    monkeypatch.setattr(cel, "COST_LIMIT", 500)
    assert evaluate(nested(1), DRIVER, H100).outcome is Outcome.MATCH  # ten bodies: well under 500
    assert evaluate(nested(3), DRIVER, H100) == cel.Result(
        Outcome.OVER_LIMIT, "over the cost limit: more than 500 steps"
    )
