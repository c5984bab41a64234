"""Fleet description (YAML) and its validation.

    personality: nvidia-v25.12          # default for pools that do not set one
    pools:
      - name: h100
        count: 2                        # nodes h100-0, h100-1 (or: nodes: [a, b])
        profile: h100-80gb-hbm3
        gpus: 8
        personality: nvidia-v0.4
        mig: {mode: static, layout: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb], gpus: [0, 1]}
        device_plugin: true             # legacy stack advertises nvidia.com/gpu here too
        time_slicing_replicas: 4        # its sharing.timeSlicing replicas: gpus x 4 nvidia.com/gpu
        dra: true                       # false: a pool still on the device plugin alone (no slices)
        consumable_capacity: false      # shared devices (example driver only)
        partitions: 0                   # N partitions + a full device per GPU (example driver only)
        device_status: false            # the kubelet plugin writes the claims' status.devices
        driver_version: "580.95.05"
        cuda_driver_version: "13.0"
    raw_pools: [...]                    # slices replayed verbatim (fake_driver.fleetspec.rawpools)
    device_classes: [...]               # the raw pools' drivers' own DeviceClasses

Node names are DNS subdomains (RFC 1123), as the API server requires. Limits, so a typo
cannot make a render take gigabytes: at most MAX_NODES_PER_FLEET (5,000) nodes in a fleet and
MAX_GPUS_PER_NODE (32) GPUs on a node.

Every error is one line naming the bad value and the valid choices.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, cast

import yaml

from fake_driver.core.errors import FleetError, UnknownChoiceError
from fake_driver.core.paths import not_a_regular_file
from fake_driver.facts.personalities import DEFAULT_PERSONALITY, PERSONALITIES, Personality, get_personality
from fake_driver.facts.profiles import GpuProfile, MigPlacement, get_profile, place_layout
from fake_driver.fleetspec.rawpools import RawPool, parse_device_classes, parse_raw_pool

MigMode = Literal["none", "static", "dynamic"]
MIG_MODES: tuple[str, ...] = ("none", "static", "dynamic")
MAX_GPUS_PER_NODE = 32
MAX_NODES_PER_FLEET = 5_000
MAX_NODE_NAME = 253
MAX_REPLICAS = 64  # time-slicing replicas per GPU, so a typo cannot advertise millions
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

# NVIDIA kernel-driver defaults (software installed on the node, not GPU hardware).
DEFAULT_DRIVER_VERSION = "580.95.05"
DEFAULT_CUDA_DRIVER_VERSION = "13.0"

_FLEET_FIELDS = ("personality", "pools", "raw_pools", "device_classes")
_POOL_FIELDS = (
    "name",
    "nodes",
    "count",
    "profile",
    "gpus",
    "personality",
    "mig",
    "device_plugin",
    "time_slicing_replicas",
    "dra",
    "consumable_capacity",
    "partitions",
    "device_status",
    "driver_version",
    "cuda_driver_version",
)
_MIG_FIELDS = ("mode", "layout", "gpus", "enabled")


@dataclass(frozen=True)
class MigConfig:
    mode: MigMode = "none"
    # static: the MIG devices created on every MIG-enabled GPU, already placed.
    placements: tuple[MigPlacement, ...] = ()
    # GPU indexes with MIG mode on; None = all.
    gpus: tuple[int, ...] | None = None
    # dynamic on parts that need a reset to toggle MIG (Ampere): is MIG mode on?
    enabled: bool = True

    def applies_to(self, gpu_index: int) -> bool:
        return self.mode != "none" and (self.gpus is None or gpu_index in self.gpus)


@dataclass(frozen=True)
class FleetPool:
    name: str
    node_names: tuple[str, ...]
    profile: GpuProfile
    gpus: int
    personality: Personality
    mig: MigConfig = MigConfig()
    device_plugin: bool = False
    # The device plugin's time-slicing (sharing.timeSlicing.resources[].replicas): it advertises
    # gpus x replicas of nvidia.com/gpu, so that many pods share the GPUs (fake_driver.publishing.legacy).
    time_slicing_replicas: int = 1
    # False: not migrated yet; the device plugin alone serves the pool, the driver publishes nothing.
    dra: bool = True
    consumable_capacity: bool = False
    # --gpu-partitions: per GPU a counter set, N partition devices and a full one (example only).
    partitions: int = 0
    # The kubelet plugin writes ResourceClaim status.devices (kubeletplugin/devicestatus.py).
    device_status: bool = False
    driver_version: str = DEFAULT_DRIVER_VERSION
    cuda_driver_version: str = DEFAULT_CUDA_DRIVER_VERSION


@dataclass(frozen=True)
class NodeSpec:
    name: str
    pool: FleetPool


@dataclass(frozen=True)
class Fleet:
    pools: tuple[FleetPool, ...]
    # Slices replayed verbatim (fake_driver.fleetspec.rawpools): not in `nodes`, which are the personalities'.
    raw_pools: tuple[RawPool, ...] = ()
    device_classes: tuple[dict[str, Any], ...] = ()

    @property
    def raw_node_names(self) -> tuple[str, ...]:
        return tuple(n for p in self.raw_pools for n in p.node_names)

    @property
    def node_pools(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(pool, its nodes) of every pool, raw pools too: the Nodes a cluster needs."""
        raw = tuple((r.name, r.node_names) for r in self.raw_pools)
        return tuple((p.name, p.node_names) for p in self.pools) + raw

    @cached_property
    def nodes(self) -> tuple[NodeSpec, ...]:
        return tuple(NodeSpec(n, p) for p in self.pools for n in p.node_names)

    @cached_property
    def _by_name(self) -> dict[str, NodeSpec]:
        return {n.name: n for n in self.nodes}

    def node(self, name: str) -> NodeSpec:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownChoiceError("node", name, sorted(self._by_name)) from None

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    @property
    def drivers(self) -> tuple[str, ...]:
        return tuple(sorted({p.personality.driver for p in self.pools}))


def node_name_problem(name: str) -> str:
    """Why `name` cannot be a Node's name ("" when it can)."""
    if len(name) <= MAX_NODE_NAME and _DNS_SUBDOMAIN.fullmatch(name):
        return ""
    return (
        f"node name {name!r} is not a DNS subdomain (RFC 1123): lowercase letters, digits, '-' and '.', "
        f"starting and ending with a letter or digit, at most {MAX_NODE_NAME} characters"
    )


# --- loading -----------------------------------------------------------------------------


def load_fleet(path: str | Path) -> Fleet:
    kind = not_a_regular_file(Path(path))  # a FIFO would block the read, /dev/zero never end
    if kind:
        raise FleetError(f"fleet file {path} is {kind}, not a file")
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise FleetError(f"cannot read fleet file {path}: {e.strerror}") from None
    return parse_fleet(text, source=str(path))


def parse_fleet(text: str, source: str = "<fleet>") -> Fleet:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise FleetError(f"{source}: not valid YAML: {' '.join(str(e).split())}") from None
    return fleet_from_dict(data, source)


def fleet_from_dict(data: Any, source: str = "<fleet>") -> Fleet:
    if not isinstance(data, Mapping):
        raise FleetError(f"{source}: expected a mapping with 'pools'")
    _check_fields(data, _FLEET_FIELDS, source, "fleet field")
    default_personality = str(data.get("personality", DEFAULT_PERSONALITY))
    listed = data.get("pools", [])
    if not isinstance(listed, Sequence) or isinstance(listed, str):
        raise FleetError(f"{source}: 'pools' must be a list")
    pools = tuple(_pool(raw, i, default_personality, source) for i, raw in enumerate(listed))
    raws = data.get("raw_pools", [])
    if not isinstance(raws, Sequence) or isinstance(raws, str):
        raise FleetError(f"{source}: 'raw_pools' must be a list")
    raw_pools = tuple(parse_raw_pool(raw, i, source, _node_names) for i, raw in enumerate(raws))
    if not pools and not raw_pools:
        raise FleetError(f"{source}: 'pools' must be a non-empty list")
    every: tuple[FleetPool | RawPool, ...] = (*pools, *raw_pools)
    total = sum(len(p.node_names) for p in every)
    if total > MAX_NODES_PER_FLEET:
        raise FleetError(f"{source}: {total} nodes; a fleet has at most {MAX_NODES_PER_FLEET}")
    seen: dict[str, str] = {}
    for p in every:
        for n in p.node_names:
            if n in seen:
                raise FleetError(f"{source}: node {n!r} is in pools {seen[n]!r} and {p.name!r}")
            seen[n] = p.name
    classes = parse_device_classes(data.get("device_classes", []), source)
    return Fleet(pools, raw_pools, classes)


def _check_fields(raw: Mapping[str, Any], valid: tuple[str, ...], where: str, what: str = "field") -> None:
    for key in raw:
        if key not in valid:
            raise UnknownChoiceError(what, key, valid, where)


def _pool(raw: Any, i: int, default_personality: str, source: str) -> FleetPool:
    if not isinstance(raw, Mapping):
        raise FleetError(f"{source}: pools[{i}] must be a mapping")
    name = str(raw.get("name", f"pool-{i}"))
    where = f"{source}: pool {name!r}"
    _check_fields(raw, _POOL_FIELDS, where, "pool field")
    for required in ("profile", "gpus"):
        if required not in raw:
            raise FleetError(f"{where}: missing required field {required!r}")
    try:
        profile = get_profile(str(raw["profile"]))
        personality = get_personality(str(raw.get("personality", default_personality)))
    except UnknownChoiceError as e:
        raise UnknownChoiceError(e.what, e.value, e.choices, where) from None
    gpus = _int(raw["gpus"], f"{where}: gpus", 1, MAX_GPUS_PER_NODE)
    nodes = _node_names(raw, name, where)
    mig = _mig(raw.get("mig"), profile, personality, gpus, where)
    consumable = bool(raw.get("consumable_capacity", False))
    if consumable and not personality.supports_consumable_capacity:
        capable = sorted(n for n, p in PERSONALITIES.items() if p.supports_consumable_capacity)
        raise FleetError(
            f"{where}: personality {personality.name} does not publish shared devices "
            f"(consumable_capacity); personalities that do: {', '.join(capable)}"
        )
    if consumable and mig.mode != "none":
        raise FleetError(f"{where}: consumable_capacity cannot be combined with MIG")
    partitions = _partitions(raw, personality, mig, where)
    dra, device_plugin = _bool(raw, "dra", True, where), _bool(raw, "device_plugin", False, where)
    if not dra and (not device_plugin or mig.mode != "none" or consumable or partitions):
        raise FleetError(f"{where}: dra: false is a device-plugin pool: it needs device_plugin: true, no mig")
    replicas = _int(raw.get("time_slicing_replicas", 1), f"{where}: time_slicing_replicas", 1, MAX_REPLICAS)
    if replicas > 1 and not device_plugin:
        raise FleetError(
            f"{where}: time_slicing_replicas is the device plugin's: it needs device_plugin: true"
        )
    return FleetPool(
        name=name,
        node_names=nodes,
        profile=profile,
        gpus=gpus,
        personality=personality,
        mig=mig,
        device_plugin=device_plugin,
        time_slicing_replicas=replicas,
        dra=dra,
        consumable_capacity=consumable,
        partitions=partitions,
        device_status=_bool(raw, "device_status", False, where),
        driver_version=_version(raw, "driver_version", DEFAULT_DRIVER_VERSION, where),
        cuda_driver_version=_version(raw, "cuda_driver_version", DEFAULT_CUDA_DRIVER_VERSION, where),
    )


# NVML's version text: one to three dot-separated numbers (semver() reads them as integers).
_VERSION = re.compile(r"\d{1,9}(\.\d{1,9}){0,2}")


def _version(raw: Mapping[str, Any], key: str, default: str, where: str) -> str:
    """A YAML timestamp (or any non-version) here was a traceback in every reader of the fleet
    (issue 41); a number (13.0) reads as its text, as before."""
    value = raw.get(key, default)
    text = str(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else ""
    if not _VERSION.fullmatch(text):
        got = f"the YAML timestamp {value} (quote it)" if isinstance(value, datetime.date) else repr(value)
        raise FleetError(f"{where}: {key} must be a version like {default}, got {got}")
    return text


def _partitions(raw: Mapping[str, Any], personality: Personality, mig: MigConfig, where: str) -> int:
    # At most 80 (80Gi / 1Gi): a partition's memory must stay >= 1Gi (EX gpu.go memoryCapacity).
    n = _int(raw.get("partitions", 0), f"{where}: partitions", 0, 80)
    if n and not personality.supports_partitions:
        capable = sorted(k for k, p in PERSONALITIES.items() if p.supports_partitions)
        raise FleetError(
            f"{where}: personality {personality.name} has no GPU partitions; "
            f"personalities that do: {', '.join(capable)}"
        )
    if n and mig.mode != "none":
        raise FleetError(f"{where}: partitions cannot be combined with MIG")
    return n


def _bool(raw: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise FleetError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def _int(value: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise FleetError(f"{what} must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def _node_names(raw: Mapping[str, Any], pool: str, where: str) -> tuple[str, ...]:
    if "nodes" in raw and "count" in raw:
        raise FleetError(f"{where}: set either 'nodes' or 'count', not both")
    if "nodes" in raw:
        nodes = raw["nodes"]
        if not isinstance(nodes, Sequence) or isinstance(nodes, str) or not nodes:
            raise FleetError(f"{where}: 'nodes' must be a non-empty list of node names")
        if len(nodes) > MAX_NODES_PER_FLEET:
            raise FleetError(f"{where}: {len(nodes)} nodes; a fleet has at most {MAX_NODES_PER_FLEET}")
        names = tuple(str(n) for n in nodes)
    else:
        count = _int(raw.get("count", 1), f"{where}: count", 1, MAX_NODES_PER_FLEET)
        names = tuple(f"{pool}-{k}" for k in range(count))
    for name in names:
        problem = node_name_problem(name)
        if problem:
            raise FleetError(f"{where}: {problem}")
    return names


def _mig(raw: Any, profile: GpuProfile, personality: Personality, gpus: int, where: str) -> MigConfig:
    if raw is None:
        return MigConfig()
    if isinstance(raw, str):
        raw = {"mode": raw}
    if not isinstance(raw, Mapping):
        raise FleetError(f"{where}: 'mig' must be a mapping")
    _check_fields(raw, _MIG_FIELDS, where, "mig field")
    mode = str(raw.get("mode", "none"))
    if mode not in MIG_MODES:
        raise UnknownChoiceError("MIG mode", mode, MIG_MODES, where)
    if mode == "none":
        return MigConfig()
    if not profile.mig_capable:
        raise FleetError(f"{where}: profile {profile.key} is not MIG-capable")
    if mode == "dynamic" and not personality.supports_dynamic_mig:
        raise FleetError(
            f"{where}: personality {personality.name} has no DynamicMIG (needs nvidia-v25.12 or later)"
        )
    sel: tuple[int, ...] | None = None
    if "gpus" in raw:
        sel = tuple(_int(g, f"{where}: mig.gpus entry", 0, gpus - 1) for g in raw["gpus"])
    placements: tuple[MigPlacement, ...] = ()
    if mode == "static":
        layout = raw.get("layout")
        if not isinstance(layout, Sequence) or isinstance(layout, str):
            raise FleetError(f"{where}: static MIG needs 'layout', a list of MIG profile names")
        placements = place_layout(profile, [str(x) for x in layout], where)
    elif "layout" in raw:
        raise FleetError(f"{where}: 'layout' is only valid with mig mode static")
    return MigConfig(
        mode=cast(MigMode, mode), placements=placements, gpus=sel, enabled=bool(raw.get("enabled", True))
    )
