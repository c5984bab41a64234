"""The driver's attribute inventory: per device kind (its `type` attribute, else "device"),
the attribute and capacity names it publishes with their types, compared with the fake
driver personality whose devices of that kind look most alike (rendered offline)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fake_driver.api.apilimits import parse_minor
from fake_driver.core.errors import FakeDriverError
from fake_driver.facts.personalities import PERSONALITIES
from fake_driver.fleetspec.fleet import fleet_from_dict
from fake_driver.rendering.slices import render_node
from harness.kit.kube import Obj

Shape = dict[str, str]  # name -> type (string, int, bool, version, quantity)


@dataclass
class KindInventory:
    kind: str
    devices: int
    attributes: Shape
    capacity: list[str]
    personality: str = ""  # the closest fake-driver personality, "" when none shares a name
    missing: list[str] = field(default_factory=list)  # the personality has them, the driver not
    extra: list[str] = field(default_factory=list)  # the driver has them, the personality not
    checked: str = ""  # how that personality was checked (its provenance)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def kind_of(device: Obj) -> str:
    t = (device.get("attributes") or {}).get("type", {})
    return str(t.get("string", "device"))


def shapes(devices: Iterable[Obj]) -> dict[str, tuple[int, Shape, set[str]]]:
    """kind -> (device count, attribute name -> type, capacity names)."""
    out: dict[str, tuple[int, Shape, set[str]]] = {}
    for d in devices:
        count, attrs, caps = out.get(kind_of(d), (0, {}, set()))
        for name, value in (d.get("attributes") or {}).items():
            attrs[name] = next(iter(value), "?")
        caps |= set(d.get("capacity") or {})
        out[kind_of(d)] = (count + 1, attrs, caps)
    return out


def _personality_shapes(name: str, minor: str) -> dict[str, tuple[int, Shape, set[str]]]:
    """Every device kind the personality renders: full GPUs, and MIG devices where it can."""
    out: dict[str, tuple[int, Shape, set[str]]] = {}
    for mig in (None, "dynamic", {"mode": "static", "layout": ["1g.10gb"], "gpus": [0]}):
        pool: dict[str, Any] = {"name": "p", "nodes": ["n"], "gpus": 1, "personality": name}
        pool["profile"] = "h100-80gb-hbm3"
        if mig is not None:
            pool["mig"] = mig
        try:
            node = fleet_from_dict({"pools": [pool]}).node("n")
            rendered = render_node(node, parse_minor(minor))
        except FakeDriverError:  # this personality has no such MIG mode
            continue
        for kind, (n, attrs, caps) in shapes(
            d for s in rendered.slices for d in s["spec"].get("devices", [])
        ).items():
            had = out.get(kind, (0, {}, set()))  # union over MIG modes: a full GPU gains capacities
            out[kind] = (had[0] + n, {**had[1], **attrs}, had[2] | caps)
    return out


def inventory(slices: Iterable[Obj], driver: str, minor: str) -> list[KindInventory]:
    mine = [d for s in slices if s["spec"]["driver"] == driver for d in s["spec"].get("devices") or []]
    fakes = {p: _personality_shapes(p, minor) for p in PERSONALITIES}
    out = []
    for kind, (count, attrs, caps) in sorted(shapes(mine).items()):
        names = set(attrs) | caps
        best, score = "", (0, 0)
        for p, kinds in fakes.items():
            if kind in kinds:
                theirs = set(kinds[kind][1]) | kinds[kind][2]
                alike = (len(names & theirs), -len(names ^ theirs))  # most shared, fewest different
                # a tie goes to the later personality: the newest, compared with a running plugin
                if alike[0] and (not best or alike >= score):
                    best, score = p, alike
        inv = KindInventory(kind, count, dict(sorted(attrs.items())), sorted(caps), best)
        if best:
            theirs = set(fakes[best][kind][1]) | fakes[best][kind][2]
            inv.missing, inv.extra = sorted(theirs - names), sorted(names - theirs)
            inv.checked = PERSONALITIES[best].provenance
        out.append(inv)
    return out
