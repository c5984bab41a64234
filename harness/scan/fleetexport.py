"""`dra-harness fleet export`: a live cluster's GPU pools as a fake_driver fleet file, so
`cluster up --fleet` replays them locally (the suites, the scan and an upgrade rehearsal then
run on a replica of the user's pools).

Read, get/list only, page by page (`Kube.pages`), so memory grows with the number of distinct
node shapes, not with the cluster: per node only its pool and shape are kept.

    pool      the scan's pool detection (GKE, EKS, AKS, Karpenter, dra-harness.io/pool labels)
    shape     per node: the GPU driver of its slices, the GPU profile (productName matched to a
              fake_driver profile; device-plugin-only nodes: GPU Feature Discovery's
              nvidia.com/gpu.product label, else --default-profile), GPUs, MIG (static layout
              from the MIG devices' profiles, dynamic when the slices carry shared counters),
              device plugin (allocatable of the legacy name > 0) and DRA (slices) on or off
    fleet     one fleet pool per (pool, shape); a pool with several shapes is split (name-2, ...)
    personality  the driver's fake personalities, the one whose GPU class maps the legacy name
              as the cluster's classes do, the default personality first

    raw       nodes no personality and profile can describe (another vendor's driver, a GPU of
              an unknown product) are replayed from their slices (fake_driver.fleetspec.rawpools): one raw
              pool per (pool, slice structure), the first node's values, the drivers' own
              DeviceClasses with them; memory grows with the distinct structures

What no fleet field can say (no devices at all, a class that only a personality would bring)
is left out and listed as a comment at the top of the file, with why.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from fake_driver.core.errors import FakeDriverError
from fake_driver.facts.personalities import DEFAULT_PERSONALITY, PERSONALITIES, get_personality
from fake_driver.facts.profiles import PROFILES, GpuProfile
from fake_driver.fleetspec.fleet import fleet_from_dict
from harness.core.errors import HarnessError
from harness.kit import kinds
from harness.kit.kube import API_ERRORS, Kube, Obj
from harness.scan.checks import NO_POOL, detect_pools

GFD_PRODUCT = "nvidia.com/gpu.product"  # GPU Feature Discovery's node label
_GPU_NUMBER = re.compile(r"^gpu-(\d+)")
_DNS_LABEL = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class Shape:
    """What one node looks like to the fleet format."""

    driver: str  # "" for a node the device plugin alone serves
    profile: str  # fake_driver profile key, "" when none matches
    gpus: int
    mig_mode: str = "none"
    mig_layout: tuple[str, ...] = ()
    mig_gpus: tuple[int, ...] = ()
    device_plugin: bool = False
    dra: bool = False
    raw: tuple[str, ...] = ()  # slice structure digests (RawSlices) of a node replayed verbatim


@dataclass
class RawSlices:
    """Per node the structure digests of its slices, and one body per structure (the first)."""

    of_node: dict[str, list[str]] = field(default_factory=dict)
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, node: str, spec: Obj) -> None:
        digest = structure_digest(spec)
        self.of_node.setdefault(node, []).append(digest)
        if digest not in self.bodies:
            body = {"driver": spec["driver"], "devices": list(spec.get("devices") or [])}
            if spec.get("sharedCounters"):
                body["sharedCounters"] = list(spec["sharedCounters"])
            self.bodies[digest] = body

    def key(self, node: str) -> tuple[str, ...]:
        return tuple(sorted(self.of_node.get(node, ())))


def structure_digest(spec: Obj) -> str:
    """What a slice is made of, without values (UUIDs, serials differ on every node): driver,
    device names, attribute names and types, capacity names, counters consumed and shared."""

    def device(d: Obj) -> list[Any]:
        attrs = sorted((k, sorted(v)) for k, v in (d.get("attributes") or {}).items())
        counters = sorted(str(c.get("counterSet")) for c in d.get("consumesCounters") or [])
        return [d.get("name"), attrs, sorted(d.get("capacity") or {}), counters]

    shared = sorted(
        (str(c.get("name")), sorted(c.get("counters") or {})) for c in spec.get("sharedCounters") or []
    )
    shape = [spec.get("driver"), sorted((device(d) for d in spec.get("devices") or []), key=str), shared]
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class _NodeDevices:
    """One node's devices, gathered from its slices before its shape is known."""

    driver: str = ""
    products: Counter[str] = field(default_factory=Counter)
    gpu_numbers: set[int] = field(default_factory=set)
    mig_by_gpu: dict[int, list[str]] = field(default_factory=dict)
    counters: bool = False


@dataclass
class Export:
    fleet: dict[str, Any]
    notes: list[str]
    nodes: int

    def text(self, source: str) -> str:
        head = [
            f"# Exported by `dra-harness fleet export` from {source} on "
            f"{datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}: {self.nodes} node(s).",
            "# Replay it: dra-harness cluster up --fleet <this file>",
            *(f"# {line}" for line in self.notes),
        ]
        return "\n".join(head) + "\n" + yaml.safe_dump(self.fleet, sort_keys=False)


def _gpu_number(device: Obj) -> int | None:
    m = _GPU_NUMBER.match(str(device.get("name", "")))
    return int(m.group(1)) if m else None


def _attr(device: Obj, name: str) -> str:
    value = (device.get("attributes") or {}).get(name) or {}
    return str(value.get("string") or value.get("version") or value.get("int") or "")


def gather_slices(
    slices: Iterable[Obj], gpu_drivers: tuple[str, ...], raw: RawSlices | None = None
) -> dict[str, _NodeDevices]:
    """Per node: the GPU driver's devices, as numbers, products and MIG profiles; every node
    slice's structure into `raw`, for the nodes no personality describes."""
    out: dict[str, _NodeDevices] = {}
    for s in slices:
        spec = s.get("spec") or {}
        node = spec.get("nodeName")
        if node and raw is not None and spec.get("driver"):
            raw.add(node, spec)
        if not node or spec.get("driver") not in gpu_drivers:
            continue
        seen = out.setdefault(node, _NodeDevices(driver=spec["driver"]))
        seen.counters = seen.counters or bool(spec.get("sharedCounters"))
        for d in spec.get("devices") or []:
            number = _gpu_number(d)
            if number is None:
                continue
            seen.gpu_numbers.add(number)
            seen.products[_attr(d, "productName")] += 1
            seen.counters = seen.counters or bool(d.get("consumesCounters"))
            if _attr(d, "type") == "mig":
                seen.mig_by_gpu.setdefault(number, []).append(_attr(d, "profile"))
    return out


def profile_for(product: str) -> GpuProfile | None:
    """The fake_driver profile of an NVML product name (GFD writes it with '-' for ' ')."""
    wanted = product.replace("-", " ").strip().lower()
    return next((p for p in PROFILES.values() if p.product_name.replace("-", " ").lower() == wanted), None)


def node_shape(node: Obj, devices: _NodeDevices | None, resource: str, default_profile: str) -> Shape:
    allocatable = str(((node.get("status") or {}).get("allocatable") or {}).get(resource, "0"))
    legacy = int(allocatable) if allocatable.isdigit() else 0
    if devices is None or not devices.gpu_numbers:
        product = (node["metadata"].get("labels") or {}).get(GFD_PRODUCT, "")
        found = profile_for(product) if product else None
        profile = found.key if found else default_profile
        return Shape("", profile if legacy else "", legacy, device_plugin=legacy > 0)
    product = devices.products.most_common(1)[0][0]
    found = profile_for(product)
    layouts = {tuple(sorted(v)) for v in devices.mig_by_gpu.values()}
    mode = "none"
    layout: tuple[str, ...] = ()
    if devices.counters:
        mode = "dynamic"
    elif layouts:  # the fleet format has one layout per pool: the largest seen
        mode, layout = "static", max(layouts)
    ordered = sorted(devices.gpu_numbers)
    mig_gpus = tuple(ordered.index(n) for n in sorted(devices.mig_by_gpu)) if mode == "static" else ()
    if mig_gpus == tuple(range(len(ordered))):
        mig_gpus = ()  # every GPU: the fleet format's default
    return Shape(
        devices.driver,
        found.key if found else "",
        len(ordered),
        mode,
        layout,
        mig_gpus,
        device_plugin=legacy > 0,
        dra=True,
    )


def choose_personality(driver: str, mapped: bool) -> str:
    """The driver's personality whose GPU class maps the legacy name as the cluster's does."""
    named = [DEFAULT_PERSONALITY, *(n for n in PERSONALITIES if n != DEFAULT_PERSONALITY)]
    candidates = [n for n in named if get_personality(n).driver == driver]
    fitting = [n for n in candidates if bool(get_personality(n).gpu_class_extended_resource) == mapped]
    return (fitting or candidates or [""])[0]


def maps_legacy_name(classes: Iterable[Obj], driver: str, resource: str) -> bool:
    """Does a DeviceClass of `driver` carry extendedResourceName `resource`?"""
    for c in classes:
        spec = c.get("spec") or {}
        cel = " ".join(str((s.get("cel") or {}).get("expression", "")) for s in spec.get("selectors") or [])
        if spec.get("extendedResourceName") == resource and driver in cel:
            return True
    return False


def pool_name(pool: str, taken: set[str]) -> str:
    """A DNS label for the fleet pool (node names are built from it), unique in the file."""
    base = _DNS_LABEL.sub("-", pool.lower()).strip("-")[:40] or "pool"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _fleet_pool(name: str, shape: Shape, count: int, personality: str) -> dict[str, Any]:
    raw: dict[str, Any] = {"name": name, "count": count, "profile": shape.profile, "gpus": shape.gpus}
    if personality and personality != DEFAULT_PERSONALITY:
        raw["personality"] = personality
    if shape.mig_mode == "static":
        raw["mig"] = {"mode": "static", "layout": list(shape.mig_layout)}
        if shape.mig_gpus:
            raw["mig"]["gpus"] = list(shape.mig_gpus)
    elif shape.mig_mode == "dynamic":
        raw["mig"] = {"mode": "dynamic"}
    if shape.device_plugin:
        raw["device_plugin"] = True
    if not shape.dra:
        raw["dra"] = False
    return raw


def _unexportable(shape: Shape, personality: str) -> str:
    if shape.gpus == 0:
        return "no GPUs (no slices of a GPU driver, no device-plugin GPUs)"
    if shape.dra and not personality:
        return f"driver {shape.driver}: no fake personality publishes it"
    if not shape.profile:
        return "a GPU no fake_driver profile describes (productName unknown)"
    return ""


def personality_of(shape: Shape, classes: list[Obj], resource: str) -> str:
    """The personality that publishes `shape` ("" when none does)."""
    if not shape.dra:
        return DEFAULT_PERSONALITY
    return choose_personality(shape.driver, maps_legacy_name(classes, shape.driver, resource))


def build_fleet(
    counts: Counter[tuple[str, Shape]],
    classes: list[Obj],
    resource: str,
    rename_pools: bool,
    raw: RawSlices | None = None,
    redact: tuple[str, ...] = (),
) -> Export:
    """The fleet from (pool, shape) -> nodes; what cannot be expressed goes to the notes."""
    pools: list[dict[str, Any]] = []
    raw_pools: list[dict[str, Any]] = []
    notes: list[str] = []
    taken: set[str] = set()
    renamed: dict[str, str] = {}
    for (pool, shape), count in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1])):
        shown = renamed.setdefault(pool, f"pool-{len(renamed)}") if rename_pools else pool
        if shape.raw and raw is not None:
            slices = [raw.bodies[d] for d in shape.raw]
            raw_pools.append({"name": pool_name(shown, taken), "count": count, "slices": slices})
            continue
        personality = personality_of(shape, classes, resource)
        why = _unexportable(shape, personality)
        if why:
            if shape.gpus or shape.dra:
                notes.append(f"left out: {count} node(s) of pool {shown}: {why}")
            continue
        pools.append(_fleet_pool(pool_name(shown, taken), shape, count, personality if shape.dra else ""))
    if not pools and not raw_pools:
        raise HarnessError("no GPU pool to export: no node has GPUs of a known driver or the device plugin")
    fleet: dict[str, Any] = {"personality": DEFAULT_PERSONALITY, "pools": pools}
    if raw_pools:
        fleet["raw_pools"] = raw_pools
        drivers = {s["driver"] for p in raw_pools for s in p["slices"]}
        fleet["device_classes"] = raw_classes(classes, drivers, notes)
    if redact:
        fleet, notes = redacted(fleet, redact), [redacted(n, redact) for n in notes]
    try:
        fleet_from_dict(fleet, "the exported fleet")  # what cluster up will read: valid, or one line
    except FakeDriverError as err:
        raise HarnessError(f"the exported fleet would not load: {err}") from None
    return Export(fleet, notes, sum(counts.values()))


def redacted(value: Any, names: tuple[str, ...]) -> Any:
    """Every string value with each marked name replaced by redacted-<k> (keys are kept: they
    are API field and attribute names, not the user's)."""
    if isinstance(value, str):
        for k, name in enumerate(names, 1):
            value = value.replace(name, f"redacted-{k}")
        return value
    if isinstance(value, dict):
        return {key: redacted(v, names) for key, v in value.items()}
    if isinstance(value, list):
        return [redacted(v, names) for v in value]
    return value


def raw_classes(classes: Iterable[Obj], drivers: set[str], notes: list[str]) -> list[Obj]:
    """The DeviceClasses that select a raw driver's devices (their CEL names it) and that no
    personality installs: name and spec, nothing the server set."""
    faked = {get_personality(n).driver for n in PERSONALITIES}
    out: list[Obj] = []
    for c in classes:
        spec = c.get("spec") or {}
        cel = " ".join(str((s.get("cel") or {}).get("expression", "")) for s in spec.get("selectors") or [])
        named = sorted(d for d in drivers if d in cel)
        if not named:
            continue
        if set(named) & faked:
            notes.append(
                f"left out: DeviceClass {c['metadata']['name']}: a fake personality installs {named[0]}'s"
            )
            continue
        out.append({"metadata": {"name": c["metadata"]["name"]}, "spec": spec})
    return out


def export_fleet(
    kube: Kube,
    *,
    resource: str = "nvidia.com/gpu",
    gpu_drivers: tuple[str, ...] = ("gpu.nvidia.com",),
    pool_label: str | None = None,
    default_profile: str = "h100-80gb-hbm3",
    rename_pools: bool = False,
    redact: tuple[str, ...] = (),
) -> Export:
    """Read the cluster (paged) and build its fleet; one line if the server fails us."""
    raw = RawSlices()
    try:
        devices = gather_slices(kube.pages(*kinds.RESOURCE_SLICE), gpu_drivers, raw)
        classes = list(kube.pages(*kinds.DEVICE_CLASS))
        counts: Counter[tuple[str, Shape]] = Counter()
        for page in _node_pages(kube):
            pools = detect_pools(page, pool_label)
            for n in page:
                name = n["metadata"]["name"]
                pool = pools.of[name] if pools.of[name] != NO_POOL else "unlabelled"
                shape = node_shape(n, devices.get(name), resource, default_profile)
                counts[(pool, replayed_raw(shape, raw.key(name), classes, resource))] += 1
    except API_ERRORS as err:
        raise kube.failure(err) from None
    return build_fleet(counts, classes, resource, rename_pools, raw, redact)


def replayed_raw(shape: Shape, raw_key: tuple[str, ...], classes: list[Obj], resource: str) -> Shape:
    """A node no personality describes, with slices: replayed from them (a device-plugin shape
    is kept: its nvidia.com/gpu is what it has)."""
    if not raw_key or not _unexportable(shape, personality_of(shape, classes, resource)):
        return shape
    return Shape("", "", 0, raw=raw_key)


def _node_pages(kube: Kube) -> Iterator[list[Obj]]:
    page: list[Obj] = []
    for node in kube.pages(*kinds.NODE):
        page.append(node)
        if len(page) == 500:
            yield page
            page = []
    if page:
        yield page
