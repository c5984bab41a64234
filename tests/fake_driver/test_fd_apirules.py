"""The 1.38 rules as pure checks (fake_driver.rendering.apirules): each finds its planted shape with the
field and upstream's message, none applies before 1.38, the fake driver renders nothing any rule
rejects (every personality, profile and device layout), and a planted violation makes the
render refuse with one line. The same rules against a real 1.38 API server:
suites/fake_driver/test_rules_1_38.py."""

from __future__ import annotations

from typing import Any

import pytest

from fake_driver.core.errors import UnsupportedError
from fake_driver.facts.personalities import PERSONALITIES
from fake_driver.facts.profiles import PROFILES
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.apirules import (
    DRIVER_PREFIX,
    NODE_SELECTOR_TERMS,
    RULES,
    SLASHES,
    VERSION_DIGITS,
    claim_violations,
    slice_violations,
)
from fake_driver.rendering.slices import render_node

V137, V138 = (1, 37), (1, 38)
DRIVER = "gpu.example.com"
TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}


def _slice(**device: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": DRIVER, "devices": [{"name": "gpu-0", **device}]}
    if "nodeSelector" in device:
        spec["perDeviceNodeSelection"] = True
    return spec


PLANTED = {
    SLASHES.id: _slice(attributes={"a.example.com/b/c": {"int": 1}}),
    NODE_SELECTOR_TERMS.id: _slice(nodeSelector={"nodeSelectorTerms": [TERM, TERM]}),
    VERSION_DIGITS.id: _slice(attributes={"fw": {"version": "1.2.1234567890123456789"}}),
    DRIVER_PREFIX.id: _slice(capacity={f"{DRIVER}/memory": {"value": "1Gi"}}),
}
EXPECTED = {
    SLASHES.id: ("spec.devices[0].attributes", "must not contain more than one slash"),
    NODE_SELECTOR_TERMS.id: (
        "spec.devices[0].nodeSelector.nodeSelectorTerms",
        "must have exactly one node selector term",
    ),
    VERSION_DIGITS.id: (
        "spec.devices[0].attributes[fw].version",
        "must be a string compatible with semver.org spec 2.0.0, with at most 18 digits in numbers",
    ),
    DRIVER_PREFIX.id: (
        "spec.devices[0].capacity",
        'use unqualified "memory", the driver name is added implicitly',
    ),
}


@pytest.mark.parametrize("rule", [r.id for r in RULES])
def test_each_rule_finds_its_planted_slice_on_1_38_only(rule: str) -> None:
    [v] = slice_violations(PLANTED[rule], V138)

    assert (v.rule.id, v.field, v.message) == (rule, *EXPECTED[rule])
    assert slice_violations(PLANTED[rule], V137) == []


def test_what_1_38_still_accepts_is_not_flagged() -> None:
    ok = _slice(
        attributes={
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},  # another domain: fine
            "fw": {"version": "1.2.123456789012345678-rc.1+build.1234567890123456789"},  # 18 digits
        },
        capacity={"memory": {"value": "1Gi"}},
        nodeSelector={"nodeSelectorTerms": [TERM]},
    )
    assert slice_violations(ok, V138) == []
    # The helper's rule is the driver's own check; the API server does not make it.
    assert slice_violations(PLANTED[DRIVER_PREFIX.id], V138, helper=False) == []


def test_claim_names_with_two_slashes_in_constraints_and_capacity_requests() -> None:
    spec = {
        "devices": {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": "c", "capacity": {"requests": {"x/y/z": "1"}}}},
                {"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "c"}]},
            ],
            "constraints": [{"matchAttribute": "d.example.com/e/f"}, {"distinctAttribute": "ok.io/name"}],
        }
    }

    found = [(v.rule.id, v.field, v.value) for v in claim_violations(spec, V138, "spec.spec")]

    assert found == [
        (SLASHES.id, "spec.spec.devices.constraints[0].matchAttribute", "d.example.com/e/f"),
        (SLASHES.id, "spec.spec.devices.requests[0].exactly.capacity.requests", "x/y/z"),
    ]
    assert claim_violations(spec, V137) == []


def _pools() -> list[dict[str, Any]]:
    """One pool per personality x profile, plus each MIG mode a personality and profile allow,
    consumable capacity and partitions where the personality has them."""
    pools: list[dict[str, Any]] = []
    for name, p in sorted(PERSONALITIES.items()):
        for key, profile in sorted(PROFILES.items()):
            base = {"name": f"p{len(pools)}", "count": 1, "profile": key, "gpus": 2, "personality": name}
            pools.append(base)
            if p.is_nvidia and profile.mig_capable:
                layout = [profile.mig_profiles[0].name]
                pools.append({**base, "name": f"p{len(pools)}", "mig": {"mode": "static", "layout": layout}})
                if p.supports_dynamic_mig:
                    pools.append({**base, "name": f"p{len(pools)}", "mig": "dynamic"})
            if p.supports_consumable_capacity:
                pools.append({**base, "name": f"p{len(pools)}", "consumable_capacity": True})
            if not p.is_nvidia:
                pools.append({**base, "name": f"p{len(pools)}", "partitions": 2})
    return pools


def test_the_fake_driver_renders_nothing_1_38_rejects() -> None:
    fleet = fleet_from_dict({"pools": _pools()})

    rendered = [render_node(node, V138) for node in fleet.nodes]

    slices = [s for r in rendered for s in r.slices]
    devices = [d for s in slices for d in s["spec"].get("devices", ())]
    assert [v.line() for s in slices for v in slice_violations(s["spec"], V138)] == []
    # What the rules look at is there: names, versions, capacities from every personality.
    assert {r.driver for r in rendered} == {p.driver for p in PERSONALITIES.values()}
    assert sum(1 for d in devices for a in d["attributes"].values() if "version" in a) > len(devices)
    assert any("/" in name for d in devices for name in d["attributes"])


def test_a_planted_violation_makes_the_render_refuse_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_driver.rendering import example_devices

    real = example_devices.example_gpu

    def planted(pool: Any, gpu: Any) -> Any:
        g = real(pool, gpu)
        d = g.devices[0]
        bad = {**d, "attributes": {**d["attributes"], f"{DRIVER}/model": {"string": "x"}}}
        return type(g)(g.gpu, (bad, *g.devices[1:]), g.records, g.counter_set)

    monkeypatch.setattr("fake_driver.rendering.slices.example_gpu", planted)
    [node] = fleet_from_dict(
        {
            "pools": [
                {
                    "name": "ex",
                    "count": 1,
                    "personality": "example-v0.4",
                    "profile": "h100-80gb-hbm3",
                    "gpus": 1,
                }
            ]
        }
    ).nodes

    assert render_node(node, V137).slices  # 1.37's helper publishes it
    with pytest.raises(UnsupportedError) as err:
        render_node(node, V138)

    assert str(err.value) == (
        f"Kubernetes 1.38 rejects spec.devices[0].attributes '{DRIVER}/model': use unqualified "
        f'"model", the driver name is added implicitly (resourceslice helper, {DRIVER_PREFIX.source})'
    )
