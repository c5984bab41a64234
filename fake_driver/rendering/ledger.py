"""Physical-device ledger: which physical GPU every DRA device and every legacy unit is.

The scheduler cannot see that ``nvidia.com/gpu: 8`` in a Node's status and eight
``gpu.nvidia.com`` devices are the same eight GPUs. The ledger can, so tests can detect
over-promise (a GPU handed out twice).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from fake_driver.api.apilimits import Minor
from fake_driver.core.errors import UnknownChoiceError
from fake_driver.fleetspec.fleet import Fleet
from fake_driver.rendering.slices import PhysicalGpu, RenderedPool, render_node


@dataclass(frozen=True)
class Share:
    """A part of one physical GPU: its UUID and the memory slices covered."""

    node: str
    gpu_uuid: str
    memory_slices: frozenset[int]
    shareable: bool = False  # allowMultipleAllocations: several claims may hold it


@dataclass(frozen=True)
class Usage:
    owner: str  # e.g. "ns/pod" or "claim ns/name"
    share: Share


@dataclass(frozen=True)
class Conflict:
    node: str
    gpu_uuid: str
    owners: tuple[str, ...]


class Ledger:
    def __init__(self, pools: Iterable[RenderedPool], legacy: Mapping[str, int] | None = None) -> None:
        self._gpus: dict[str, tuple[PhysicalGpu, ...]] = {}
        self._dra: dict[tuple[str, str, str], Share] = {}
        for rp in pools:
            self._gpus[rp.node] = rp.gpus
            for d in rp.devices:
                self._dra[(rp.driver, rp.node, d.name)] = Share(
                    rp.node, d.gpu_uuid, d.memory_slices, d.shareable
                )
        self._legacy = dict(legacy or {})
        for node, n in self._legacy.items():
            if node not in self._gpus:
                raise UnknownChoiceError("node in legacy map", node, sorted(self._gpus))
            if n > len(self._gpus[node]):
                raise ValueError(f"node {node} has {len(self._gpus[node])} GPUs, cannot advertise {n}")

    @classmethod
    def for_fleet(cls, fleet: Fleet, minor: Minor, legacy: Mapping[str, int] | None = None) -> Ledger:
        """Render every node (no faults). ``legacy`` defaults to the pools' ``device_plugin``."""
        if legacy is None:
            legacy = {n.name: n.pool.gpus for n in fleet.nodes if n.pool.device_plugin}
        rendered = (render_node(n, minor) for n in fleet.nodes)
        # A device-plugin pool (dra: false) has the GPUs but publishes no DRA device for them.
        pools = (
            rp if fleet.node(rp.node).pool.dra else replace(rp, slices=(), devices=()) for rp in rendered
        )
        return cls(pools, legacy)

    def gpus(self, node: str) -> tuple[PhysicalGpu, ...]:
        return self._gpus[node]

    def _whole(self, node: str, gpu: PhysicalGpu) -> frozenset[int]:
        # A legacy unit is a whole GPU: every memory slice any DRA device of it uses.
        slices = {s for k, sh in self._dra.items() if sh.gpu_uuid == gpu.uuid for s in sh.memory_slices}
        return frozenset(slices or {0})

    def dra(self, driver: str, pool: str, device: str) -> Share:
        try:
            return self._dra[(driver, pool, device)]
        except KeyError:
            names = sorted(d for (dr, p, d) in self._dra if dr == driver and p == pool)
            raise UnknownChoiceError(f"device in pool {pool} of {driver}", device, names) from None

    def legacy_units(self, node: str) -> tuple[str, ...]:
        """Device IDs the NVIDIA device plugin would list: GPU UUIDs, first N GPUs."""
        return tuple(g.uuid for g in self._gpus[node][: self._legacy.get(node, 0)])

    def legacy(self, node: str, unit: str | int) -> Share:
        units = self.legacy_units(node)
        uuid = units[unit] if isinstance(unit, int) else unit
        if uuid not in units:
            raise UnknownChoiceError(f"legacy unit on {node}", unit, units)
        gpu = next(g for g in self._gpus[node] if g.uuid == uuid)
        return Share(node, uuid, self._whole(node, gpu))

    def double_advertised(self) -> dict[str, tuple[str, ...]]:
        """Per node, GPUs that both the device plugin and a DRA driver advertise."""
        dra_gpus: dict[str, set[str]] = defaultdict(set)
        for (_, node, _), sh in self._dra.items():
            dra_gpus[node].add(sh.gpu_uuid)
        out: dict[str, tuple[str, ...]] = {}
        for node in self._legacy:
            both = [u for u in self.legacy_units(node) if u in dra_gpus[node]]
            if both:
                out[node] = tuple(both)
        return out

    @staticmethod
    def conflicts(usages: Iterable[Usage]) -> list[Conflict]:
        """Physical GPUs whose overlapping parts are held by more than one owner
        (two holders of the same shareable device are fine)."""
        by_gpu: dict[tuple[str, str], list[Usage]] = defaultdict(list)
        for u in usages:
            by_gpu[(u.share.node, u.share.gpu_uuid)].append(u)
        out: list[Conflict] = []
        for (node, gpu), us in sorted(by_gpu.items()):
            owners: set[str] = set()
            for i, a in enumerate(us):
                for b in us[i + 1 :]:
                    if a.owner == b.owner or not (a.share.memory_slices & b.share.memory_slices):
                        continue
                    if a.share.shareable and b.share == a.share:
                        continue
                    owners.update((a.owner, b.owner))
            if owners:
                out.append(Conflict(node, gpu, tuple(sorted(owners))))
        return out

    def overcommit(self, node: str, legacy_in_use: int, dra_shares: Iterable[Share]) -> int:
        """GPUs promised beyond what the node has: legacy units in use plus GPUs touched by
        DRA allocations, minus physical GPUs (0 = fine)."""
        touched = {s.gpu_uuid for s in dra_shares if s.node == node}
        return max(0, legacy_in_use + len(touched) - len(self._gpus[node]))
